#!/usr/bin/env bash
# Warzone master-server load (legacy protocol): list requests or game registrations.
# Usage: scripts/load-wz.sh [wz-list|wz-host] [lobby-load flags...]
#   e.g. scripts/load-wz.sh wz-list --duration 10 --concurrency 64
# Loopback only, stops by itself (lobby-load --help lists every flag). TARGET=ADDR overrides
# the default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode wz-list "${1:-}" wz-list wz-host)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
