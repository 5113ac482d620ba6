#!/usr/bin/env bash
# Password guessing against the general lobby with accounts (`--lobby-login required`), and
# the memory of the password checks. Starts a release lobbyd on loopback ports of its own over
# a temporary account database (`lobbyd user add`), then:
#  1. for each crowd size in GUESS_ADDRESSES (64 and 256): that many source addresses
#     (127.10.x.y) guess the password of "victim", 3 wrong SIGN_INs in flight per address
#     (the server holds each address to its failed-check budget); once the attack has run
#     10 s (every address has failed by then: it is guessing, not arriving), the account "owner"
#     signs in with the right password once a second from 127.20.0.1 on a new connection,
#     its previous one still open (so each sign-in after the first takes its member over);
#     target: the owner gets WELCOME on >= 95 % of tries, p99 <= 1 s;
#  2. on a fresh lobbyd: 60 wrong sign-ins at once (60 addresses), sampling VmRSS
#     every 50 ms; target: peak <= 32 MB above the idle RSS.
# Exits non-zero when a target is missed. The attack clients: password_guessing.py (stdlib).
# usage: scripts/hostile-lobby/password-guessing.sh
#        (GUESS_ADDRESSES="64 256" GUESS_SECONDS=40; LOBBYD_BIN=path/to/lobbyd for another
#        build; LOBBYD_*_PORT to move the ports)
set -euo pipefail
export LOBBYD_PORT="${LOBBYD_PORT:-25342}" LOBBYD_METRICS_PORT="${LOBBYD_METRICS_PORT:-25343}"
export LOBBYD_LOBBY_PORT="${LOBBYD_LOBBY_PORT:-25344}" LOBBYD_WZ_PORT="${LOBBYD_WZ_PORT:-25390}"
export LOBBYD_INSTANCE_PORTS="${LOBBYD_INSTANCE_PORTS:-25400-25499}"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../lib.sh"
CROWDS="${GUESS_ADDRESSES:-64 256}"
SECONDS_EACH="${GUESS_SECONDS:-40}"
MIN_RATE=95
MAX_P99_MS=1000
MAX_RSS_RISE_KB=$((32 * 1024))
[ -x "$LOBBYD" ] || build_release
raise_nofile 8192

tmp="$(mktemp -d)"
SAMPLER=""
cleanup() {
  [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
  stop_lobbyd
  rm -rf "$tmp"
}
trap cleanup EXIT
DB="$tmp/accounts.sqlite"
for user in owner victim; do
  echo "correct horse" | "$LOBBYD" user add "$user" --db "$DB" >/dev/null
done
failed=0
field() { sed -n "s/^$1=\([^ ]*\).*/\1/p" "$2"; }

for n in $CROWDS; do
  start_lobbyd "$tmp/lobbyd-$n.log" --lobby-login required --db "$DB"
  log "crowd of $n addresses, ${SECONDS_EACH}s..."
  python3 "$HERE/password_guessing.py" crowd --port "$LOBBY_PORT" --addresses "$n" \
    --warmup 10 --duration "$SECONDS_EACH" --interval 1 >"$tmp/crowd-$n.txt"
  tries="$(field owner_tries "$tmp/crowd-$n.txt")"
  ok="$(field owner_signed_in "$tmp/crowd-$n.txt")"
  p99="$(field owner_p99_ms "$tmp/crowd-$n.txt")"
  rate=$(( tries > 0 ? ok * 100 / tries : 0 ))
  echo "== $n guessing addresses"
  cat "$tmp/crowd-$n.txt"
  echo "checks: $(http_get /metrics | grep -E '^lobbyd_general_login_(checks|refused)_total' | tr '\n' ' ')"
  echo "takeovers: $(metric_sum lobbyd_general_takeovers_total)"
  echo "owner signed in on ${rate}% of ${tries} tries (target >= ${MIN_RATE}%), p99 ${p99} ms (target <= ${MAX_P99_MS} ms)"
  if [ "$tries" -eq 0 ] || [ "$rate" -lt "$MIN_RATE" ] || [ "${p99%.*}" -gt "$MAX_P99_MS" ]; then
    echo "FAIL: $n guessing addresses"
    failed=1
  fi
  stop_lobbyd
done

start_lobbyd "$tmp/lobbyd-rss.log" --lobby-login required --db "$DB"
# Past one heap trim period after the start (the workers' decoy hashes are freed by then).
sleep 6
idle="$(status_kb "$LOBBYD_PID" VmRSS)"
(
  peak=0
  while kill -0 "$LOBBYD_PID" 2>/dev/null; do
    rss="$(status_kb "$LOBBYD_PID" VmRSS 2>/dev/null || echo 0)"
    [ "${rss:-0}" -gt "$peak" ] && peak="$rss" && echo "$peak" >"$tmp/peak"
    sleep 0.05
  done
) &
SAMPLER=$!
python3 "$HERE/password_guessing.py" wrong --port "$LOBBY_PORT" --count 60 >"$tmp/wrong.txt"
sleep 1
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=""
peak="$(cat "$tmp/peak" 2>/dev/null || echo "$idle")"
rise=$(( peak - idle ))
echo "== 60 wrong sign-ins"
cat "$tmp/wrong.txt"
echo "invalid checks: $(http_get /metrics | grep -E '^lobbyd_general_login_checks_total\{.*invalid' || true)"
echo "RSS idle ${idle} kB, peak ${peak} kB, rise ${rise} kB (target <= ${MAX_RSS_RISE_KB} kB); VmHWM $(status_kb "$LOBBYD_PID" VmHWM) kB"
if [ "$rise" -gt "$MAX_RSS_RISE_KB" ]; then
  echo "FAIL: RSS rise"
  failed=1
fi
stop_lobbyd
exit "$failed"
