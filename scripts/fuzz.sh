#!/usr/bin/env bash
# Coverage-guided fuzzing of every lobbyd fuzz target in turn, offline on
# the stable toolchain: cargo-fuzz (`cargo install cargo-fuzz`) with RUSTC_BOOTSTRAP=1 and no
# sanitizer (no `unsafe` in the code the targets reach; 3-4x faster than AddressSanitizer).
#
#   scripts/fuzz.sh [SECONDS]     run each target SECONDS (default 60), one process at a time
#   scripts/fuzz.sh --merge       fold what the runs found into the committed corpora, minimized
#
# FUZZ_TARGETS="wire_http core_wz" limits the run to those targets; FUZZ_RUNS=N stops each
# target after N executions (or SECONDS, whichever comes first). Each run starts from the
# committed corpus fuzz/corpus/TARGET and writes what it finds to fuzz/target/work-corpus/TARGET
# (ignored by git), so a run leaves the tree clean; --merge then replaces fuzz/corpus/TARGET
# with a minimized union of both (libFuzzer -merge=1). A crash is written to
# fuzz/artifacts/TARGET/; copy it to fuzz/regressions/TARGET/ once fixed, where
# tests/it/fuzz_corpora.rs replays it on every `cargo test`.
#
# Prints one line per target: executions, coverage (cov: edges, ft: features) and exec/s from
# libFuzzer's final stats, and the seconds it ran. Exits non-zero if any target crashed.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
export RUSTC_BOOTSTRAP=1

merge=0
seconds=60
case "${1:-}" in
    --merge) merge=1 ;;
    '') ;;
    *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] | --merge" >&2; exit 2 ;;
    *) seconds=$1 ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi

targets=${FUZZ_TARGETS:-$(cargo fuzz list)}
work="$root/fuzz/target/work-corpus"
logs="$root/fuzz/target/logs"
mkdir -p "$work" "$logs"

cargo fuzz build --sanitizer none >/dev/null 2>&1 || {
    echo "fuzz.sh: cargo fuzz build failed; run it to see why" >&2
    exit 1
}

if [ "$merge" = 1 ]; then
    for target in $targets; do
        fresh="$work/$target.merged"
        rm -rf "$fresh" && mkdir -p "$fresh" "$work/$target"
        (cargo fuzz run --sanitizer none "$target" "$fresh" \
            "$root/fuzz/corpus/$target" "$work/$target" -- -merge=1) \
            >"$logs/$target.merge.log" 2>&1
        rm -rf "$root/fuzz/corpus/$target"
        mv "$fresh" "$root/fuzz/corpus/$target"
        echo "$target: $(ls "$root/fuzz/corpus/$target" | wc -l) inputs," \
            "$(du -sk "$root/fuzz/corpus/$target" | cut -f1) KiB"
    done
    exit 0
fi

printf '%-22s %14s %8s %8s %10s %6s\n' target executions cov ft exec/s secs
crashed=()
for target in $targets; do
    mkdir -p "$work/$target"
    log="$logs/$target.log"
    start=$(date +%s)
    status=0
    (cargo fuzz run --sanitizer none "$target" "$work/$target" \
        "$root/fuzz/corpus/$target" -- -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=30 -runs="${FUZZ_RUNS:--1}") >"$log" 2>&1 || status=$?
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-22s %14s %8s %8s %10s %6s\n' "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
        "${rate:-?}" "$took"
    if [ "$status" != 0 ]; then
        crashed+=("$target")
        echo "  CRASH ($log):" >&2
        grep -E "panicked at|Test unit written to" "$log" | head -3 | sed 's/^/    /' >&2
    fi
done

if [ "${#crashed[@]}" -gt 0 ]; then
    echo "fuzz.sh: crashes in: ${crashed[*]}" >&2
    exit 1
fi
