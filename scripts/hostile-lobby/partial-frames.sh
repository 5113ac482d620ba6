#!/usr/bin/env bash
# With --lobby-max-frame 1048576, 600 general lobby members each send a frame declaring 1 MiB
# and all of it but the last byte, then hold it: partial frames stay within
# --lobby-memory-budget. Targets: lobbyd's RSS peak <= 96 MB, a well-behaved member's PING
# p99 <= 100 ms. Exits non-zero past target.
set -euo pipefail
source "$(dirname "$0")/memory-lib.sh"
run_memory_scenario 25300 "--lobby-max-frame 1048576" partial-frames --members 600 \
  --frame 1048576 --seconds 10 --max-peak-mb 96 --max-p99-ms 100
