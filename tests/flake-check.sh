#!/usr/bin/env bash
# Runs the load-sensitive end-to-end tests N times with the CPUs busy and counts failures per test: a test whose
# verdict depends on how busy the machine is shows up here before it costs a CI run (docs/testing.md).
#   tests/flake-check.sh [-n N] [-f GTEST_FILTER] [--no-stress]
# Default: N = 10, the suites that replay or time a workload (FLAKE_FILTER), `stress-ng --cpu $(nproc)` beside
# each run (Debian stress-ng; installed when missing). Needs root (loop devices, BPF) and a built $BUILD/kvio_e2e_tests.
# Closes with "flake-check: N passed, N failed" (runs of one test); exit 1 when any run of any test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export KVIO_BIN=${KVIO_BIN:-$PWD/$BUILD/kvio}
n=10 stress=1
filter=${FLAKE_FILTER:-'Distill*:DistillJobs*:DistillPhases*:TraceQd*:Run*:RunSimulate*:Stop*:GenStop*:Replay*:TraceStop*:TraceInterval*:Simulate.MaxRequests*'}
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    -f) filter=$2; shift 2 ;;
    --no-stress) stress=0; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "flake-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "flake-check: -n takes a whole number >= 1, not '$n'" >&2; exit 2; }
bin=$BUILD/kvio_e2e_tests
[ -x "$bin" ] || { echo "flake-check: $bin is not built (make check, or make $bin)" >&2; exit 2; }
out=$BUILD/flake-check
rm -rf "$out" && mkdir -p "$out"
stress_pid=
stop_stress() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null; stress_pid=; }
trap stop_stress EXIT
trap 'stop_stress; exit 130' INT
trap 'stop_stress; exit 143' TERM
if [ "$stress" = 1 ]; then
    command -v stress-ng >/dev/null || bash scripts/deps.sh stress-ng || exit 1
    stress-ng --cpu "$(nproc)" --timeout 0 --quiet &
    stress_pid=$!
    echo "flake-check: stress-ng --cpu $(nproc) beside every run (pid $stress_pid)"
fi
declare -A runs fails
for ((i = 1; i <= n; i++)); do
    SECONDS=0
    "$bin" --gtest_filter="$filter" --gtest_output="xml:$out/run$i.xml" >"$out/run$i.log" 2>&1
    # Every test that ran, and every test that failed, from GoogleTest's own lines.
    while read -r t; do runs[$t]=$((${runs[$t]:-0} + 1)); done < <(sed -n 's/^\[ RUN      \] \([^ ]*\).*/\1/p' "$out/run$i.log")
    f=$(sed -n 's/^\[  FAILED  \] \([A-Za-z_][A-Za-z0-9_/.]*\) (.*/\1/p' "$out/run$i.log" | sort -u)
    for t in $f; do fails[$t]=$((${fails[$t]:-0} + 1)); done
    echo "flake-check: run $i of $n: $(wc -w <<<"$f") failed, $SECONDS s${f:+: $(echo $f)}"
done
stop_stress
passed=0 failed=0
printf '%-60s %5s %5s\n' test runs fails >"$out/summary.txt"
for t in $(printf '%s\n' "${!runs[@]}" | sort); do
    printf '%-60s %5d %5d\n' "$t" "${runs[$t]}" "${fails[$t]:-0}" >>"$out/summary.txt"
    passed=$((passed + ${runs[$t]} - ${fails[$t]:-0})) failed=$((failed + ${fails[$t]:-0}))
done
awk 'NR == 1 || $3 > 0' "$out/summary.txt"
echo "flake-check: $((${#runs[@]})) tests x $n runs; logs in $out/"
echo "flake-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
