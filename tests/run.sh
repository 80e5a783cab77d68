#!/usr/bin/env bash
# Runs kvio's test binaries and prints one closing line: "tests: N passed, N failed, N skipped".
# Skipped tests are reported as skipped, never as passed. Each fuzz target run over its committed corpus
# (tests/fuzz/corpus/NAME/, by $BUILD/fuzz-replay/NAME) is one test; a target not built is skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export KVIO_BIN=${KVIO_BIN:-$PWD/$BUILD/kvio}
mkdir -p "$BUILD/test-results"
passed=0 failed=0 skipped=0 rc=0
failed_names=()  # named again just above the closing line: CI shows a log's tail
# The e2e tests that work on files only (no BPF, no loop device, no timing bound): run under SAN too.
SAN_E2E_FILTER='ReadersE2E.*:Cli.*:WorkloadGeometry.*:ValidateE2E.MalformedInput*:Simulate.ResultsHaveEvery*:Simulate.Logical*:Simulate.BadFlags*:Simulate.Unwritable*:Simulate.MaxRequests*:Simulate.StorageBaseline*:Simulate.ProductionFlags*'
# KVIO_TEST_BINARIES: which GoogleTest binaries run (default both); .ci/run runs only the unit tests under SAN.
for t in ${KVIO_TEST_BINARIES:-kvio_unit_tests kvio_e2e_tests}; do
  bin="$BUILD/$t"
  [ -x "$bin" ] || { echo "missing $bin" >&2; rc=1; continue; }
  echo "=== $t"
  log="$BUILD/test-results/$t.log"
  san_args=()
  if [ -n "${SAN:-}" ] && [ "$t" = kvio_e2e_tests ]; then
    # Under SAN the e2e binary runs its file-level tests: the readers, validate/distill/replay/compare/dump on
    # files, the CLI's errors, simulate's logical and tmpfs runs (KVIO_SAN_E2E_FILTER overrides). The others
    # bound timings that sanitizers slow several-fold (a signal 0.6 s into gen, depths under load) or boot the
    # NVMe guest's static kvio, which cannot link the sanitizer runtimes; they run in the normal build and are
    # counted here as skipped.
    filter=${KVIO_SAN_E2E_FILTER:-$SAN_E2E_FILTER}
    all=$("$bin" --gtest_list_tests | grep -c '^  ')
    n=$("$bin" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ')
    echo "SAN=$SAN: $n of $all e2e tests run sanitized; the other $((all - n)) run in the normal build only"
    skipped=$((skipped + all - n))
    san_args=(--gtest_filter="$filter")
  fi
  "$bin" --gtest_output="xml:$BUILD/test-results/$t.xml" "${san_args[@]}" ${GTEST_ARGS:-} 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  # GoogleTest's closing block: "[  PASSED  ] N tests." "[  SKIPPED ] N tests," "[  FAILED  ] N tests,"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$log" | tail -1)
  if [ -z "$p$f" ]; then echo "$t: no GoogleTest summary (crashed?)" >&2; rc=1; failed=$((failed + 1)); failed_names+=("$t: no GoogleTest summary (crashed?)"); fi
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
  # GoogleTest names each failed test as "[  FAILED  ] Suite.Name (N ms)" when it ends and again after the summary
  # (", where ..." follows a parameterised one): each once.
  while read -r name; do
    # With each failed assertion's first lines ("file:line: Failure" and what it printed), 24 at most, 200 columns.
    why=$(awk -v n="$name" '$0 == "[ RUN      ] " n { on = 1; next } on && index($0, "[  FAILED  ] " n) == 1 { on = 0 }
      on && / Failure$/ { left = 7 } on && left > 0 && shown < 24 { print "  | " substr($0, 1, 200); left--; shown++ }' "$log")
    failed_names+=("$t: $name${why:+$'\n'$why}")
  done < <(sed -n 's/^\[  FAILED  \] \([A-Za-z_][A-Za-z0-9_/.]*\).*/\1/p' "$log" | awk '!seen[$0]++')
done
for src in tests/fuzz/fuzz_*.cpp; do
  t=$(basename "$src" .cpp); t=${t#fuzz_}
  bin="$BUILD/fuzz-replay/$t"
  if [ ! -x "$bin" ]; then echo "fuzz corpus $t: $bin not built (make check builds it): skipped"; skipped=$((skipped + 1)); continue; fi
  echo "=== fuzz corpus $t"
  if timeout 600 "$bin" "tests/fuzz/corpus/$t"; then passed=$((passed + 1)); else echo "fuzz corpus $t: FAILED" >&2; failed=$((failed + 1)); failed_names+=("fuzz corpus $t"); fi
done
[ "$failed" -gt 0 ] && rc=1
echo
for n in "${failed_names[@]}"; do echo "failed: $n"; done
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $rc
