#!/usr/bin/env bash
# `make fuzz`: runs each libFuzzer target named on the command line for FUZZ_SECONDS (default 600), FUZZ_JOBS at
# a time (default: the number of CPUs), from its committed seeds (tests/fuzz/corpus/NAME/, read only) plus the
# inputs earlier runs found ($FUZZ_BUILD/corpus/NAME/, where new ones go). An input that crashes, hangs (over
# 10 s) or leaks is written to $FUZZ_BUILD/crashes/NAME/. Prints one line per target with libFuzzer's execution
# count; exits 1 when any target found something.
set -uo pipefail
cd "$(dirname "$0")/../.."
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
(($#)) || { echo "usage: $0 TARGET..." >&2; exit 2; }

run_one() {
    local t=$1 bin="$FUZZ_BUILD/fuzz/$1" log="$FUZZ_BUILD/fuzz-logs/$1.log"
    mkdir -p "$FUZZ_BUILD/corpus/$t" "$FUZZ_BUILD/crashes/$t" "$FUZZ_BUILD/fuzz-logs"
    local dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
    "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
        -artifact_prefix="$FUZZ_BUILD/crashes/$t/" "${dict[@]}" "$FUZZ_BUILD/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
    local rc=$?
    local execs secs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    local crashes
    crashes=$(find "$FUZZ_BUILD/crashes/$t" -type f | wc -l)
    echo "fuzz $t: ${execs:-?} executions in ${secs:-?} s, corpus $(find "$FUZZ_BUILD/corpus/$t" -type f | wc -l) found + $(find "tests/fuzz/corpus/$t" -type f | wc -l) seeds, $crashes crash files, exit $rc (log $log)"
    [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]
}

pids=() names=() failed=0
for t in "$@"; do
    [ -x "$FUZZ_BUILD/fuzz/$t" ] || { echo "missing $FUZZ_BUILD/fuzz/$t (make fuzzers)" >&2; failed=1; continue; }
    run_one "$t" &
    pids+=($!) names+=("$t")
    while (($(jobs -rp | wc -l) >= FUZZ_JOBS)); do wait -n; done
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { failed=1; echo "fuzz ${names[$i]}: FOUND SOMETHING, see $FUZZ_BUILD/crashes/${names[$i]}/" >&2; }
done
exit $failed
