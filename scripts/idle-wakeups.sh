#!/usr/bin/env bash
# Wake-ups of an idle lobbyd holding far-off timers (the timer wheel's cost at rest): how often the
# loop leaves epoll_wait when nothing happens. Starts a lobbyd on loopback (scripts/lib.sh
# ports; instance ports left to the OS), counts its epoll_wait calls with `perf stat` (its
# voluntary context switches where perf cannot trace) over IDLE_SECONDS with no rooms, then
# again once IDLE_ROOMS rooms exist (CREATE_ROOM from 127.0.0.2 upwards, 63 per address), each
# holding a housekeeping and a seat timer IDLE_TIMEOUT seconds out. Prints lobbyd's RSS too.
# A wheel that keeps far-off entries beside near ones wakes for them every revolution; the
# two-level wheel (src/time/wheel.rs) stays at the empty server's count.
# usage: scripts/idle-wakeups.sh   (IDLE_ROOMS=999 IDLE_TIMEOUT=60 IDLE_SECONDS=10;
#        LOBBYD_BIN=path/to/lobbyd for another build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROOMS="${IDLE_ROOMS:-999}"
TIMEOUT="${IDLE_TIMEOUT:-60}"
SECS="${IDLE_SECONDS:-10}"
[ -x "$LOBBYD" ] || build_release
INSTANCE_PORTS=0
trap stop_lobbyd EXIT
start_lobbyd "$(mktemp)" --udp-rate 100000000 --udp-reply-bytes 1000000000 \
  --max-rooms "$ROOMS" --max-rooms-per-ip 63 --idle-timeout "$TIMEOUT" --seat-timeout "$TIMEOUT"

# Prints how often lobbyd woke in SECS seconds.
count_wakeups() {
  local calls v0 v1
  calls="$(perf stat -x, -e syscalls:sys_enter_epoll_wait -p "$LOBBYD_PID" -- sleep "$SECS" 2>&1 \
    >/dev/null | awk -F, '/sys_enter_epoll_wait/ { print $1 }')" || calls=""
  if [[ "$calls" =~ ^[0-9]+$ ]]; then
    echo "$calls epoll_wait calls"
  else
    v0="$(status_kb "$LOBBYD_PID" voluntary_ctxt_switches)"
    sleep "$SECS"
    v1="$(status_kb "$LOBBYD_PID" voluntary_ctxt_switches)"
    echo "$((v1 - v0)) voluntary context switches (perf could not trace)"
  fi
}

log "lobbyd: $LOBBYD"
log "no rooms: $(count_wakeups) in $SECS s, RSS $(status_kb "$LOBBYD_PID" VmRSS) kB"
python3 - "$PORT" "$ROOMS" <<'PY'
import socket, struct, sys, zlib
port, rooms = int(sys.argv[1]), int(sys.argv[2])
for made in range(rooms):   # CREATE_ROOM, 63 from each source address
    if made % 63 == 0:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.%d" % (2 + made // 63), 0)); s.settimeout(2)
    body = struct.pack(">BBHHH", 1, 0x42, made % 63, 0, 0)
    s.sendto(body + struct.pack(">I", zlib.crc32(body)), ("127.0.0.1", port))
    assert s.recv(2048)[1] == 0x43, "CREATE_ROOM refused"
PY
sleep 1
log "$(metric_sum lobbyd_rooms) rooms, timers $TIMEOUT s out: $(count_wakeups) in $SECS s, RSS $(status_kb "$LOBBYD_PID" VmRSS) kB"
