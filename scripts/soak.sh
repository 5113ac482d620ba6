#!/usr/bin/env bash
# Soak test: mixed load on one lobbyd for SOAK_SECONDS (default 60), with clients vanishing
# mid-countdown and mid-game, then checks that lobbyd is back where it started:
#   - no room left behind (lobbyd_rooms == 0, GET /rooms == []),
#   - RSS back near its start (at most +50 % or +4 MiB, whichever is larger),
#   - no internal-error counter moved (send/recv errors, instance bind failures, and any
#     counter named *internal*).
# Each round runs, in parallel: relay rooms that START and vanish during the countdown,
# relay rooms that START and vanish while playing, whole UDP room lives, LIST_ROOMS, and,
# when this build serves them, TCP parties that vanish mid-countdown (tcp-cycle runs 1.5 s
# against a 2 s countdown, so every party it starts is abandoned counting down) and Warzone
# hosts (lobbyd runs with --wz-check-reachable off: lobby-load does not listen on game ports).
# Loopback only; every client run is bounded; the script stops by itself. Exit 0 = pass.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

SECONDS_TOTAL="${SOAK_SECONDS:-60}"
OUT="$REPO_ROOT/bench-out/soak"
mkdir -p "$OUT"

build_release
raise_nofile 65536
trap stop_lobbyd EXIT

# Short timers so whatever a vanished client leaves behind is cleaned up within seconds.
# --reap-grace 0: udp-create-join finishes thousands of rooms a second, and a grace period
# would keep that many Finished rooms (and their ports) alive at once.
start_lobbyd "$OUT/lobbyd.log" \
  --max-rooms 490 --max-rooms-per-ip 490 --udp-rate 2000000000 --udp-reply-bytes 0 \
  --countdown 2 --idle-timeout 3 --seat-timeout 2 --reap-grace 0 \
  --max-conns 20000 --max-conns-per-ip 20000 --conn-rate 4000000000 \
  --wz-check-reachable off --wz-max-games-per-ip 65535
sleep 1
RSS_START="$(status_kb "$LOBBYD_PID" VmRSS)"
log "lobbyd pid $LOBBYD_PID, RSS at start ${RSS_START} kB; soaking for ${SECONDS_TOTAL} s"

tcp=no
if tcp_port_answers "$PORT"; then tcp=yes; fi
wz=no
if lobbyd_has_flag --wz-port && tcp_port_answers "$WZ_PORT"; then wz=yes; fi

# client NAME MODE [flags...]: one bounded lobby-load run in the background; a run that could
# not start (usage error or refused setup: exit 2 or 3) fails the soak.
PIDS=()
client() {
  local name="$1"; shift
  ( code=0
    run_load "$@" -q >"$OUT/$name.txt" 2>&1 || code=$?
    if [ "$code" -ge 2 ]; then echo "$name: exit $code" >>"$OUT/failed"; fi ) &
  PIDS+=($!)
}

rm -f "$OUT/failed"
end=$(( $(date +%s) + SECONDS_TOTAL ))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
  round=$(( round + 1 ))
  PIDS=()
  client countdown-vanish relay --start --duration 1 --concurrency 8 --members 3 --sources 127.0.1.1-127.0.1.200
  client session-vanish relay --start --duration 4 --concurrency 8 --members 4 --sources 127.0.2.1-127.0.2.200
  client create-join udp-create-join --duration 4 --concurrency 8 --sources 127.0.3.1-127.0.3.200
  client list udp-list --duration 4 --rooms 16 --concurrency 4 --sources 127.0.4.1-127.0.4.200
  if [ "$tcp" = yes ]; then
    client tcp-cycle tcp-cycle --duration 1.5 --concurrency 64 --members 4 --sources 127.0.5.1-127.0.5.200
    client tcp-idle tcp-idle --duration 3 --concurrency 500 --sources 127.0.6.1-127.0.6.200
  fi
  if [ "$wz" = yes ]; then
    # More addresses than the master server's 4096-entry registration-rate table.
    client wz wz-host --duration 3 --concurrency 4 --hold 200 --sources 127.7.0.1-127.7.31.255
  fi
  wait "${PIDS[@]}"
  log "round $round: rooms now $(metric_sum lobbyd_rooms), RSS $(status_kb "$LOBBYD_PID" VmRSS) kB"
done
[ "$tcp" = yes ] || log "TCP lobby not in this build: TCP clients skipped"
[ "$wz" = yes ] || log "Warzone listener not in this build: Warzone clients skipped"

failed=0
if [ -s "$OUT/failed" ]; then log "FAIL: some clients could not run:"; cat "$OUT/failed" >&2; failed=1; fi
# idle-timeout 3 s (seat-timeout 2 s), with room to spare.
if ! wait_rooms_gone 15; then
  log "FAIL: rooms left behind: $(http_get /rooms)"; failed=1
fi
rooms_json="$(http_get /rooms | tr -d '[:space:]')"
if [ "$rooms_json" != "[]" ]; then log "FAIL: /rooms is $rooms_json"; failed=1; fi
RSS_END="$(status_kb "$LOBBYD_PID" VmRSS)"
allowed=$(( RSS_START + (RSS_START / 2 > 4096 ? RSS_START / 2 : 4096) ))
if [ "$RSS_END" -gt "$allowed" ]; then
  log "FAIL: RSS ${RSS_END} kB at the end, ${RSS_START} kB at the start (allowed ${allowed})"; failed=1
fi
internal="$(http_get /metrics | awk '
  /^#/ { next }
  $1 ~ /send_errors_total|recv_errors_total|bind_failures_total|internal/ && $2 != 0 { print }')"
if [ -n "$internal" ]; then log "FAIL: internal-error counters moved:"; log "$internal"; failed=1; fi

log "soak: $round rounds, RSS ${RSS_START} -> ${RSS_END} kB (peak $(status_kb "$LOBBYD_PID" VmHWM) kB), rooms left $(metric_sum lobbyd_rooms)"
if [ "$failed" -ne 0 ]; then log "soak FAILED"; exit 1; fi
log "soak passed"
