#!/usr/bin/env bash
# TCP lobby load: joins, whole parties through GAME_START, or idle connections held.
# Usage: scripts/load-tcp.sh [tcp-join|tcp-cycle|tcp-idle] [lobby-load flags...]
#   e.g. scripts/load-tcp.sh tcp-join --duration 10 --concurrency 64
# Loopback only, stops by itself (lobby-load --help lists every flag). TARGET=ADDR overrides
# the default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode tcp-join "${1:-}" tcp-join tcp-cycle tcp-idle)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
