#!/usr/bin/env bash
# Runs kvio's test binaries and prints one closing line: "tests: N passed, N failed, N skipped".
# Skipped tests are reported as skipped, never as passed. Each fuzz target run over its committed corpus
# (tests/fuzz/corpus/NAME/, by $BUILD/fuzz-replay/NAME) is one test; a target not built is skipped.
# Stages, each timed on a "stage: NAME N s" line (docs/testing.md): unit; e2e, in KVIO_E2E_JOBS (default: the CPU
# count) GoogleTest shards side by side; guest (the NVMe QEMU guest's suite, booted once); fuzz replays.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export KVIO_BIN=${KVIO_BIN:-$PWD/$BUILD/kvio}
res=$BUILD/test-results
mkdir -p "$res"
passed=0 failed=0 skipped=0 rc=0
failed_names=()  # named again just above the closing line: CI shows a log's tail
# The e2e tests that work on files only (no BPF, no loop device, no timing bound): run under SAN too.
SAN_E2E_FILTER='ReadersE2E.*:Cli.*:WorkloadGeometry.*:ValidateE2E.MalformedInput*:Simulate.ResultsHaveEvery*:Simulate.Logical*:Simulate.BadFlags*:Simulate.Unwritable*:Simulate.MaxRequests*:Simulate.StorageBaseline*:Simulate.ProductionFlags*'
# The NVMe guest's suite: one QEMU boot for all of it, in a stage of its own.
GUEST_FILTER='NvmeGuest.*'

# stage NAME START_SECONDS: the stage's time line.
stage() { echo "stage: $1 $((SECONDS - $2)) s"; }

# tally BINARY LOG: adds a finished GoogleTest log's counts and names its failed tests with their assertions.
tally() {
  local t=$1 log=$2 p s f name why
  # GoogleTest's closing block: "[  PASSED  ] N tests." "[  SKIPPED ] N tests," "[  FAILED  ] N tests,"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$log" | tail -1)
  if [ -z "$p$f" ]; then
    echo "$t: no GoogleTest summary in $log (crashed?)" >&2
    rc=1 failed=$((failed + 1)); failed_names+=("$t: no GoogleTest summary in $log (crashed?)")
  fi
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
  [ -n "$f" ] && [ "$f" != 0 ] && rc=1
  # GoogleTest names each failed test as "[  FAILED  ] Suite.Name (N ms)" when it ends and again after the summary
  # (", where ..." follows a parameterised one): each once.
  while read -r name; do
    # With each failed assertion's first lines ("file:line: Failure" and what it printed), 24 at most, 200 columns.
    why=$(awk -v n="$name" '$0 == "[ RUN      ] " n { on = 1; next } on && index($0, "[  FAILED  ] " n) == 1 { on = 0 }
      on && / Failure$/ { left = 7 } on && left > 0 && shown < 24 { print "  | " substr($0, 1, 200); left--; shown++ }' "$log")
    failed_names+=("$t: $name${why:+$'\n'$why}")
  done < <(sed -n 's/^\[  FAILED  \] \([A-Za-z_][A-Za-z0-9_/.]*\).*/\1/p' "$log" | awk '!seen[$0]++')
}

# gtest BINARY LOG [ARGS...]: runs one GoogleTest binary (output shown and kept in LOG), then tallies it.
gtest() {
  local t=$1 log=$2; shift 2
  "$BUILD/$t" --gtest_output="xml:${log%.log}.xml" "$@" ${GTEST_ARGS:-} 2>&1 | tee "$log"
  tally "$t" "$log"
}

# durations XML...: "MS Suite.Name" per test that ran in GoogleTest's XML reports, the longest first: the figures
# tests/e2e/durations.txt holds (copy a CI run's $res/kvio_e2e_tests.durations.txt there when tests come and go).
durations() {
  sed -n 's/.*<testcase name="\([^"]*\)".* time="\([0-9.]*\)".* classname="\([^"]*\)".*/\2 \3.\1/p' "$@" |
    awk '{ printf "%d %s\n", $1 * 1000, $2 }' | sort -k1,1nr -k2,2
}

# shard_filters BINARY FILTER JOBS: JOBS lines, each a GoogleTest filter naming one shard's tests. The tests FILTER
# selects are dealt out the longest first, each to the shard with the least time so far (by tests/e2e/durations.txt;
# a test it does not list counts the median of those it does), so the slowest tests land on different shards and
# the shards end together. GoogleTest's own sharding deals them out by their order in the binary, whatever they
# take: the MlperfClosed tests, 2-3 minutes each, are neighbours there.
shard_filters() {
  local bin=$1 filter=$2 jobs=$3 figures=tests/e2e/durations.txt
  [ -f "$figures" ] || figures=/dev/null
  "$BUILD/$bin" --gtest_list_tests --gtest_filter="$filter" |
    awk '/^[^ ]/ { suite = $1; next } { print suite $1 }' |
    awk -v figures="$figures" '
      BEGIN { while ((getline line < figures) > 0) if (split(line, w, " ") == 2 && w[1] ~ /^[0-9]+$/) { ms[w[2]] = w[1]; all[++n] = w[1] } }
      { name[++m] = $1 }
      END {
        # the median of the listed figures, for a test not listed
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (all[j] < all[i]) { x = all[i]; all[i] = all[j]; all[j] = x }
        median = n ? all[int((n + 1) / 2)] : 1000
        for (i = 1; i <= m; i++) print ((name[i] in ms) ? ms[name[i]] : median), name[i]
      }' |
    sort -k1,1nr -k2,2 |
    awk -v jobs="$jobs" '
      { best = 0; for (s = 1; s < jobs; s++) if (load[s] < load[best]) best = s
        load[best] += $1; f[best] = f[best] (f[best] == "" ? "" : ":") $2 }
      END { for (s = 0; s < jobs; s++) print f[s] }'
}

for t in ${KVIO_TEST_BINARIES:-kvio_unit_tests kvio_e2e_tests}; do
  [ -x "$BUILD/$t" ] || { echo "missing $BUILD/$t" >&2; rc=1; failed=$((failed + 1)); failed_names+=("missing $BUILD/$t"); continue; }
  t0=$SECONDS
  if [ "$t" = kvio_unit_tests ]; then
    echo "=== $t"
    gtest "$t" "$res/$t.log"
    stage unit "$t0"
    continue
  fi
  if [ -n "${SAN:-}" ]; then
    # Under SAN the e2e binary runs its file-level tests: the readers, validate/distill/replay/compare/dump on
    # files, the CLI's errors, simulate's logical and tmpfs runs (KVIO_SAN_E2E_FILTER overrides). The others
    # bound timings that sanitizers slow several-fold (a signal 0.6 s into gen, depths under load) or boot the
    # NVMe guest's static kvio, which cannot link the sanitizer runtimes; they run in the normal build and are
    # counted here as skipped.
    filter=${KVIO_SAN_E2E_FILTER:-$SAN_E2E_FILTER}
    all=$("$BUILD/$t" --gtest_list_tests | grep -c '^  ')
    n=$("$BUILD/$t" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ')
    echo "=== $t (SAN=$SAN: $n of $all e2e tests run sanitized; the other $((all - n)) run in the normal build only)"
    skipped=$((skipped + all - n))
    gtest "$t" "$res/$t.log" --gtest_filter="$filter"
    stage "e2e (SAN)" "$t0"
    continue
  fi
  # The e2e tests but the guest's, sharded: each test makes its own loop devices, files and mounts, and a test that
  # looks at global state (losetup -a, /proc/mounts) looks for its own paths, so shards do not meet. The shards are
  # balanced by each test's measured time (shard_filters); KVIO_E2E_SHARDING=gtest splits them as GoogleTest does.
  jobs=${KVIO_E2E_JOBS:-$(nproc)}
  [[ $jobs =~ ^[1-9][0-9]*$ ]] || jobs=1
  filter=${KVIO_E2E_FILTER:-*}-$GUEST_FILTER
  echo "=== $t in $jobs shards (log per shard: $res/$t.shardN.log; each shard's output follows when it ends)"
  shards=()
  if [ "${KVIO_E2E_SHARDING:-time}" = gtest ]; then
    for ((i = 0; i < jobs; i++)); do shards+=("$filter"); done
  else
    mapfile -t shards < <(shard_filters "$t" "$filter" "$jobs")
    if [ -z "$(printf '%s' "${shards[@]}")" ]; then  # a binary that lists nothing must not pass as an empty stage
      echo "$t: no e2e test listed for the filter $filter" >&2
      rc=1 failed=$((failed + 1)) failed_names+=("$t: no e2e test listed for the filter $filter")
    fi
  fi
  pids=()
  for ((i = 0; i < jobs; i++)); do
    pids+=("")
    [ -n "${shards[$i]:-}" ] || continue  # fewer tests than shards
    ts=$SECONDS
    if [ "${KVIO_E2E_SHARDING:-time}" = gtest ]; then
      (GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$i "$BUILD/$t" --gtest_filter="${shards[$i]}" \
        --gtest_output="xml:$res/$t.shard$i.xml" ${GTEST_ARGS:-} >"$res/$t.shard$i.log" 2>&1
        echo "stage: e2e shard $((i + 1)) $((SECONDS - ts)) s" >>"$res/$t.shard$i.log") &
    else
      ("$BUILD/$t" --gtest_filter="${shards[$i]}" --gtest_output="xml:$res/$t.shard$i.xml" ${GTEST_ARGS:-} \
        >"$res/$t.shard$i.log" 2>&1
        echo "stage: e2e shard $((i + 1)) $((SECONDS - ts)) s" >>"$res/$t.shard$i.log") &
    fi
    pids[$i]=$!
  done
  for ((i = 0; i < jobs; i++)); do
    [ -n "${pids[$i]}" ] || continue
    wait "${pids[$i]}"
    echo "--- shard $((i + 1)) of $jobs"
    cat "$res/$t.shard$i.log"
    tally "$t" "$res/$t.shard$i.log"
  done
  durations "$res"/$t.shard*.xml >"$res/$t.durations.txt"
  stage e2e "$t0"
  t0=$SECONDS
  echo "=== $t: the NVMe guest"
  gtest "$t" "$res/$t.guest.log" --gtest_filter="$GUEST_FILTER"
  stage guest "$t0"
done
t0=$SECONDS
for src in tests/fuzz/fuzz_*.cpp; do
  t=$(basename "$src" .cpp); t=${t#fuzz_}
  bin="$BUILD/fuzz-replay/$t"
  if [ ! -x "$bin" ]; then echo "fuzz corpus $t: $bin not built (make check builds it): skipped"; skipped=$((skipped + 1)); continue; fi
  echo "=== fuzz corpus $t"
  if timeout 600 "$bin" "tests/fuzz/corpus/$t"; then passed=$((passed + 1)); else echo "fuzz corpus $t: FAILED" >&2; failed=$((failed + 1)); failed_names+=("fuzz corpus $t"); fi
done
stage "fuzz replays" "$t0"
[ "$failed" -gt 0 ] && rc=1
echo
for n in "${failed_names[@]}"; do echo "failed: $n"; done
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $rc
