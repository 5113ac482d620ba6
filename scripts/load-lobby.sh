#!/usr/bin/env bash
# General lobby load: sign-in cycles, idle members held, or lobby-wide chat.
# Usage: scripts/load-lobby.sh [lobby-join|lobby-idle|lobby-chat] [lobby-load flags...]
#   e.g. scripts/load-lobby.sh lobby-chat --members 500 --concurrency 8 --duration 10
# lobbyd needs --lobby-resume-grace 0 and raised per-address limits (see lobby-load --help and
# lobby-load/src/general_modes.rs). Loopback only, stops by itself. TARGET=ADDR overrides the
# default target.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
mode="$(pick_mode lobby-join "${1:-}" lobby-join lobby-idle lobby-chat)"
if [ "${1:-}" = "$mode" ]; then shift; fi
load_wrapper "$mode" "$@"
