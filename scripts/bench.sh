#!/usr/bin/env bash
# Benchmarks lobbyd against the physical limit of this machine, in one session.
#
# Builds release binaries, starts lobbyd on loopback with its limits raised (rate limits off,
# room limits high, short idle timeouts so rooms of one run are gone before the next), runs
# each lobby-load mode for BENCH_DURATION seconds right after an echo baseline with the
# same packet sizes, and prints one table: rate, latency, failures and the ratio of each
# mode to its baseline. Then lobbyd's idle and peak RSS (/proc/PID/status), binary sizes
# and machine facts. Modes whose server side this build lacks (TCP lobby, Warzone listener)
# are skipped with a message. The table is also written to bench-out/results.md.
#
# Environment: BENCH_DURATION (s, default 3), BENCH_CONCURRENCY (UDP clients, default 32),
# BENCH_ROOMS (relay rooms, default 16), BENCH_TCP_IDLE (connections, default 10000; each
# side needs one descriptor per connection, so at most the hard `ulimit -n` less a few
# hundred), BENCH_PARTIES (tcp-cycle parties at once, default 100), BENCH_LOBBY_MEMBERS
# (general lobby members held during lobby-join and chatting in lobby-chat, default 1000),
# BENCH_LOBBY_IDLE (members held for the general lobby's RSS, default 2000), LOBBYD_PORT etc.
# (see scripts/lib.sh), BENCH_ONLY=general (only the general lobby's runs; the table goes to
# bench-out/results-general.md), BENCH_ONLY=countdown (COUNTDOWN lateness of 1,000 parties
# against the kernel's floor: scripts/bench-countdown.sh, which documents its own settings).
#
# lobby-load runs with --caps off (lobbyd's limits are raised, so the tool does not keep each
# source address within the defaults; run_load in lib.sh passes it) and its default sources (blocks of 127.0.0.0/8 sized
# for each mode). TCP and Warzone modes: lobbyd runs with its per-IP limits raised; the
# master server probes each host's game port as it does by default (lobby-load answers the
# probes); tcp-join also runs open loop at half its closed-loop rate (the p99 target).
# tcp-idle runs last against a fresh lobbyd with a long idle timeout: its RSS before, and
# while every connection is held, gives the RSS growth per connection.
#
# General lobby (when this build has --lobby-port): a fresh lobbyd with its limits raised,
# --lobby-resume-grace 0 (each lobby-join cycle's member leaves as it closes), a long idle
# timeout (held members are silent), --lobby-chat-rate 1000 and --lobby-chat-budget 0.
# lobby-idle holds BENCH_LOBBY_MEMBERS members while lobby-join runs closed loop, then open
# loop at half its rate (the sign-in p99 target); lobby-chat then has as many members
# chatting, closed loop, then open loop at half its line rate. Last, lobby-idle against another fresh lobbyd: RSS
# before, and while BENCH_LOBBY_IDLE members are held, gives the RSS per idle member.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
if [ "${BENCH_ONLY:-}" = countdown ]; then
  exec "$(dirname "$0")/bench-countdown.sh"
fi

DURATION="${BENCH_DURATION:-3}"
CONC="${BENCH_CONCURRENCY:-32}"
ROOMS="${BENCH_ROOMS:-16}"
TCP_IDLE="${BENCH_TCP_IDLE:-10000}"
PARTIES="${BENCH_PARTIES:-100}"
LOBBY_MEMBERS="${BENCH_LOBBY_MEMBERS:-1000}"
LOBBY_IDLE="${BENCH_LOBBY_IDLE:-2000}"
OUT="$REPO_ROOT/bench-out"
mkdir -p "$OUT"
RESULTS="$OUT/results${BENCH_ONLY:+-$BENCH_ONLY}.md"

build_release
raise_nofile 200000
trap 'stop_holding; stop_lobbyd' EXIT

# Limits out of the way: rates and per-IP caps (see the header).
LIMITS=(--udp-rate 2000000000 --udp-reply-bytes 0
  --max-conns 190000 --max-conns-per-ip 190000 --conn-rate 4000000000
  --wz-max-games-per-ip 65535 --wz-max-games 100000)
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

ROWS=()
NOTES=()
declare -A RATE

# bench NAME BASELINE MODE [flags...]: one measured run; BASELINE names an earlier row or "-".
bench() {
  local name="$1" baseline="$2"; shift 2
  local file="$OUT/${name//\//_}.json" code=0
  log "== $name: lobby-load $* (${DURATION}s)"
  run_load "$@" --duration "$DURATION" --json -q --timeout 2000 >"$file" || code=$?
  if [ "$code" -ge 2 ] || [ ! -s "$file" ]; then
    log "   $name did not run (exit $code)"; ROWS+=("| $name | did not run (exit $code) | | | | | | |"); return 0
  fi
  local rate p50 p99 p999 fails ratio="-"
  rate="$(json_field "$file" per_second)"; p50="$(json_latency "$file" p50)"
  p99="$(json_latency "$file" p99)"; p999="$(json_latency "$file" p999)"
  fails="$(json_failures "$file")"
  RATE[$name]="$rate"
  if [ "$baseline" != "-" ] && [ -n "${RATE[$baseline]:-}" ]; then
    ratio="$(awk -v a="$rate" -v b="${RATE[$baseline]}" 'BEGIN { printf "%.2f", a / b }')"
  fi
  ROWS+=("$(printf '| %s | %.0f | %.1f | %.1f | %.1f | %s | %s | %s |' \
    "$name" "$rate" "$p50" "$p99" "$p999" "$fails" "$baseline" "$ratio")")
  log "   $(printf '%.0f/s  p99 %.1f us  failures %s  ratio %s' "$rate" "$p99" "$fails" "$ratio")"
}

# hold_members N LOG: lobby-idle holding N general lobby members in the background (until
# stop_holding), once all are signed in; false if they were not within 300 s.
IDLE_PID=""
hold_members() {
  log "== lobby-idle: lobby-load lobby-idle --concurrency $1 (held until stopped)"
  # Not through run_load: $! must be lobby-load itself, not a subshell, for stop_holding.
  "$LOBBY_LOAD" lobby-idle --target "127.0.0.1:$LOBBY_PORT" --concurrency "$1" --duration 3600 \
    --timeout 10000 --caps off -q >"$2" 2>&1 &
  IDLE_PID=$!
  local began=$SECONDS
  if ! wait_general_members "$1" 300; then
    log "   only $(general_members) of $1 members signed in"; return 1
  fi
  HOLD_SECS=$(( SECONDS - began ))
}
stop_holding() {
  if [ -n "$IDLE_PID" ]; then kill "$IDLE_PID" 2>/dev/null || true; wait "$IDLE_PID" 2>/dev/null || true; fi
  IDLE_PID=""
}

IDLE_RSS_KB="-"
PEAK_RSS_KB="-"
# BENCH_ONLY=general runs the general lobby's modes alone.
if [ "${BENCH_ONLY:-}" != general ]; then
  start_lobbyd "$OUT/lobbyd.log" "${LIMITS[@]}" \
    --max-rooms 500 --max-rooms-per-ip 500 \
    --idle-timeout 3 --seat-timeout 3 --reap-grace 0 --countdown 1
  sleep 0.5
  IDLE_RSS_KB="$(status_kb "$LOBBYD_PID" VmRSS)"

  # UDP LIST_ROOMS, 64 rooms listed: 12-byte request, 14 + 13 * 64 = 846-byte reply.
  bench echo-12/846 - echo --size 12 --reply-size 846 --concurrency "$CONC"
  wait_rooms_gone 10 || log "rooms of an earlier run are still listed"
  bench udp-list-64 echo-12/846 udp-list --rooms 64 --concurrency "$CONC"
  half="$(awk -v r="${RATE[udp-list-64]:-0}" 'BEGIN { printf "%d", r / 2 }')"
  if [ "$half" -gt 0 ]; then
    wait_rooms_gone 10 || true
    bench udp-list-64@half - udp-list --rooms 64 --concurrency "$CONC" --rate "$half"
  fi
  # A room's whole life: 12-byte requests, 18-byte replies.
  bench echo-12/18 - echo --size 12 --reply-size 18 --concurrency "$CONC"
  bench udp-create-join echo-12/18 udp-create-join --concurrency "$CONC"
  # Relay: 64-byte DATA, each to 3 other members; the ratio compares forwarded datagrams/s.
  bench echo-64 - echo --size 64 --concurrency "$CONC"
  wait_rooms_gone 10 || true
  bench relay-64x4 echo-64 relay --size 64 --members 4 --concurrency "$ROOMS"

  # TCP lobby and Warzone modes, when this build serves them.
  TCP=no
  if tcp_port_answers "$PORT"; then
    TCP=yes
    bench tcp-join - tcp-join --concurrency "$CONC"
    half="$(awk -v r="${RATE[tcp-join]:-0}" 'BEGIN { printf "%d", r / 2 }')"
    if [ "$half" -gt 0 ]; then
      bench tcp-join@half - tcp-join --concurrency 512 --rate "$half"
    fi
    wait_rooms_gone 10 || true
    bench tcp-cycle - tcp-cycle --concurrency $(( PARTIES * 4 )) --members 4
    file="$OUT/tcp-cycle.json"
    if [ -s "$file" ]; then
      NOTES+=("tcp-cycle: $(( PARTIES * 4 )) players in parties of 4, --countdown 1, tick 100 ms; COUNTDOWN lateness us: p50 $(json_lateness "$file" p50), p99 $(json_lateness "$file" p99), max $(json_lateness "$file" max)")
    fi
  else
    log "== tcp-*: skipped, nothing listens on TCP 127.0.0.1:$PORT (the TCP lobby is not in this build)"
    ROWS+=("| tcp-* | skipped: no TCP lobby listener in this build | | | | | | |")
  fi
  if lobbyd_has_flag --wz-port && tcp_port_answers "$WZ_PORT"; then
    bench wz-list-16 - wz-list --rooms 16 --concurrency "$CONC"
    # Each registration is probed: lobbyd connects to the host's game port, which answers.
    bench wz-host - wz-host --concurrency "$CONC"
  else
    log "== wz-*: skipped, no Warzone listener (--wz-port) in this build"
    ROWS+=("| wz-* | skipped: no Warzone listener in this build | | | | | | |")
  fi

  PEAK_RSS_KB="$(status_kb "$LOBBYD_PID" VmHWM)"
  stop_lobbyd

  # tcp-idle: a fresh lobbyd that never drops idle players during the run; RSS before, and
  # while every connection is held (one second before the end).
  IDLE_SECS=$(( ${DURATION%.*} + 10 ))
  if [ "$TCP" = yes ]; then
    # Parties of 4 (lobbyd's default --max-players) count against --max-rooms.
    start_lobbyd "$OUT/lobbyd-idle.log" "${LIMITS[@]}" \
      --max-rooms $(( TCP_IDLE / 4 + 100 )) --idle-timeout 600
    sleep 0.5
    rss_before="$(status_kb "$LOBBYD_PID" VmRSS)"
    file="$OUT/tcp-idle.json"
    log "== tcp-idle: lobby-load tcp-idle --concurrency $TCP_IDLE (${IDLE_SECS}s)"
    run_load tcp-idle --concurrency "$TCP_IDLE" --duration "$IDLE_SECS" --timeout 10000 \
      --json -q >"$file" &
    idle_pid=$!
    sleep $(( IDLE_SECS - 1 ))
    rss_held="$(status_kb "$LOBBYD_PID" VmRSS)"
    wait "$idle_pid" || true
    held="$(sed -n 's/.*"held":\([0-9]*\).*/\1/p' "$file")"
    all_held="$(sed -n 's/.*"all_held_ms":\([0-9]*\).*/\1/p' "$file")"
    per_conn="$(awk -v a="$rss_before" -v b="$rss_held" -v n="${held:-0}" \
      'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1024 / n; else print "-" }')"
    ROWS+=("$(printf '| tcp-idle | %s held | | | | %s | - | - |' "${held:-0}" "$(json_failures "$file")")")
    NOTES+=("tcp-idle: ${held:-0} of $TCP_IDLE joined connections held (all held after ${all_held:-never} ms); lobbyd RSS ${rss_before} kB before, ${rss_held} kB held: ${per_conn} bytes per connection; peak $(status_kb "$LOBBYD_PID" VmHWM) kB")
    stop_lobbyd
  fi
fi

# General lobby: see the header.
GENERAL=(--lobby-max-conns 190000 --lobby-max-conns-per-ip 190000 --lobby-conn-rate 1000000000
  --lobby-max-members 1000000 --lobby-resume-grace 0 --lobby-chat-rate 1000 --idle-timeout 600)
# Raw fan-out is what lobby-chat measures: the lobby-wide chat budget (slow mode) is off.
if lobbyd_has_flag --lobby-chat-budget; then GENERAL+=(--lobby-chat-budget 0); fi
if lobbyd_has_flag --lobby-port; then
  start_lobbyd "$OUT/lobbyd-general.log" "${LIMITS[@]}" "${GENERAL[@]}"
  if hold_members "$LOBBY_MEMBERS" "$OUT/lobby-idle.txt"; then
    bench lobby-join - lobby-join --concurrency "$CONC"
    half="$(awk -v r="${RATE[lobby-join]:-0}" 'BEGIN { printf "%d", r / 2 }')"
    if [ "$half" -gt 0 ]; then
      bench lobby-join@half - lobby-join --concurrency 512 --rate "$half"
    fi
    NOTES+=("lobby-join: $LOBBY_MEMBERS idle members signed in first (after about ${HOLD_SECS} s), $(general_members) signed in after both runs; per second = syncs (SIGN_IN to SYNC_DONE, the latency); counts in $OUT/lobby-join.json")
  else
    ROWS+=("| lobby-join | not run: $LOBBY_MEMBERS idle members did not all sign in | | | | | | |")
  fi
  stop_holding
  wait_general_members 0 60 -le || log "members of an earlier run are still signed in"
  bench lobby-chat - lobby-chat --members "$LOBBY_MEMBERS" --concurrency 8
  lines="$(awk -v r="${RATE[lobby-chat]:-0}" -v m="$LOBBY_MEMBERS" 'BEGIN { printf "%d", r / m / 2 }')"
  if [ "$lines" -gt 0 ]; then
    wait_general_members 0 60 -le || true
    bench lobby-chat@half - lobby-chat --members "$LOBBY_MEMBERS" --rate "$lines"
  fi
  NOTES+=("lobby-chat: $LOBBY_MEMBERS members, each line to all of them (the speaker too); per second = CHAT_FROM frames delivered; lobby-chat@half: open loop at $lines lines/s")
  stop_lobbyd

  start_lobbyd "$OUT/lobbyd-general-idle.log" "${LIMITS[@]}" "${GENERAL[@]}"
  sleep 0.5
  rss_before="$(status_kb "$LOBBYD_PID" VmRSS)"
  if hold_members "$LOBBY_IDLE" "$OUT/lobby-idle-rss.txt"; then
    # Sign-ins the tool gave up on (and retried) may count until lobbyd sees their close.
    wait_general_members "$LOBBY_IDLE" 30 -le || true
    sleep 1
    rss_held="$(status_kb "$LOBBYD_PID" VmRSS)"
    held="$(general_members)"
    # The members are idle from here; the loop gives the sign-in storm's freed heap pages
    # back within its trim period (net::io::heap::TRIM_EVERY, 5 s): read RSS again after it.
    sleep 6
    rss_idle="$(status_kb "$LOBBYD_PID" VmRSS)"
    per_member() {
      awk -v a="$rss_before" -v b="$1" -v n="$held" \
        'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1024 / n; else print "-" }'
    }
    ROWS+=("| lobby-idle | $held held | | | | - | - | - |")
    NOTES+=("lobby-idle: $held of $LOBBY_IDLE signed-in members held (all after about ${HOLD_SECS} s); lobbyd RSS ${rss_before} kB before, ${rss_held} kB just after the sign-ins ($(per_member "$rss_held") bytes per member), ${rss_idle} kB after 6 s idle: $(per_member "$rss_idle") bytes per idle member; peak $(status_kb "$LOBBYD_PID" VmHWM) kB")
  else
    ROWS+=("| lobby-idle | not all $LOBBY_IDLE members signed in | | | | - | - | - |")
  fi
  stop_holding
  stop_lobbyd
else
  log "== lobby-*: skipped, no general lobby (--lobby-port) in this build"
  ROWS+=("| lobby-* | skipped: no general lobby in this build | | | | | | |")
fi
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

{
  echo "## lobby-load results, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Each mode ran ${DURATION} s, closed loop unless a rate is named, right after its echo"
  echo "baseline (same packet sizes, same session). Ratio = mode rate / baseline rate."
  echo
  echo "| run | per second | p50 us | p99 us | p99.9 us | failures | baseline | ratio |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  for note in "${NOTES[@]}"; do echo "- $note"; done
  if [ "${BENCH_ONLY:-}" != general ]; then
    echo "- lobbyd RSS idle: ${IDLE_RSS_KB} kB; peak (VmHWM) over the session: ${PEAK_RSS_KB} kB"
  fi
  echo "- binaries: lobbyd $(stat -c %s "$LOBBYD") B, lobby-load $(stat -c %s "$LOBBY_LOAD") B (release)"
  echo "- machine: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r)"
  echo "- load average before/after: $LOAD_BEFORE / $LOAD_AFTER"
  echo "- $(rustc --version)"
} | tee "$RESULTS"
