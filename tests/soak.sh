#!/usr/bin/env bash
# `make soak`: a sustained mixed workload traced with a binary capture, checked for what a long trace must not do.
# On a loop device over a file in tmpfs (/dev/shm), fio runs for SOAK_SECONDS (default 60) two jobs at once:
# random 4 KiB read/write (io_uring, iodepth 16, SOAK_IOPS commands/s, default 10000) and sequential 128 KiB writes,
# under `kvio trace --events soak.kvb --events-format bin --json trace.json --listen 127.0.0.1:0`, its exporter
# scraped every second (curl, as Prometheus would). The tracer's RSS (VmRSS of the kvio process,
# /proc/PID/status) is sampled every second. Checks: 0 events dropped; the capture reads back (kvio dump) with one
# record per traced command; the RSS slope (least squares over the samples after the first 10 s) is at most
# SOAK_MAX_RSS_KIB_PER_MIN (default 1024) and the RSS at the end within SOAK_MAX_RSS_GROWTH_PCT (default 5) % of
# the RSS at start; every scrape answered. Reports commands/s, RSS at start (the first
# sample after 10 s) and end, lost
# completions per 10^6 commands. Needs root. Results: $BUILD/soak/soak.json and rss.tsv (seconds, KiB).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK_SECONDS=${SOAK_SECONDS:-60}
SOAK_IOPS=${SOAK_IOPS:-10000}
SOAK_MAX_RSS_KIB_PER_MIN=${SOAK_MAX_RSS_KIB_PER_MIN:-1024}
SOAK_MAX_RSS_GROWTH_PCT=${SOAK_MAX_RSS_GROWTH_PCT:-5}
KVIO=$PWD/$BUILD/kvio
out=$PWD/$BUILD/soak
[ "$(id -u)" -eq 0 ] || { echo "soak: needs root (BPF, loop devices)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"

img=$(mktemp /dev/shm/kvio-soak.XXXXXX)
loop=""
cleanup() {
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
    rm -f "$img"
}
trap cleanup EXIT
truncate -s 1G "$img"
loop=$(losetup -f --show "$img")
dev=$(basename "$loop")

rate_r=$((SOAK_IOPS / 2))
"$KVIO" trace -q -d "$dev" --events "$out/soak.kvb" --events-format bin --json "$out/trace.json" \
    --listen 127.0.0.1:0 -- \
    fio --output="$out/fio.json" --output-format=json --filename="$loop" --direct=1 --time_based --runtime="$SOAK_SECONDS" \
        --name=randrw --rw=randrw --bs=4k --ioengine=io_uring --iodepth=16 --offset=0 --size=512M \
            --rate_iops="$rate_r,$((SOAK_IOPS - rate_r))" \
        --name=seq --rw=write --bs=128k --ioengine=psync --offset=512M --size=512M --rate=64m \
    >"$out/trace.log" 2>&1 &
pid=$!
start=$(date +%s.%N)
: >"$out/rss.tsv"
port="" scrapes_ok=0 scrapes_failed=0
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "$(echo "$(date +%s.%N) - $start" | bc) $rss" >>"$out/rss.tsv"
    [ -n "$port" ] || port=$(sed -n 's|.*serving Prometheus metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$out/trace.log" | head -1)
    if [ -n "$port" ]; then
        body=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" || true)
        if grep -q '^kvio_device_commands_total' <<<"$body"; then
            scrapes_ok=$((scrapes_ok + 1))
        elif kill -0 "$pid" 2>/dev/null; then
            t=$(echo "$(date +%s.%N) - $start" | bc)
            # fio's end: the tracer stops serving and writes its outputs (not a failure of the exporter)
            if awk -v t="$t" -v s="$SOAK_SECONDS" 'BEGIN { exit !(t < s) }'; then
                scrapes_failed=$((scrapes_failed + 1))
                echo "$t" >>"$out/scrape_failures.txt"
            fi
        fi
    fi
    sleep 1
done
wait "$pid" || { echo "soak: kvio trace failed:" >&2; cat "$out/trace.log" >&2; exit 1; }

dropped=$(jq '.dropped' "$out/trace.json")
lost=$(jq '.lost_completes' "$out/trace.json")
cmds=$(jq '[.devices[] | (.read.cmds // 0) + (.write.cmds // 0)] | add // 0' "$out/trace.json")
records=$("$KVIO" dump "$out/soak.kvb" | grep -c '"type":"cmd"' || true)
capture_bytes=$(stat -c %s "$out/soak.kvb")
# Least-squares slope of RSS over time, samples after the first 10 s (buffers and maps are set up by then).
read -r slope n rss_min rss_max < <(awk '$1 >= 10 { n++; sx += $1; sy += $2; sxx += $1*$1; sxy += $1*$2;
        if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 }
    END { d = n * sxx - sx * sx; s = (n > 1 && d > 0) ? (n * sxy - sx * sy) / d * 60 : 0; printf "%.1f %d %d %d\n", s, n, min, max }' "$out/rss.tsv")
rss_start=$(awk '$1 >= 10 {print $2; exit}' "$out/rss.tsv")  # after set-up, like the slope
# the last sample while fio ran: after it the tracer frees its buffers and writes its outputs (53 -> 20 MiB in 1 s)
rss_end=$(awk -v s="$SOAK_SECONDS" '$1 <= s { v = $2 } END { print v }' "$out/rss.tsv")
cmds_per_s=$(echo "scale=1; $cmds / $SOAK_SECONDS" | bc)
lost_per_m=$(echo "scale=3; $lost * 1000000 / ($cmds + ($cmds == 0))" | bc)

jq -n --argjson seconds "$SOAK_SECONDS" --argjson iops "$SOAK_IOPS" --argjson cmds "$cmds" --argjson records "$records" \
    --argjson dropped "$dropped" --argjson lost "$lost" --argjson lost_per_m "$lost_per_m" --argjson bytes "$capture_bytes" \
    --argjson slope "$slope" --argjson samples "$n" --argjson rss_min "$rss_min" --argjson rss_max "$rss_max" \
    --argjson cps "$cmds_per_s" --argjson rss_start "${rss_start:-0}" --argjson rss_end "${rss_end:-0}" \
    --argjson sok "$scrapes_ok" --argjson sfail "$scrapes_failed" \
    '{seconds: $seconds, target_iops: $iops, commands: $cmds, commands_per_s: $cps, capture_records: $records,
      capture_bytes: $bytes, dropped: $dropped, lost_completes: $lost, lost_per_million: $lost_per_m,
      rss_kib_start: $rss_start, rss_kib_end: $rss_end, rss_kib_min: $rss_min, rss_kib_max: $rss_max,
      rss_slope_kib_per_min: $slope, rss_samples: $samples, scrapes_ok: $sok, scrapes_failed: $sfail}' >"$out/soak.json"
cat "$out/soak.json"

ok=1
[ "$dropped" -eq 0 ] || { echo "soak: FAIL: $dropped events dropped" >&2; ok=0; }
[ "$cmds" -gt 0 ] && [ "$records" -eq "$cmds" ] || { echo "soak: FAIL: the capture holds $records cmd records for $cmds traced commands" >&2; ok=0; }
[ "$scrapes_ok" -gt 0 ] && [ "$scrapes_failed" -eq 0 ] ||
    { echo "soak: FAIL: $scrapes_failed of $((scrapes_ok + scrapes_failed)) scrapes of the exporter failed" >&2; ok=0; }
[ "$n" -ge 2 ] || { echo "soak: FAIL: only $n RSS samples after 10 s (SOAK_SECONDS too short?)" >&2; ok=0; }
awk -v s="$slope" -v m="$SOAK_MAX_RSS_KIB_PER_MIN" 'BEGIN { exit !(s <= m) }' ||
    { echo "soak: FAIL: RSS grows $slope KiB/min (limit $SOAK_MAX_RSS_KIB_PER_MIN)" >&2; ok=0; }
awk -v a="${rss_start:-0}" -v b="${rss_end:-0}" -v p="$SOAK_MAX_RSS_GROWTH_PCT" 'BEGIN { exit !(a > 0 && b <= a * (1 + p / 100)) }' ||
    { echo "soak: FAIL: RSS ${rss_start:-?} -> ${rss_end:-?} KiB: more than $SOAK_MAX_RSS_GROWTH_PCT % growth" >&2; ok=0; }
echo "soak: $cmds commands in $SOAK_SECONDS s ($cmds_per_s/s), $scrapes_ok scrapes, RSS $rss_start -> $rss_end KiB, dropped $dropped, lost completions $lost_per_m per 10^6, RSS $rss_min..$rss_max KiB, slope $slope KiB/min: $([ $ok = 1 ] && echo ok || echo FAILED)"
[ $ok = 1 ]
