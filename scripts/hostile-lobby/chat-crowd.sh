#!/usr/bin/env bash
# A loud crowd in the general lobby: 1,000 members, 50 of them chatting lobby-wide at their
# per-member limit (5 lines of 512 bytes a second each), and a well-behaved member PINGing
# every 20 ms beside them. Target: its PING p99 <= 100 ms and no PING lost (none unanswered
# within 1 s), because the lobby-wide chat budget (--lobby-chat-budget, slow mode) bounds the
# fan-out bytes per second whatever the number of talkers. Reports the fan-out bytes/s
# (lobbyd_general_bytes_out_total over the talk), the talkers' lines sent and refused, slow
# mode's notices, lobbyd's peak RSS, and exits 1 when a target is missed.
#
# Usage: scripts/hostile-lobby/chat-crowd.sh [extra lobbyd flags...]
# Env: MEMBERS (1000), TALKERS (50), TALKER_SOURCES (127.0.1.1-127.0.1.50: one address each,
# so the per-address rate does not bind and the lobby's budget must; 127.0.1.1 puts all on
# one address), DURATION (20 s), P99_MS (100). Loopback only, its own ports, stops by itself.
set -euo pipefail
export LOBBYD_PORT="${LOBBYD_PORT:-25242}" LOBBYD_METRICS_PORT="${LOBBYD_METRICS_PORT:-25243}"
export LOBBYD_WZ_PORT="${LOBBYD_WZ_PORT:-25290}" LOBBYD_LOBBY_PORT="${LOBBYD_LOBBY_PORT:-25244}"
export LOBBYD_INSTANCE_PORTS="${LOBBYD_INSTANCE_PORTS:-25300-25399}"
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
MEMBERS="${MEMBERS:-1000}"
TALKERS="${TALKERS:-50}"
TALKER_SOURCES="${TALKER_SOURCES:-127.0.1.1-127.0.1.50}"
DURATION="${DURATION:-20}"
P99_MS="${P99_MS:-100}"
IDLE=$((MEMBERS - TALKERS - 1))

[ -x "$LOBBYD" ] && [ -x "$LOBBY_LOAD" ] || build_release
raise_nofile 20000
OUT="$(mktemp -d /tmp/chat-crowd.XXXXXX)"
HOLD_PID=""
cleanup() {
  if [ -n "$HOLD_PID" ]; then kill "$HOLD_PID" 2>/dev/null || true; wait "$HOLD_PID" 2>/dev/null || true; fi
  stop_lobbyd
}
trap cleanup EXIT

# lobbyd's own defaults for the general lobby (chat rate, per-address rate, budget), with the
# idle members' 4 per address well within its per-address connection limits.
start_lobbyd "$OUT/lobbyd.log" --lobby-resume-grace 0 "$@"
log "== $IDLE idle members (lobby-idle, reading everything), 127.0.0.2-127.0.0.254"
"$LOBBY_LOAD" lobby-idle --target "127.0.0.1:$LOBBY_PORT" --concurrency "$IDLE" \
  --duration $((DURATION * 4 + 120)) --timeout 20000 --sources 127.0.0.2-127.0.0.254 \
  -q >"$OUT/idle.log" 2>&1 &
HOLD_PID=$!
wait_general_members "$IDLE" 120 || { log "the idle members did not all sign in"; exit 1; }

bytes_before="$(metric_sum lobbyd_general_bytes_out_total)"
log "== $TALKERS talkers from $TALKER_SOURCES at 5 lines/s of 512 bytes, a PINGer, ${DURATION}s"
python3 "$HERE/crowd_client.py" talkers --port "$LOBBY_PORT" --count "$TALKERS" \
  --sources "$TALKER_SOURCES" --rate 5 --size 512 --duration "$DURATION" --prefix talker \
  >"$OUT/talkers.json" &
TALK_PID=$!
python3 "$HERE/crowd_client.py" pinger --port "$LOBBY_PORT" --source 127.0.2.1 \
  --every 0.02 --duration "$DURATION" --prefix witness >"$OUT/pinger.json"
wait "$TALK_PID"
bytes_after="$(metric_sum lobbyd_general_bytes_out_total)"
hwm="$(status_kb "$LOBBYD_PID" VmHWM)"

field() { sed -n "s/.*\"$2\": \([-0-9.a-z]*\).*/\1/p" "$1"; }
p50="$(field "$OUT/pinger.json" p50_ms)"; p99="$(field "$OUT/pinger.json" p99_ms)"
lost="$(field "$OUT/pinger.json" lost)"; pings="$(field "$OUT/pinger.json" pings)"
fanout=$(( (bytes_after - bytes_before) / DURATION ))
echo "chat-crowd: $MEMBERS members, $TALKERS talkers ($TALKER_SOURCES), ${DURATION}s"
echo "  talkers:   $(cat "$OUT/talkers.json")"
echo "  fan-out:   $fanout bytes/s ($(( (bytes_after - bytes_before) / 1048576 )) MiB in ${DURATION}s)"
echo "  PING:      p50 ${p50} ms, p99 ${p99} ms, lost $lost of $pings"
echo "  lobbyd:    VmHWM $hwm kB"
echo "  counters:  $(http_get /metrics | grep -E 'general_(chat_refused|slow_modes)_total' | tr '\n' ' ')"
fail=0
if [ "$lost" != "0" ]; then echo "FAIL: $lost PINGs lost (target none)"; fail=1; fi
if [ "$p99" = "null" ] || awk -v p="$p99" -v t="$P99_MS" 'BEGIN { exit !(p > t) }'; then
  echo "FAIL: PING p99 ${p99} ms > ${P99_MS} ms"; fail=1
fi
[ "$fail" = 0 ] && echo "PASS: p99 <= ${P99_MS} ms, none lost"
exit "$fail"
