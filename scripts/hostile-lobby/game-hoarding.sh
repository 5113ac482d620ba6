#!/usr/bin/env bash
# Game hoarding in the general lobby: 500 members from 10 addresses (50 each) create every game
# they may, each with 65,000 bytes of STORE_DATA; then a member from an eleventh address creates
# a game. Targets: the witness's game is created, the ten addresses hold at most
# 10 x --lobby-max-games-per-ip games (16 each by default), and lobbyd's peak RSS stays
# under RSS_MB (48 MB; each address's game data is bounded by --lobby-game-data-per-ip).
# Exits 1 when a target is missed.
#
# Usage: scripts/hostile-lobby/game-hoarding.sh [extra lobbyd flags...]
# Env: HOARDERS (500), RSS_MB (48), MAX_GAMES_PER_IP (16). Loopback only, its own ports, stops by itself.
set -euo pipefail
export LOBBYD_PORT="${LOBBYD_PORT:-25442}" LOBBYD_METRICS_PORT="${LOBBYD_METRICS_PORT:-25443}"
export LOBBYD_WZ_PORT="${LOBBYD_WZ_PORT:-25490}" LOBBYD_LOBBY_PORT="${LOBBYD_LOBBY_PORT:-25444}"
export LOBBYD_INSTANCE_PORTS="${LOBBYD_INSTANCE_PORTS:-25500-25599}"
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
HOARDERS="${HOARDERS:-500}"
RSS_MB="${RSS_MB:-48}"
# lobbyd's --lobby-max-games-per-ip (its default unless the extra flags change it).
MAX_GAMES_PER_IP="${MAX_GAMES_PER_IP:-16}"

[ -x "$LOBBYD" ] || build_release
raise_nofile 20000
OUT="$(mktemp -d /tmp/game-hoarding.XXXXXX)"
HOARD_PID=""
cleanup() {
  if [ -n "$HOARD_PID" ]; then kill "$HOARD_PID" 2>/dev/null || true; wait "$HOARD_PID" 2>/dev/null || true; fi
  stop_lobbyd
}
trap cleanup EXIT

# A frame large enough for 64 KiB of data in one STORE_DATA; 50 connections per address sign
# in within a minute.
start_lobbyd "$OUT/lobbyd.log" --lobby-max-frame 131072 --lobby-conn-rate 600 "$@"
idle_kb="$(status_kb "$LOBBYD_PID" VmRSS)"
log "== $HOARDERS hoarders from 127.0.3.1-127.0.3.10 creating games with 65,000 bytes each"
python3 "$HERE/crowd_client.py" hoarders --port "$LOBBY_PORT" --count "$HOARDERS" \
  --sources 127.0.3.1-127.0.3.10 --games-each 4 --data 65000 --hold 30 --prefix hoard \
  >"$OUT/hoarders.json" &
HOARD_PID=$!
# The hoarders print their tally once every member tried, then hold their games.
for _ in $(seq 1 600); do
  [ -s "$OUT/hoarders.json" ] && break
  kill -0 "$HOARD_PID" 2>/dev/null || break
  sleep 0.5
done
[ -s "$OUT/hoarders.json" ] || { log "the hoarders did not finish"; exit 1; }
games="$(metric_sum 'lobbyd_general_games')"
python3 "$HERE/crowd_client.py" creator --port "$LOBBY_PORT" --source 127.0.3.200 \
  --prefix witness >"$OUT/witness.json"
hwm="$(status_kb "$LOBBYD_PID" VmHWM)"
max_per_ip="$MAX_GAMES_PER_IP"

echo "game-hoarding: $HOARDERS members from 10 addresses"
echo "  hoarders:  $(cat "$OUT/hoarders.json")"
echo "  games:     $games held by the hoarders (at most $((10 * max_per_ip)))"
echo "  witness:   $(cat "$OUT/witness.json")"
echo "  lobbyd:    VmRSS idle $idle_kb kB, VmHWM $hwm kB"
echo "  counters:  $(http_get /metrics | grep -E 'general_games_refused_per_ip_total' | tr '\n' ' ')"
fail=0
grep -q '"created": true' "$OUT/witness.json" || { echo "FAIL: the witness could not create a game"; fail=1; }
if [ "$games" -gt $((10 * max_per_ip)) ]; then echo "FAIL: $games games held by ten addresses"; fail=1; fi
if [ "$hwm" -gt $((RSS_MB * 1024)) ]; then echo "FAIL: VmHWM $hwm kB > $RSS_MB MB"; fail=1; fi
[ "$fail" = 0 ] && echo "PASS: the witness created a game, $games games, VmHWM $hwm kB"
exit "$fail"
