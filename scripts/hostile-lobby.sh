#!/usr/bin/env bash
# Every attack scenario against the general lobby (scripts/hostile-lobby/*.sh), one after the
# other, each against a release lobbyd it starts on loopback and stops itself, each bounded
# in time. A scenario exits non-zero when its target is missed; this script prints one line
# per scenario and exits non-zero when any failed.
#
# Usage: scripts/hostile-lobby.sh [NAME...]   (names without .sh; default: all of them)
#        or `make hostile-lobby`. Each scenario's header says what it does and its target.
# Output: each scenario's own report in bench-out/hostile-lobby/NAME.txt.
set -uo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

DIR="$REPO_ROOT/scripts/hostile-lobby"
OUT="$REPO_ROOT/bench-out/hostile-lobby"
mkdir -p "$OUT"
build_release || exit 1

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$DIR"/*.sh; do
    case "$f" in *-lib.sh) continue ;; esac   # sourced helpers, not scenarios
    names+=("$(basename "$f" .sh)")
  done
fi

failed=0
for name in "${names[@]}"; do
  script="$DIR/$name.sh"
  if [ ! -f "$script" ]; then log "no scenario $name ($script)"; failed=1; continue; fi
  start=$(date +%s)
  if bash "$script" >"$OUT/$name.txt" 2>&1; then verdict=pass; else verdict=FAIL; failed=1; fi
  printf '%-24s %s (%d s)  %s\n' "$name" "$verdict" "$(( $(date +%s) - start ))" "$OUT/$name.txt"
done
exit "$failed"
