#!/usr/bin/env bash
# The general lobby over WebSocket against TCP, in one session (docs/protocols/general-lobby.md,
# "WebSocket transport"): for each transport, lobby-join closed loop (the peak sign-in rate),
# then open loop at half of it (the sign-in p99 target: <= 1 ms), then lobby-chat closed loop
# (the fan-out rate: WebSocket >= 80 % of TCP); last, RSS per idle WebSocket member (target
# <= 2.5 KiB): lobby-idle --ws holding BENCH_WS_IDLE members against a fresh lobbyd, RSS
# before, and after the sign-in storm's heap was given back (6 s idle).
#
#   scripts/bench-ws.sh            BENCH_SECS (5), BENCH_WS_MEMBERS (500 chatting),
#                                  BENCH_WS_IDLE (5000 idle) override the sizes
# Everything targets 127.0.0.1; every run stops by itself.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
SECS="${BENCH_SECS:-5}"
MEMBERS="${BENCH_WS_MEMBERS:-500}"
IDLE="${BENCH_WS_IDLE:-5000}"
OUT="$(mktemp -d)"
build_release
raise_nofile 200000
trap stop_lobbyd EXIT
GENERAL=(--max-conns 190000 --max-conns-per-ip 190000 --conn-rate 4000000000
  --lobby-max-conns 190000 --lobby-max-conns-per-ip 190000 --lobby-conn-rate 1000000000
  --lobby-max-members 1000000 --lobby-resume-grace 0 --lobby-chat-rate 1000
  --lobby-chat-budget 0 --idle-timeout 600)

# load TRANSPORT NAME MODE [flags...]: one run, its JSON in $OUT/NAME.json; prints rate and p99.
load() {
  local transport="$1" name="$2" mode="$3"; shift 3
  local target=(--target "127.0.0.1:$LOBBY_PORT")
  if [ "$transport" = ws ]; then target=(--target "127.0.0.1:$LOBBY_WS_PORT" --ws); fi
  "$LOBBY_LOAD" "$mode" "${target[@]}" --caps off --duration "$SECS" --json -q \
    --timeout 2000 "$@" >"$OUT/$name.json" || true
  printf '%s %s/s p50 %s us p99 %s us failures %s\n' "$name" \
    "$(json_field "$OUT/$name.json" per_second)" "$(json_latency "$OUT/$name.json" p50)" \
    "$(json_latency "$OUT/$name.json" p99)" "$(json_failures "$OUT/$name.json")"
}

start_lobbyd "$OUT/lobbyd.log" "${GENERAL[@]}"
for transport in tcp ws; do
  load "$transport" "lobby-join-$transport" lobby-join --concurrency 64
  half="$(awk -v r="$(json_field "$OUT/lobby-join-$transport.json" per_second)" \
    'BEGIN { printf "%d", r / 2 }')"
  load "$transport" "lobby-join-half-$transport" lobby-join --concurrency 512 --rate "$half"
  wait_general_members 0 30 -le || true
  load "$transport" "lobby-chat-$transport" lobby-chat --members "$MEMBERS" --concurrency 8
  wait_general_members 0 30 -le || true
done
awk -v t="$(json_field "$OUT/lobby-chat-tcp.json" per_second)" \
  -v w="$(json_field "$OUT/lobby-chat-ws.json" per_second)" \
  'BEGIN { printf "chat fan-out: WebSocket %.0f %% of TCP\n", 100 * w / t }'
stop_lobbyd

start_lobbyd "$OUT/lobbyd-idle.log" "${GENERAL[@]}"
sleep 0.5
before="$(status_kb "$LOBBYD_PID" VmRSS)"
"$LOBBY_LOAD" lobby-idle --target "127.0.0.1:$LOBBY_WS_PORT" --ws --caps off \
  --concurrency "$IDLE" --duration 3600 --timeout 10000 -q >"$OUT/idle.txt" 2>&1 &
idle_pid=$!
if wait_general_members "$IDLE" 300; then
  sleep 7
  after="$(status_kb "$LOBBYD_PID" VmRSS)"
  held="$(general_members)"
  awk -v a="$before" -v b="$after" -v n="$held" 'BEGIN {
    printf "RSS per idle WebSocket member: %.0f bytes (%d members, %d kB before, %d kB after)\n",
      (b - a) * 1024 / n, n, a, b }'
else
  echo "not all $IDLE idle members signed in"
fi
kill "$idle_pid" 2>/dev/null || true
wait "$idle_pid" 2>/dev/null || true
echo "results in $OUT"
