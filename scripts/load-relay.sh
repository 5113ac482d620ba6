#!/usr/bin/env bash
# Game-instance relay load: DATA among the members of --concurrency rooms.
# Usage: scripts/load-relay.sh [relay] [lobby-load flags...]
#   e.g. scripts/load-relay.sh relay --duration 10 --concurrency 64
# Loopback only, stops by itself (lobby-load --help lists every flag). TARGET=ADDR overrides
# the default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode relay "${1:-}" relay)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
