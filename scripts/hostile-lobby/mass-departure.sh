#!/usr/bin/env bash
# 3,000 general lobby members close their connections at once: the departure's fan-out stays
# within --lobby-memory-budget. Target: lobbyd's RSS peak <= 48 MB above the steady state
# (the peak is reset once the members have settled). Exits non-zero past target.
set -euo pipefail
source "$(dirname "$0")/memory-lib.sh"
run_memory_scenario 25200 "" mass-departure --members 3000 --seconds 3 \
  --max-above-steady-mb 48
