#!/usr/bin/env bash
# Side-by-side throughput of lobbyd's game-instance relay against the simplest C server doing
# the same socket work, in the manner of the C baseline servers' side-by-side script for LIST_ROOMS
# and TCP joins (docs/PERFORMANCE.md):
# servers on core 0, clients on core 1, alternating pairs, each pair printed, medians at the end.
#
#   raw:    scripts/baselines/relay_rr.c's blocking server: one recvfrom per datagram, then FANOUT
#           (= members - 1) sendto of the same bytes to the sender's group mates (its group: the
#           MEMBERS consecutive ports around the sender's, bound here from RELAY_RAW_PORTS,
#           44000 up, skipping ports in use); driven by relay_rr's client: ROOMS groups of
#           MEMBERS sockets, one SIZE-byte datagram in flight per group, the next member sending
#           once FANOUT copies are back.
#   load:   lobbyd, ROOMS rooms of MEMBERS members driven by `lobby-load relay --size SIZE
#           --members MEMBERS --concurrency ROOMS` (relayed copies received per second): the
#           target is load / raw >= 1.0.
#   same:   lobbyd again, the same rooms set up here (Python: CREATE_ROOM, JOIN_ROOM, HELLO) and
#           driven by relay_rr's client, the very client of the raw run: same / raw compares
#           the servers alone.
#   rooms:  relay_rr's server again with lobbyd's socket layout (`relay_rr rooms`): one socket
#           per room on its own port, as the instance protocol requires, waited on with a
#           blocking level-triggered epoll_wait, one recvfrom and FANOUT sendto per ready
#           socket; driven by the same client. same / rooms compares the servers doing the same
#           socket work (raw serves every room from one socket, which lobbyd cannot).
#   connected: with RELAY_CONNECTED=1, relay_rr's server again with a socket per member
#           (`relay_rr connected`: all on PORT with SO_REUSEPORT, each connected to its member,
#           one recvfrom and FANOUT send per datagram), driven by the same client:
#           connected / raw is what a socket per member saves a relay (no route lookup per
#           send) without batching (docs/PERFORMANCE.md: lobbyd does not gain it).
#
# With RELAY_PERF=1 each server and each client also runs under `perf stat -e
# task-clock,raw_syscalls:sys_enter` and each line gives their CPU time and system calls per
# relayed copy, "[server ... ; client ...]" (the server's from its start to its end, setup
# included: a few hundred datagrams against 100,000s of copies; `lobby-load`'s includes its
# setup of the rooms, relay_rr's client only its run), figures the machine's other load moves
# far less than the rates.
#
# usage: scripts/side-by-side-relay.sh [PAIRS] [SECONDS]     (from the project root, after `make build`)
# env: RELAY_ROOMS (16), RELAY_MEMBERS (4), RELAY_SIZE (64 bytes per datagram), RELAY_PERF,
#      RELAY_CONNECTED, LOBBYD and
#      LOBBY_LOAD (default target/release/...; e.g. an older build to compare), RELAY_PORT
#      (43100: the C server, `rooms` on +1..+ROOMS; lobbyd's lobby on +142, its instances on
#      +200..+299).
set -u
PAIRS=${1:-5}; SECS=${2:-2}; D=$(cd "$(dirname "$0")" && pwd)
B=${LOBBYD:-target/release/lobbyd}; L=${LOBBY_LOAD:-target/release/lobby-load}
ROOMS=${RELAY_ROOMS:-16}; MEMBERS=${RELAY_MEMBERS:-4}; SIZE=${RELAY_SIZE:-64}
P=${RELAY_PORT:-43100}; LP=$((P + 142)); T=$(mktemp -d)
[ -x "$B" ] && [ -x "$L" ] || { echo "build first (make build)"; exit 1; }
gcc -O2 -o "$T/relay_rr" "$D/baselines/relay_rr.c" || exit 1
ulimit -n 20000 2>/dev/null
e=; l=
trap 'kill $e $l $pf 2>/dev/null; rm -rf "$T"' EXIT   # no server outlives the script
ratio() { python3 -c "import sys; print('%.3f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Binds ROOMS x MEMBERS sockets on 127.0.0.1 and makes them members of lobbyd rooms when MODE is
# lobbyd (each member's JOIN_ROOM reservation is claimed by its HELLO before the next joins, so
# one address serves a whole room), or aims them at the C server when MODE is raw (consecutive
# ports from RELAY_RAW_PORTS; every room at PORT, or at PORT + 1 + its index when MODE is
# rooms), then runs relay_rr's client on core 1 over them and prints its copies per second and
# copies. Every run's sockets, lobby-load's included, are on 127.0.0.1: the same destinations
# for every server.
drive() {
  python3 - "$1" "$T/relay_rr" "$SECS" "$ROOMS" "$MEMBERS" "$SIZE" "$P" "$LP" "${RELAY_RAW_PORTS:-44000}" \
    "$(client_perf)" <<'PY'
import socket, struct, subprocess, sys, zlib
mode, client, secs, rooms, members, size, raw_port, lobby_port, raw_ports, perf = sys.argv[1:11]
rooms, members, size, raw_ports = int(rooms), int(members), int(size), int(raw_ports)
raw_ports -= raw_ports % members   # groups start at a multiple of MEMBERS (relay_rr's rule)
def frame(code, seq, payload):
    body = struct.pack(">BBHHH", 1, code, seq, len(payload), len(payload)) + payload
    return body + struct.pack(">I", zlib.crc32(body))
def until(s, code):
    while True:
        d = s.recv(2048)
        if len(d) > 1 and d[1] == code:
            return d
lobby = ("127.0.0.1", int(lobby_port))
def raw_group():
    # MEMBERS consecutive free ports starting at a multiple of MEMBERS (the C server finds a
    # member's group mates by port); ports another process holds are skipped.
    global raw_ports
    while raw_ports + members <= 65536:
        group = []
        try:
            for k in range(members):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); group.append(s)
                s.bind(("127.0.0.1", raw_ports + k))
            return group
        except OSError:
            for s in group:
                s.close()
        finally:
            raw_ports += members
    sys.exit("no free group of %d ports" % members)
plan, sockets = [], []
for r in range(rooms):
    if mode == "lobbyd":
        group = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for k in range(members)]
        for s in group:
            s.bind(("127.0.0.1", 0))
    else:
        group = raw_group()
    for s in group:
        s.settimeout(2)
    dest = ("127.0.0.1", int(raw_port) + (1 + r if mode == "rooms" else 0))
    if mode == "lobbyd":
        group[0].sendto(frame(0x42, r, b""), lobby)
        room_id, port = struct.unpack(">IH", until(group[0], 0x43)[8:14])
        dest = ("127.0.0.1", port)
        for k, s in enumerate(group):
            if k:
                s.sendto(frame(0x44, r, struct.pack(">I", room_id)), lobby)
                until(s, 0x45)
            s.sendto(frame(0x01, k, b""), dest)
            until(s, 0x02)   # WELCOME (PEER_JOINED may come first)
    data = frame(0x04, r, b"\xff" + bytes(max(size - 13, 0)))   # DATA to every other member
    for s in group:
        plan.append("%d %d %s %d %s" % (r, s.fileno(), dest[0], dest[1], data.hex()))
    sockets += group
for s in sockets:   # leftover PEER_JOINED
    s.setblocking(False)
    try:
        while True:
            s.recv(2048)
    except BlockingIOError:
        pass
out = subprocess.run(perf.split() + ["taskset", "-c", "1", client, "client", secs, str(members - 1)],
                     input="\n".join(plan) + "\n", pass_fds=[s.fileno() for s in sockets],
                     capture_output=True, text=True)
import json
result = json.loads(out.stdout)
print(result["cps"], result["copies"])
PY
}

start_lobbyd() {
  taskset -c 0 "$B" --port "$LP" --tcp-port 0 --wz-port 0 --lobby-port 0 --bind 127.0.0.1 \
    --instance-ports "$((P + 200))-$((P + 299))" --udp-rate 100000000 --udp-reply-bytes 0 \
    --max-rooms-per-ip 100 >"$T/lobbyd.log" 2>&1 & l=$!; sleep 0.4
  kill -0 $l 2>/dev/null || { echo "lobbyd did not start:"; tail -3 "$T/lobbyd.log"; exit 1; }
}

# perf stat on server PID $1 until stop_perf (RELAY_PERF=1 only).
pf=
start_perf() {
  [ "${RELAY_PERF:-0}" = 1 ] || return 0
  rm -f "$T/client-perf"
  perf stat -x, -e task-clock,raw_syscalls:sys_enter -p "$1" -o "$T/perf" 2>/dev/null & pf=$!
  sleep 0.1
}
# The command prefix that runs a client under perf stat (nothing without RELAY_PERF=1).
client_perf() {
  [ "${RELAY_PERF:-0}" = 1 ] && echo "perf stat -x, -e task-clock,raw_syscalls:sys_enter -o $T/client-perf"
}
# "CPU us, syscalls" per copy from perf stat's file $1 for $2 copies.
per_copy() {
  python3 - "$1" "$2" <<'PY'
import sys
values = {}
try:
    for line in open(sys.argv[1]):
        f = line.strip().split(",")
        if len(f) > 2 and f[0][:1].isdigit():
            values[f[2]] = float(f[0])
except OSError:
    pass
copies = float(sys.argv[2] or 0)
if copies and "task-clock" in values and "raw_syscalls:sys_enter" in values:
    print("%.2f us, %.2f syscalls" % (values["task-clock"] * 1000 / copies,
                                      values["raw_syscalls:sys_enter"] / copies), end="")
PY
}
# " [server CPU us, syscalls; client CPU us, syscalls] per copy" for $1 copies (nothing
# without RELAY_PERF=1).
stop_perf() {
  [ -n "$pf" ] || return 0
  kill -INT $pf; wait $pf 2>/dev/null; pf=
  echo -n " [server $(per_copy "$T/perf" "$1"); client $(per_copy "$T/client-perf" "$1") per copy]"
}
# Runs the C server in MODE $1 (server, rooms, connected) and its client; prints "RATE COPIES[ perf]".
c_run() {
  if [ "$1" = rooms ]; then
    taskset -c 0 "$T/relay_rr" rooms $((P + 1)) $((MEMBERS - 1)) "$ROOMS" & e=$!
  elif [ "$1" = connected ]; then
    taskset -c 0 "$T/relay_rr" connected "$P" $((MEMBERS - 1)) & e=$!
  else
    taskset -c 0 "$T/relay_rr" server "$P" $((MEMBERS - 1)) & e=$!
  fi
  sleep 0.2; start_perf $e
  local out; out=$(drive "$([ "$1" = rooms ] && echo rooms || echo raw)")
  echo "${out% *} $(stop_perf "${out#* }")"
  kill $e; wait $e 2>/dev/null
}

loads=(); sames=(); roomss=(); conns=()
for r in $(seq "$PAIRS"); do
  raw=$(c_run server)
  start_lobbyd; start_perf $l
  load=$($(client_perf) taskset -c 1 "$L" relay --target "127.0.0.1:$LP" --size "$SIZE" --members "$MEMBERS" \
    --concurrency "$ROOMS" --sources 127.0.0.1 --caps off --duration "$SECS" --json -q 2>/dev/null |
    python3 -c 'import json,sys; j=[json.loads(l) for l in sys.stdin if l.startswith("{")][-1]; print(j["per_second"], j["completed"])')
  load="${load% *} $(stop_perf "${load#* }")"
  kill $l; wait $l 2>/dev/null
  start_lobbyd; start_perf $l
  same=$(drive lobbyd)
  same="${same% *} $(stop_perf "${same#* }")"
  kill $l; wait $l 2>/dev/null
  rooms=$(c_run rooms)
  [ -n "${raw%% *}" ] && [ -n "${load%% *}" ] && [ -n "${same%% *}" ] && [ -n "${rooms%% *}" ] ||
    { echo "pair $r: a run failed"; continue; }
  loads+=("$(ratio "${load%% *}" "${raw%% *}")"); sames+=("$(ratio "${same%% *}" "${raw%% *}")")
  roomss+=("$(ratio "${same%% *}" "${rooms%% *}")")
  echo "pair $r: raw ${raw%% *}/s${raw#* } lobby-load relay ${load%% *}/s${load#* } (${loads[-1]})" \
    "relay_rr client through lobbyd ${same%% *}/s${same#* } (${sames[-1]})" \
    "rooms ${rooms%% *}/s${rooms#* } (same / rooms ${roomss[-1]})"
  if [ "${RELAY_CONNECTED:-0}" = 1 ]; then
    conn=$(c_run connected)
    [ -n "${conn%% *}" ] && conns+=("$(ratio "${conn%% *}" "${raw%% *}")") &&
      echo "pair $r: connected ${conn%% *}/s${conn#* } (connected / raw ${conns[-1]})"
  fi
done
echo "median ratio lobby-load relay / raw $(median "${loads[@]}")"
echo "median ratio same client / raw $(median "${sames[@]}")"
echo "median ratio same client / rooms $(median "${roomss[@]}")"
[ ${#conns[@]} -gt 0 ] && echo "median ratio connected / raw $(median "${conns[@]}")"
exit 0
