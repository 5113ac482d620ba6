#!/usr/bin/env bash
# `make test`: what `cargo test --workspace` runs, with the test executables side by side.
#
# Cargo runs the test executables one after another, and the integration tests spend most of
# their time waiting on sockets, timers and child processes. So this builds everything once
# (`cargo test --workspace --no-run`: unit tests, the integration-test binaries, the
# binaries and examples), then runs every test executable at the same time, each from its
# package's directory as Cargo would, with more test threads than cores
# (LOBBYD_TEST_THREADS, default 8), beside the doctests (`cargo test --doc`) and the
# JavaScript client's tests (`make test-js`); the load tool's integration tests after them.
# Each one's output is printed whole when all are done, then a summary; any failure fails
# the run. Arguments are passed to every test executable (a name filter, `--nocapture`).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
# A one-shot build: incremental compilation's bookkeeping costs a fifth of the workspace
# crates' compile time and pays off only on the next edit (CARGO_INCREMENTAL=1 keeps it;
# `cargo test` itself is unchanged).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
MAKE=${MAKE:-make}
THREADS=${LOBBYD_TEST_THREADS:-8}
logs=target/test-logs
rm -rf "$logs"
mkdir -p "$logs"

# Every test executable, as "package directory<TAB>source<TAB>executable": the artifacts
# compiled as tests (`"profile":{..."test":true...}`) with an executable.
$CARGO test --workspace --no-run --message-format=json-render-diagnostics >"$logs/build.json"
mapfile -t executables < <(
	grep '"reason":"compiler-artifact"' "$logs/build.json" |
		grep '"profile":{[^}]*"test":true' |
		sed -n 's/.*"manifest_path":"\([^"]*\)\/Cargo.toml".*"src_path":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1\t\2\t\3/p' |
		sort
)
if [ ${#executables[@]} -eq 0 ]; then
	echo "scripts/test.sh: cargo listed no test executable" >&2
	exit 1
fi

names=()
pids=()
started=()
# Starts a job named $1 running the rest of the arguments, its output in its own log.
launch() {
	local name=$1
	shift
	local n=${#names[@]}
	names+=("$name")
	started+=("$EPOCHREALTIME")
	(
		set +e
		"$@" >"$logs/$n.log" 2>&1
		echo $? >"$logs/$n.status"
		echo "$EPOCHREALTIME" >"$logs/$n.end"
	) &
	pids+=($!)
}

# Runs the test executable of line $1 ("directory<TAB>source<TAB>executable") as a job.
launch_tests() {
	local dir src exe
	IFS=$'\t' read -r dir src exe <<<"$1"
	shift
	launch "${src#"$PWD"/}" env CARGO_MANIFEST_DIR="$dir" RUST_TEST_THREADS="$THREADS" \
		bash -c 'cd "$1" && shift && exec "$@"' - "$dir" "$exe" "$@"
}

# The load tool's integration tests (lobby-load/tests/) put a server under load and judge
# how it serves (the hostile profile fails a server that answers late): they run once the
# others are done, not beside a suite that takes both cores.
echo "running ${#executables[@]} test executables, the doctests and clients/js side by side" \
	"($THREADS test threads each; lobby-load/tests/ after the rest)"
under_load=()
for line in "${executables[@]}"; do
	case "$line" in
	*"$PWD"/lobby-load/tests/*) under_load+=("$line") ;;
	*) launch_tests "$line" "$@" ;;
	esac
done
launch "doctests" $CARGO test --workspace --doc -- "$@"
launch "clients/js" $MAKE --no-print-directory test-js
for pid in "${pids[@]}"; do
	wait "$pid" || true
done
for line in "${under_load[@]}"; do
	launch_tests "$line" "$@"
done

failed=()
for pid in "${pids[@]}"; do
	wait "$pid" || true
done
for n in "${!names[@]}"; do
	status=$(cat "$logs/$n.status" 2>/dev/null || echo "?")
	echo
	echo "==> ${names[$n]} (exit $status)"
	cat "$logs/$n.log"
	[ "$status" = 0 ] || failed+=("${names[$n]}")
done

echo
echo "==> summary (seconds from the start of the runs; logs in $logs/)"
for n in "${!names[@]}"; do
	end=$(cat "$logs/$n.end" 2>/dev/null || echo "${started[$n]}")
	status=$(cat "$logs/$n.status" 2>/dev/null || echo "?")
	# The counts of its "test result:" lines (the doctests have one per crate), or of Node's
	# "# pass N" lines.
	awk -v s="${started[0]}" -v e="$end" -v name="${names[$n]}" -v st="$status" '
		/^test result:/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^(passed|failed|ignored);$/) c[$(i + 1)] += $i }
		/^# (pass|fail|skipped) [0-9]+$/ { c[($2 == "pass" ? "passed" : $2 == "fail" ? "failed" : "ignored") ";"] += $3 }
		END { printf "%6.1f s  %-30s exit %-3s %d passed, %d failed, %d ignored\n", e - s, name, st, c["passed;"], c["failed;"], c["ignored;"] }
	' "$logs/$n.log"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo
	echo "FAILED: ${failed[*]}" >&2
	exit 1
fi
