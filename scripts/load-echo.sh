#!/usr/bin/env bash
# The physical-limit baseline: a built-in UDP echo server and its clients.
# Usage: scripts/load-echo.sh [echo] [lobby-load flags...]
#   e.g. scripts/load-echo.sh echo --duration 10 --concurrency 64
# Loopback only, stops by itself (lobby-load --help lists every flag). TARGET=ADDR overrides
# the default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode echo "${1:-}" echo)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
