#!/usr/bin/env bash
# UDP room lobby load: LIST_ROOMS (udp-list, 64 rooms listed) or whole room lives (udp-create-join).
# Usage: scripts/load-udp.sh [udp-list|udp-create-join] [lobby-load flags...]
#   e.g. scripts/load-udp.sh udp-list --duration 10 --concurrency 64
# Loopback only, stops by itself (lobby-load --help lists every flag). TARGET=ADDR overrides
# the default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode udp-list "${1:-}" udp-list udp-create-join)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
