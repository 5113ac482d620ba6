# shellcheck shell=bash
# Shared helpers of lobbyd's scripts (sourced, not run): build, start and stop a lobbyd on
# loopback, read its /metrics, run lobby-load, read /proc. Everything targets 127.0.0.1.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# LOBBYD_BIN runs another lobbyd build (an earlier commit's, for before/after pairs).
LOBBYD="${LOBBYD_BIN:-$REPO_ROOT/target/release/lobbyd}"
LOBBY_LOAD="$REPO_ROOT/target/release/lobby-load"
LOBBYD_PID=""

# Ports of the lobbyd the scripts start (override when they clash with something).
PORT="${LOBBYD_PORT:-24242}"
METRICS_PORT="${LOBBYD_METRICS_PORT:-24243}"
WZ_PORT="${LOBBYD_WZ_PORT:-24290}"
LOBBY_PORT="${LOBBYD_LOBBY_PORT:-24244}"
LOBBY_WS_PORT="${LOBBYD_LOBBY_WS_PORT:-24245}"
INSTANCE_PORTS="${LOBBYD_INSTANCE_PORTS:-24300-24799}"

log() { printf '%s\n' "$*" >&2; }

build_release() {
  log "building release binaries..."
  (cd "$REPO_ROOT" && cargo build --release --bins --quiet)
}

# Raises the open-file limit as far as the hard limit allows (tcp-idle holds many sockets).
raise_nofile() {
  local want="$1" hard
  hard="$(ulimit -Hn)"
  if [ "$hard" != "unlimited" ] && [ "$hard" -lt "$want" ]; then want="$hard"; fi
  ulimit -n "$want" 2>/dev/null || log "could not raise ulimit -n to $want (now $(ulimit -n))"
}

# True when this lobbyd build knows the flag (features land in other branches over time).
lobbyd_has_flag() { "$LOBBYD" --help 2>/dev/null | grep -q -- "$1"; }

http_get() { curl -fsS --max-time 5 "http://127.0.0.1:$METRICS_PORT$1"; }

# start_lobbyd LOGFILE [extra lobbyd flags...]: loopback, raised limits, metrics on.
start_lobbyd() {
  local logfile="$1"; shift
  local extra=()
  if lobbyd_has_flag --wz-port; then extra+=(--wz-port "$WZ_PORT"); fi
  if lobbyd_has_flag --lobby-port; then extra+=(--lobby-port "$LOBBY_PORT"); fi
  if lobbyd_has_flag --lobby-ws-port; then extra+=(--lobby-ws-port "$LOBBY_WS_PORT"); fi
  "$LOBBYD" --bind 127.0.0.1 --port "$PORT" --instance-ports "$INSTANCE_PORTS" \
    --metrics "127.0.0.1:$METRICS_PORT" --log warn "${extra[@]}" "$@" >"$logfile" 2>&1 &
  LOBBYD_PID=$!
  local i
  for i in $(seq 1 100); do
    if http_get /metrics >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$LOBBYD_PID" 2>/dev/null; then
      log "lobbyd exited at start:"; cat "$logfile" >&2; return 1
    fi
    sleep 0.1
  done
  log "lobbyd did not answer on its metrics port"; return 1
}

stop_lobbyd() {
  if [ -n "$LOBBYD_PID" ] && kill -0 "$LOBBYD_PID" 2>/dev/null; then
    kill -TERM "$LOBBYD_PID"
    local i
    for i in $(seq 1 50); do
      kill -0 "$LOBBYD_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$LOBBYD_PID" 2>/dev/null && kill -KILL "$LOBBYD_PID"
    wait "$LOBBYD_PID" 2>/dev/null || true
  fi
  LOBBYD_PID=""
}

# steal_ms: the time the hypervisor has taken from this machine's CPUs so far, in ms
# (/proc/stat "steal"; 0 on bare metal). A run's delta tells a noisy host from a slow server.
steal_ms() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%d\n", $9 * 1000 / hz }' /proc/stat; }

# status_kb PID FIELD: a /proc/PID/status field in kB (VmRSS, VmHWM).
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# metric_sum NAME: the sum of every sample of the metric NAME (all label sets).
metric_sum() {
  http_get /metrics | awk -v n="$1" '
    $1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%d\n", s }'
}

# True when a TCP listener answers on 127.0.0.1:PORT.
tcp_port_answers() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# general_members: members signed in to the general lobby now (away ones not counted).
general_members() {
  http_get /metrics | awk '$1 == "lobbyd_general_members{state=\"present\"}" { print $2; f = 1 }
    END { if (!f) print 0 }'
}

# wait_general_members N SECS [TEST]: waits at most SECS seconds until the general lobby's
# members compare to N by TEST (default -ge: at least N; -le N after a run: the members of an
# earlier run have left, and their departures are not broadcast during the next one).
wait_general_members() {
  local i
  for i in $(seq 1 $(( $2 * 5 ))); do
    [ "$(general_members)" "${3:--ge}" "$1" ] && return 0
    sleep 0.2
  done
  return 1
}

# Waits until lobbyd lists no room (at most $1 seconds); false if some remain.
wait_rooms_gone() {
  local i
  for i in $(seq 1 $(( $1 * 5 ))); do
    [ "$(metric_sum lobbyd_rooms)" = "0" ] && return 0
    sleep 0.2
  done
  return 1
}

# json_field FILE KEY: a top-level number of a lobby-load --json summary.
json_field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
# json_latency FILE P: a latency percentile (p50, p99, p999, max) in us.
json_latency() { sed -n "s/.*\"latency_us\":{[^}]*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
# json_lateness FILE P: a COUNTDOWN lateness percentile in us ("" when absent).
json_lateness() { sed -n "s/.*\"countdown_lateness_us\":{[^}]*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
# json_failures FILE: errors plus timeouts of every kind.
json_failures() {
  sed -n 's/.*"errors":{\([^}]*\)}.*"timeouts":{\([^}]*\)}.*/\1,\2/p' "$1" |
    tr ',' '\n' | awk -F: 'NF == 2 { s += $2 } END { printf "%d\n", s }'
}

# run_load MODE [flags...]: lobby-load against this script's lobbyd, whose limits the script
# raised: --caps off, so the tool does not hold each source address within lobbyd's defaults.
run_load() {
  local mode="$1"; shift
  local target="127.0.0.1:$PORT"
  case "$mode" in
    wz-*) target="127.0.0.1:$WZ_PORT" ;;
    lobby-*) target="127.0.0.1:$LOBBY_PORT" ;;
  esac
  "$LOBBY_LOAD" "$mode" --target "$target" --caps off "$@"
}

# load_wrapper MODE [flags...]: what the load-*.sh wrappers run. Builds lobby-load if needed
# and targets $TARGET (default: lobbyd's defaults on loopback) unless --target is given.
load_wrapper() {
  local mode="$1"; shift
  [ -x "$LOBBY_LOAD" ] || build_release
  local default_port=4242
  case "$mode" in
    wz-*) default_port=9990 ;;
    lobby-*) default_port=4243 ;;
  esac
  case " $* " in
    *" --target "*) exec "$LOBBY_LOAD" "$mode" "$@" ;;
    *) exec "$LOBBY_LOAD" "$mode" --target "${TARGET:-127.0.0.1:$default_port}" "$@" ;;
  esac
}

# pick_mode DEFAULT ALLOWED... -- ARGS: the first ARG if it is an allowed mode, else DEFAULT.
pick_mode() {
  local default="$1" first="$2"; shift 2
  local m
  for m in "$@"; do [ "$first" = "$m" ] && { echo "$m"; return; }; done
  echo "$default"
}

# start_private_redis DIR: a redis-server of our own on the unix socket DIR/r.sock (no TCP
# port, no persistence, its log in DIR/redis.log), its process id appended to the caller's
# `pids` array and kept in REDIS_PID; exits when it does not come up within 5 s.
start_private_redis() {
  redis-server --port 0 --unixsocket "$1/r.sock" --save '' --appendonly no --dir "$1" \
    >"$1/redis.log" 2>&1 &
  REDIS_PID=$!
  pids+=("$REDIS_PID")
  local _
  for _ in $(seq 50); do
    [ -S "$1/r.sock" ] && return 0
    sleep 0.1
  done
  log "redis-server did not start: $1/redis.log"
  exit 1
}

# stop_started DIR: stops every process in the caller's `pids` array by its id (resumed
# first, in case a benchmark left one stopped), waits for them and removes DIR; for a
# `trap ... EXIT`.
stop_started() {
  local pid
  for pid in "${pids[@]}"; do
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$1"
}
