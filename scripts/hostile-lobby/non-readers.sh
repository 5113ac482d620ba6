#!/usr/bin/env bash
# 200 members that never read, in a general lobby of 1,000 with 20 members chatting at their
# limit: the send queues' memory stays within --lobby-memory-budget. Targets: lobbyd's RSS
# peak <= 64 MB; a well-behaved member's PING p99 is reported. Exits non-zero past target.
# SECONDS_OF_CHAT (default 30) sets the attack's length.
set -euo pipefail
source "$(dirname "$0")/memory-lib.sh"
run_memory_scenario 25100 "" non-readers --members 1000 --non-readers 200 --talkers 20 \
  --seconds "${SECONDS_OF_CHAT:-30}" --max-peak-mb 64
