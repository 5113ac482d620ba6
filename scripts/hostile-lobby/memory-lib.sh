# shellcheck shell=bash
# Shared by the general lobby's memory scenarios (non-readers.sh, mass-departure.sh,
# partial-frames.sh): starts a release lobbyd on loopback ports of its own, runs one mode of
# memory_attack.py against it with the scenario's targets, and stops it. Sourced, not run.

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"

# run_memory_scenario PORT_BASE "LOBBYD FLAGS" MODE [memory_attack.py flags...]
run_memory_scenario() {
  local base="$1" flags="$2" mode="$3"; shift 3
  PORT=$base METRICS_PORT=$((base + 1)) WZ_PORT=$((base + 2)) LOBBY_PORT=$((base + 3))
  INSTANCE_PORTS="$((base + 10))-$((base + 19))"
  [ -x "$LOBBYD" ] || build_release
  raise_nofile 20000
  local logfile rc=0
  logfile="$(mktemp)"
  # shellcheck disable=SC2086 # the flags are words
  start_lobbyd "$logfile" $flags || return 1
  trap stop_lobbyd EXIT
  log "$mode: lobbyd $flags (pid $LOBBYD_PID)"
  python3 "$HERE/memory_attack.py" "$mode" --port "$LOBBY_PORT" --pid "$LOBBYD_PID" "$@" || rc=$?
  log "dropped: $(http_get /metrics | grep '^lobbyd_general_dropped_total' | tr '\n' ' ')"
  log "buffered peak: $(http_get /metrics | grep '^lobbyd_general_buffered_peak_bytes' || echo n/a)"
  stop_lobbyd
  trap - EXIT
  rm -f "$logfile"
  return "$rc"
}
