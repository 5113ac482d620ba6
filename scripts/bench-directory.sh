#!/usr/bin/env bash
# Benchmarks of a group of nodes sharing a directory (docs/OPERATING.md "More than one
# process"); figures, not pass/fail:
#   1. LIST_ROOMS per node: three nodes x 64 rooms (a node lists its 64, then 48 of the
#      others') against one node alone with 64 rooms (target: >= 90 % of its lists/s);
#   2. S7, a stalled Redis: LIST latency over a run during which redis-server is stopped
#      (SIGSTOP) for 5 s, against the same run on a node with no directory (targets: max
#      under 5 ms, p99 within 10 %);
#   3. Redis traffic per node at 100 rooms: bytes and commands a second, from redis-server's
#      INFO stats and INFO commandstats over 10 s, with three nodes.
# Usage: scripts/bench-directory.sh [SECONDS per run, default 10]
#        BENCH_PAIRS=5 scripts/bench-directory.sh 5   (part 1 only, as alternating pairs)
# Loopback only, a private redis-server on a unix socket in a temporary folder, every
# process started here stopped by its id at the end; the run stops by itself.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
DURATION="${1:-10}"
CONC="${BENCH_CONCURRENCY:-16}"

command -v redis-server >/dev/null || { log "redis-server not found (apt-get install redis-server)"; exit 1; }
command -v redis-cli >/dev/null || { log "redis-cli not found (apt-get install redis-tools)"; exit 1; }
build_release

dir="$(mktemp -d /tmp/lobbyd-bench-directory.XXXXXX)"
pids=()
trap 'stop_started "$dir"' EXIT
sock="$dir/r.sock"
start_private_redis "$dir"
rcli() { redis-cli -s "$sock" "$@"; }

# node N [flags...]: a lobbyd on UDP port PORT+N (node 0: no directory), metrics on
# METRICS_PORT+N, instance ports of its own; limits out of the load's way.
node_port() { echo $((PORT + $1)); }
node() {
  local n="$1"; shift
  local lo=$((25000 + 200 * n)) group=()
  if [ "$n" -gt 0 ]; then group=(--node-id "$n" --directory "redis+unix://$sock"); fi
  "$LOBBYD" --bind 127.0.0.1 --port "$(node_port "$n")" --instance-ports "$lo-$((lo + 199))" \
    --metrics "127.0.0.1:$((METRICS_PORT + n))" --tcp-port 0 --wz-port 0 --lobby-port 0 \
    --lobby-ws-port 0 --max-rooms 1000 --max-rooms-per-ip 1000 --udp-rate 1000000 \
    --udp-reply-bytes 0 --log warn "${group[@]}" "$@" >"$dir/node-$n.log" 2>&1 &
  pids+=($!)
  sleep 0.5
}
# load N FILE [flags...]: lobby-load udp-list against node N, its summary in FILE.
load() {
  local n="$1" file="$2"; shift 2
  "$LOBBY_LOAD" udp-list --target "127.0.0.1:$(node_port "$n")" --caps off --json -q \
    --timeout 2000 "$@" >"$file"
}
# hold N ROOMS SECONDS: ROOMS rooms kept alive on node N by a slow lister, in the background.
hold() {
  "$LOBBY_LOAD" udp-list --target "127.0.0.1:$(node_port "$1")" --caps off -q --rooms "$2" \
    --concurrency 1 --rate 5 --duration "$3" --timeout 2000 >/dev/null 2>&1 &
  pids+=($!)
}
# passes N: node N's event-loop passes so far that took 1-5 ms and over 5 ms (its /metrics),
# to tell a loop that waited from a client or server the scheduler set aside.
passes() {
  curl -fsS --max-time 5 "http://127.0.0.1:$((METRICS_PORT + $1))/metrics" | awk '
    /^lobbyd_loop_passes_total\{duration="1ms_to_5ms"\}/ { a = $2 }
    /^lobbyd_loop_passes_total\{duration="over_5ms"\}/ { b = $2 }
    END { print a + 0, b + 0 }'
}
# slow_passes BEFORE AFTER: the passes between two `passes` readings, in words.
slow_passes() {
  read -r a0 b0 <<<"$1"; read -r a1 b1 <<<"$2"
  printf 'loop passes of 1-5 ms: %d, over 5 ms: %d' $((a1 - a0)) $((b1 - b0))
}
summary() {
  printf '%.0f lists/s, p50 %.1f us, p99 %.1f us, max %.1f us, failures %s' \
    "$(json_field "$1" per_second)" "$(json_latency "$1" p50)" "$(json_latency "$1" p99)" \
    "$(json_latency "$1" max)" "$(json_failures "$1")"
}

# BENCH_PAIRS=N: only part 1, as N alternating pairs of DURATION-second runs (node 0 alone,
# then node 1 of three), every process up for both halves of every pair and every room held
# by a slow lister (the runs create none), so both halves share one background; the median
# ratio is the figure (the C baselines' side-by-side method).
if [ -n "${BENCH_PAIRS:-}" ]; then
  node 0; node 1; node 2; node 3
  held=$((BENCH_PAIRS * 2 * (DURATION + 1) + 10))
  hold 0 64 "$held"; hold 1 64 "$held"; hold 2 64 "$held"; hold 3 64 "$held"
  sleep 3 # the rooms made, published and read
  # One LIST_ROOMS of each by hand: the rooms each half lists (the payload's count).
  for n in 0 1; do
    python3 -c 'import socket, sys; s = socket.socket(2, 2); s.settimeout(2)
s.sendto(bytes.fromhex("0140000000000000ed83aa8e"), ("127.0.0.1", int(sys.argv[1])))
d = s.recv(2048); print("node %s lists %d rooms (%d bytes)" % (sys.argv[2], int.from_bytes(d[8:10], "big"), len(d)))' \
      "$(node_port "$n")" "$n"
  done
  ratios=()
  for pair in $(seq "$BENCH_PAIRS"); do
    load 0 "$dir/pair-alone.json" --rooms 0 --concurrency "$CONC" --duration "$DURATION"
    load 1 "$dir/pair-group.json" --rooms 0 --concurrency "$CONC" --duration "$DURATION"
    a="$(json_field "$dir/pair-alone.json" per_second)"; g="$(json_field "$dir/pair-group.json" per_second)"
    r="$(awk -v a="$a" -v g="$g" 'BEGIN { printf "%.3f", g / a }')"
    ratios+=("$r")
    printf 'pair %d: alone %.0f lists/s, node 1 of three %.0f lists/s, ratio %s\n' "$pair" "$a" "$g" "$r"
  done
  printf 'median ratio %s (target >= 0.90)\n' "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
  exit 0
fi

log "== 1. LIST_ROOMS, one node alone, 64 rooms (${DURATION}s, concurrency $CONC)"
node 0
load 0 "$dir/alone.json" --rooms 64 --concurrency "$CONC" --duration "$DURATION"
ALONE="$(summary "$dir/alone.json")"
log "   $ALONE"
# The group's node lists 112 rooms (its 64, then 48 of the others'): a datagram of 1,472
# bytes against 852. One node alone with 112 rooms sends the same datagram, so the ratio to
# it is the remote cache's cost alone.
log "== 1. LIST_ROOMS, one node alone, 112 rooms (the group's datagram)"
load 0 "$dir/alone112.json" --rooms 112 --concurrency "$CONC" --duration "$DURATION"
ALONE112="$(summary "$dir/alone112.json")"
log "   $ALONE112"

log "== 1. LIST_ROOMS on node 1 of three, 64 rooms each (${DURATION}s, concurrency $CONC)"
node 1; node 2; node 3
hold 2 64 $((DURATION + 5)); hold 3 64 $((DURATION + 5))
sleep 3 # the rooms made, published and read
load 1 "$dir/group.json" --rooms 64 --concurrency "$CONC" --duration "$DURATION"
GROUP="$(summary "$dir/group.json")"
RATIO="$(awk -v a="$(json_field "$dir/group.json" per_second)" \
  -v b="$(json_field "$dir/alone.json" per_second)" 'BEGIN { printf "%.2f", a / b }')"
RATIO112="$(awk -v a="$(json_field "$dir/group.json" per_second)" \
  -v b="$(json_field "$dir/alone112.json" per_second)" 'BEGIN { printf "%.2f", a / b }')"
log "   $GROUP (ratio to alone: $RATIO; to alone with 112 rooms: $RATIO112)"

log "== 2. S7: node 1's LISTs while redis-server is stopped for 5 s (${DURATION}s run)"
p0="$(passes 1)"
load 1 "$dir/stall.json" --rooms 64 --concurrency "$CONC" --duration "$DURATION" &
loader=$!
sleep 2
kill -STOP "$REDIS_PID"
sleep 5
kill -CONT "$REDIS_PID"
wait "$loader" || true
STALL="$(summary "$dir/stall.json"); $(slow_passes "$p0" "$(passes 1)")"
log "   $STALL"
log "   the same run on node 0 (no directory), for the p99:"
p0="$(passes 0)"
load 0 "$dir/nodir.json" --rooms 64 --concurrency "$CONC" --duration "$DURATION"
NODIR="$(summary "$dir/nodir.json"); $(slow_passes "$p0" "$(passes 0)")"
log "   $NODIR"

log "== 3. Redis traffic, three nodes, 100 rooms on each, over 10 s"
hold 1 100 40; hold 2 100 40; hold 3 100 40
sleep 5
stat() { rcli INFO stats | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2 }'; }
calls() { rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ { s += $3 } END { print s }'; }
in0="$(stat total_net_input_bytes)"; out0="$(stat total_net_output_bytes)"; c0="$(calls)"
sleep 10
in1="$(stat total_net_input_bytes)"; out1="$(stat total_net_output_bytes)"; c1="$(calls)"
# Our own INFO calls (4 before, 4 after) are in the command count; take them out.
TRAFFIC="$(awk -v i=$((in1 - in0)) -v o=$((out1 - out0)) -v c=$((c1 - c0 - 4)) 'BEGIN {
  printf "per node: %.0f B/s to Redis, %.0f B/s from Redis, %.1f commands/s", i / 30, o / 30, c / 30 }')"
log "   $TRAFFIC"
rcli INFO commandstats | tr -d '\r' | grep '^cmdstat_' >&2 || true

cat <<REPORT
lobbyd directory benchmarks ($(date -u +%FT%TZ), $(nproc) CPUs, ${DURATION}s runs, udp-list concurrency $CONC)
1. LIST_ROOMS, one node alone (64 rooms):          $ALONE
   LIST_ROOMS, node 1 of three (64 rooms each):    $GROUP
   LIST_ROOMS, one node alone (112 rooms):         $ALONE112
   ratio group/alone: $RATIO (target >= 0.90); group/alone with the same 112 rooms listed: $RATIO112
2. S7, redis-server stopped 5 s during the run:    $STALL
   the same run with no directory:                 $NODIR
   (targets: max < 5000 us; p99 within 10 %)
3. Redis traffic at 100 rooms a node, 3 nodes:     $TRAFFIC
REPORT
