#!/usr/bin/env bash
# lobbyd out of file descriptors: every TCP listener must still answer.
#
# 1. A --max-rooms the descriptor limit cannot hold (NOFILE, default 512) must be refused at
#    start: exit 2 and one line naming --max-rooms and RLIMIT_NOFILE.
# 2. A release lobbyd under `prlimit --nofile=NOFILE` with every listener on (TCP lobby,
#    Warzone, general lobby, metrics), --max-rooms as large as the rule allows
#    (NOFILE - 64 - half of NOFILE for the connection caps), per-address caps lifted; then
#    fd_exhaustion.py fills the rooms (each an instance socket) and holds a crowd of TCP
#    lobby connections past the descriptors left, and sends PROBES newcomers to each
#    listener: the TCP lobby, Warzone and general lobby must close each at once (their
#    refusal at the limit), the metrics endpoint must answer each with a 200, all within
#    2 s. Exits non-zero when any newcomer went unanswered, or at a wrong start refusal.
# LOBBYD_BIN runs another build (an earlier commit's, for a before/after pair).
set -euo pipefail

export LOBBYD_PORT="${LOBBYD_PORT:-26242}"
export LOBBYD_METRICS_PORT="${LOBBYD_METRICS_PORT:-26243}"
export LOBBYD_LOBBY_PORT="${LOBBYD_LOBBY_PORT:-26244}"
export LOBBYD_WZ_PORT="${LOBBYD_WZ_PORT:-26290}"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

NOFILE="${NOFILE:-512}"
PROBES="${PROBES:-20}"
ROOMS=$(( NOFILE - 64 - NOFILE / 2 ))
OUT="$(mktemp -d)"
trap 'stop_lobbyd; rm -rf "$OUT"' EXIT
command -v prlimit >/dev/null || { log "prlimit (util-linux) is needed"; exit 1; }
[ -n "${LOBBYD_BIN:-}" ] || build_release
failed=0

status=0
timeout 10 prlimit --nofile="$NOFILE:$NOFILE" "$LOBBYD" --bind 127.0.0.1 --port "$PORT" \
  --instance-ports 0 --wz-port 0 --lobby-port 0 --max-rooms 5000 2>"$OUT/refused.err" \
  >/dev/null || status=$?
if [ "$status" -eq 2 ] && [ "$(wc -l <"$OUT/refused.err")" -eq 1 ] \
  && grep -q -- "--max-rooms 5000 .*RLIMIT_NOFILE $NOFILE" "$OUT/refused.err"; then
  log "start refused as it must: $(cat "$OUT/refused.err")"
else
  log "FAIL: --max-rooms 5000 under RLIMIT_NOFILE $NOFILE: exit $status, stderr:"
  cat "$OUT/refused.err" >&2
  failed=1
fi

prlimit --nofile="$NOFILE:$NOFILE" "$LOBBYD" --bind 127.0.0.1 --port "$PORT" \
  --instance-ports 0 --wz-port "$WZ_PORT" --lobby-port "$LOBBY_PORT" \
  --metrics "127.0.0.1:$METRICS_PORT" --wz-login off --lobby-login off \
  --max-rooms "$ROOMS" --max-conns-per-ip 100000 --conn-rate 1000000 \
  --handshake-timeout 60 --seat-timeout 60 --idle-timeout 60 --log warn \
  >"$OUT/lobbyd.log" 2>&1 &
LOBBYD_PID=$!
for _ in $(seq 1 100); do
  http_get /metrics >/dev/null 2>&1 && break
  kill -0 "$LOBBYD_PID" 2>/dev/null || { log "lobbyd exited:"; cat "$OUT/lobbyd.log" >&2; exit 1; }
  sleep 0.1
done

log "fd-exhaustion: RLIMIT_NOFILE $NOFILE, $ROOMS rooms, a crowd of $NOFILE TCP lobby connections"
if python3 "$(dirname "${BASH_SOURCE[0]}")/fd_exhaustion.py" --pid "$LOBBYD_PID" \
  --udp-port "$PORT" --tcp-port "$PORT" --wz-port "$WZ_PORT" --lobby-port "$LOBBY_PORT" \
  --metrics-port "$METRICS_PORT" --rooms "$ROOMS" --crowd "$NOFILE" --probes "$PROBES"; then
  log "every listener answered at the limit"
else
  log "FAIL: a newcomer went unanswered at the descriptor limit"
  failed=1
fi
http_get /metrics | grep -E '^lobbyd_descriptor_limit_refused_total' >&2 || true
kill -0 "$LOBBYD_PID" 2>/dev/null || { log "FAIL: lobbyd died"; failed=1; }
exit "$failed"
