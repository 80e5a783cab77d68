#!/usr/bin/env bash
# bench/run.sh — what `make bench` runs: kvio measured side by side with the tools users would otherwise
# run (fio, bpftrace), as ratios measured in the same run: the bench machine is shared and noisy, so an
# absolute number from one run is not comparable with another run's, a ratio within one run is.
#
# Stages (docs/performance.md explains each and records the latest figures):
#   overhead  fio 4 KiB randread QD 32 on a loop device (direct I/O) over a file in a private tmpfs, libaio
#             and io_uring: untraced and every way users run `kvio trace` (histograms; -- fio; -c fio; -p PID;
#             --events JSONL and binary) and bpftrace (bench/bpftrace/kvio_equiv.bt), interleaved over rounds
#             (the order rotates each round); IOPS paired per round, BPF ns per command from bpf_stats
#   files     what `kvio trace --files` adds per device command, per BPF program (bench/files_cost.sh): ext4 over a
#             loop device over a file in /dev/shm, fio 4 KiB randread and randwrite QD 32 O_DIRECT on one file, libaio
#             and io_uring, under `kvio trace --stats -d LOOP` plain, with --files and with --files from the
#             submitting context (KVIO_TRACE_FILES_FROM_SUBMITTER=1), rotating per round; summary in
#             $BUILD/bench/files_cost.json (bench/files_cost.jq)
#   gen       `kvio gen` vs fio, same block size (the transfer cap), queue depth and engine, same device:
#             posix (fio psync) QD 1 and io_uring (fio io_uring, fixedbufs) QD 8
#   validate  `kvio validate` on validate's synthetic stream: 10 M commands / 100 k objects, plus two
#             smaller runs that show what the peak RSS grows with
#   distill   `kvio distill` of the 10 M-record kvio.events/1 file from the validate stage
#   simulate  `kvio simulate`'s storage baseline on tmpfs and on ext4 over a loop device vs fio doing the same
#             whole-file writes (fsync) and reads (after fadvise) at the same number of streams and entry sizes
#             (bench/sim_fio_job.jq), paired rounds; MLPERF_KV_DIR: also the Python benchmark
#             (KVIO_BENCH_SIM_USERS 20, KVIO_BENCH_SIM_SECS 20, KVIO_BENCH_SIM_ROUNDS 3)
#   clients   the simulate storage baseline as 1 client vs --num-clients 2 vs mpirun -np 2 --mpi on one tmpfs,
#             paired ratios per round (KVIO_BENCH_CLIENT_ROUNDS 3, KVIO_BENCH_CLIENT_SECS 10)
#   verify    `kvio simulate --verify-reads`'s cost: the storage baseline on tmpfs without and with it, storage read
#             bytes/s paired per round (KVIO_BENCH_VERIFY_ROUNDS 5, KVIO_BENCH_VERIFY_SECS 10)
#   remote    `kvio simulate --remote-tier` on one redis-server vs redis-benchmark on the same server (chunk size,
#             connections, pipeline depth; SETs of new keys as kvio's are), paired per round (KVIO_BENCH_REMOTE_ROUNDS
#             3, KVIO_BENCH_REMOTE_SECS 10, KVIO_BENCH_REMOTE_REQS 1000): kvio's bytes over the wall time with a
#             request in flight (its results' remote in_flight_s) against redis-benchmark's bytes/s at kvio's mix;
#             bytes/elapsed (elapsed_ratio) and per connection over busy_s (conn_ratio) are kept too; and kvio's own
#             commands, recorded under strace, replayed through hiredis (bench/redis_replay.c): exact_ratio;
#             KVIO_BENCH_REMOTE_ARGS: more flags for kvio's runs (e.g. "--remote-connections split")
#   drives    `kvio drives`' cost around a fio run and its parts: the overhead stage's fio job (4 KiB randread QD
#             32, libaio, time_based KVIO_BENCH_SECS) plainly, with kvio drives' job text (bandwidth log), under its
#             tracer alone (--stats; duty-cycled as kvio drives starts it, KVIO_BENCH_DRIVES_DUTY 0.5/5, and every
#             command) and as the job of `kvio drives --rounds 1 --probe-seconds 0` (and of KVIO_BENCH_DRIVES_BEFORE's
#             kvio drives when set: another build's, paired in the same rounds), IOPS paired per round, the order
#             rotating; on a RAM-backed, a disk-backed and a throttled loop device (KVIO_BENCH_DRIVES_DEVICES "ram
#             disk throttled"; KVIO_BENCH_DRIVES_ROUNDS, default KVIO_BENCH_ROUNDS; KVIO_BENCH_DRIVES_THROTTLE_IOPS
#             20000)
#   audit     the Python benchmark (MLPERF_KV_DIR; skipped with the reason when unset) under `kvio audit` on ext4 over
#             a loop device: clean, under eatmydata, under a no-op posix_fadvise LD_PRELOAD shim; the verdicts
#             printed beside the expected ones (KVIO_BENCH_AUDIT_MODEL tiny-1b, KVIO_BENCH_AUDIT_USERS 4,
#             KVIO_BENCH_AUDIT_SECS 10)
# Output: tables on stdout, every measurement in $BUILD/bench/raw.jsonl, summaries in $BUILD/bench/results.json
# (bench/summarize.jq); $BUILD/bench/machine.json (bench/machine.sh): the machine, `$KVIO --version` of the binary
# under test (kvio_version) and the source tree's HEAD (git_head: the binary may be older than it). Needs root. Environment knobs (defaults): BUILD (build), KVIO ($BUILD/kvio),
# KVIO_BENCH_ROUNDS (7), KVIO_BENCH_SECS (4, fio seconds per overhead run), KVIO_BENCH_STAGES
# ("overhead gen validate distill simulate clients"), KVIO_BENCH_CMDS (10000000), KVIO_BENCH_OBJECTS (100000),
# KVIO_BENCH_ENGINES ("libaio io_uring", the overhead stage's fio engines), KVIO_BENCH_PEER (unset: a second kvio
# binary whose BPF cost the overhead stage pairs with this one's, mode peer_hist).
set -euo pipefail

BUILD=${BUILD:-build}
KVIO=$(realpath "${KVIO:-$BUILD/kvio}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${KVIO_BENCH_ROUNDS:-7}
SECS=${KVIO_BENCH_SECS:-4}
STAGES=${KVIO_BENCH_STAGES:-overhead files gen drives validate distill simulate clients verify remote fidelity audit}
NCMDS=${KVIO_BENCH_CMDS:-10000000}
NOBJ=${KVIO_BENCH_OBJECTS:-100000}
ENGINES=${KVIO_BENCH_ENGINES:-libaio io_uring}
OUT=$(realpath -m "$BUILD/bench")

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (loop devices, BPF); run 'sudo make bench'"
[ -x "$KVIO" ] || die "$KVIO is missing; build it first (make BUILD=$BUILD)"
for t in fio bpftrace jq /usr/bin/time losetup; do command -v "$t" >/dev/null || die "$t is missing (make bench installs it: bash scripts/deps.sh bpftrace jq time python3-numpy python3-yaml)"; done

mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: > "$RAW"
WORK=$(mktemp -d /var/tmp/kvio-bench.XXXXXX)   # big synthetic files: disk-backed, not RAM-pinned
MNT=$WORK/tmpfs
LOOP=""
BTPID=""
# stop_bpftrace: SIGINT (prints its maps), SIGKILL after 20 s: a bpftrace still compiling ignores SIGINT,
# and one left behind keeps its raw_syscalls probes on every syscall of the machine, skewing later runs
stop_bpftrace() {
    local i
    [ -n "$BTPID" ] || return 0
    kill -INT "$BTPID" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do kill -0 "$BTPID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BTPID" 2>/dev/null || true
    wait "$BTPID" 2>/dev/null || true
    BTPID=""
}
STATS_WAS=""
cleanup() {
    set +e
    stop_bpftrace
    [ -n "$STATS_WAS" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    [ -n "${DISK_LOOP:-}" ] && losetup -d "$DISK_LOOP"
    [ -n "${THR_LOOP:-}" ] && losetup -d "$THR_LOOP"
    # every mount under $WORK, deepest first (a stage that failed half-way left its own): rm -rf could not remove it
    awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount "$m"; done
    [ -n "${AUDIT_LOOP:-}" ] && losetup -d "$AUDIT_LOOP"
    [ -f "$WORK/redis/pid" ] && kill "$(cat "$WORK/redis/pid")" 2>/dev/null
    [ -n "${THR_CG:-}" ] && rmdir "$THR_CG"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# record STAGE MODE JSON-OBJECT: one measurement, appended to raw.jsonl
record() { jq -c -n --arg s "$1" --arg m "$2" --argjson v "$3" '{stage:$s, mode:$m} + $v' >> "$RAW"; }
# peak RSS (KiB), elapsed (s), user+sys CPU (s) from a /usr/bin/time -v report, as a JSON object
time_json() {
    awk -F': ' '/Maximum resident set size/ {rss=$2}
        /User time/ {u=$2} /System time/ {s=$2}
        /Elapsed \(wall clock\)/ {n=split($2, p, ":"); e=0; for (i=1;i<=n;i++) e=e*60+p[i]}
        END {printf "{\"peak_rss_kib\":%d,\"elapsed_s\":%.3f,\"cpu_s\":%.3f}\n", rss, e, u+s}' "$1"
}

echo "kvio bench: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)," \
     "$(fio --version), $(bpftrace --version | head -1), rounds $ROUNDS"
bash "$HERE/machine.sh" "$KVIO" "$ROUNDS" "$SECS" "$ENGINES" > "$OUT/machine.json"

has_stage() { [[ " $STAGES " == *" $1 "* ]]; }

if has_stage overhead || has_stage gen || has_stage drives; then
    mkdir -p "$MNT"
    mount -t tmpfs -o size=1200m kvio-bench "$MNT"
    truncate -s 1100M "$MNT/disk.img"
    LOOP=$(losetup -f --show --direct-io=on "$MNT/disk.img")
    LNAME=${LOOP#/dev/}
    [ "$(cat /sys/block/$LNAME/loop/dio)" = 1 ] || echo "bench: warning: $LOOP runs without direct I/O" >&2
    MM=$(cat /sys/block/$LNAME/dev)
    DEVT=$(( ${MM%:*} << 20 | ${MM#*:} ))   # kernel dev_t, what block tracepoints report
    dd if=/dev/zero of="$LOOP" bs=1M count=1100 oflag=direct status=none   # allocate every tmpfs page once
fi

# ---------------------------------------------------------------- overhead
# Every mode as users run it, each paired with the untraced run of the same round and engine:
#   kvio_hist   kvio trace -d LOOP (histograms, no task filter), fio started separately
#   kvio_child  kvio trace -d LOOP -- fio ...            (the traced command and its children)
#   kvio_comm   kvio trace -d LOOP -c fio                (a serving process by name)
#   kvio_comm_block  kvio trace -d LOOP -c fio --block-only   (the same without syscall programs: no target, it
#               shows what the syscall tracepoints' slow path costs fio's io_submit/io_getevents)
#   kvio_pid    kvio trace -d LOOP -p PID                (the fio job process, found before its I/O starts)
#   kvio_events / kvio_events_bin   kvio trace -d LOOP --events F [--events-format bin] -- fio ...
#   bpftrace    bench/bpftrace/kvio_equiv.bt DEVT fio   (syscall probes filtered by comm, like MLPerf's script)
#   kvio_listen kvio_hist plus --listen 127.0.0.1:0, its /metrics scraped every second while fio runs: paired with
#               kvio_hist of the same round it gives the cost of the scrapes alone (results.json scrape_cost)
#   kvio_files  kvio_hist plus --files (per-file attribution: the syscall's file for direct I/O, the page's for the
#               page cache): paired with kvio_hist of the same round, the BPF ns per command it adds (files_cost)
# kvio runs with --stats (BPF_ENABLE_STATS): per-program run counts and ns in its JSON summary. bpftrace's
# programs are read with bpftool while kernel.bpf_stats_enabled is on (set for the stage, restored after).
#   peer_hist   kvio_hist with the kvio binary KVIO_BENCH_PEER names (an older build, say): only when that is set.
#               Paired by round with kvio_hist it shows whether a change moved the BPF cost (results.json
#               overhead.ENGINE.peer_hist.ns_vs_peer... and targets.kernel_ns_vs_peer_ENGINE)
PEER=${KVIO_BENCH_PEER:+$(realpath "$KVIO_BENCH_PEER")}
read -r -a OVERHEAD_MODES <<< "${KVIO_BENCH_MODES:-untraced kvio_hist kvio_child kvio_comm kvio_comm_block kvio_pid kvio_events kvio_events_bin bpftrace kvio_listen kvio_files${PEER:+ peer_hist}}"
fio_args() {  # fio_args ENGINE OUTPUT.json [extra fio options]
    local eng=$1 out=$2; shift 2
    echo --name=randread --filename="$LOOP" --direct=1 --rw=randread --bs=4k --iodepth=32 --ioengine="$eng" \
        --time_based --runtime="$SECS" --norandommap --randrepeat=0 --output-format=json --output="$out" "$@"
}
# wait_for FILE PATTERN SECONDS: until FILE holds a line matching PATTERN; 1 on timeout
wait_for() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
# bt_progs BEFORE_IDS: JSON array {id, name, run_cnt, run_time_ns} of bpftrace's programs: tracepoint programs
# loaded since BEFORE_IDS was taken, named as the script's probes (other jobs on the machine may load programs too)
bt_progs() {
    bpftool -j prog show | jq -c --argjson ids "$1" \
        '[.[] | select(.type == "tracepoint" and (.name | IN("block_rq_insert", "block_rq_issue", "block_rq_comple", "sys_enter", "sys_exit")))
              | select(.id as $i | $ids | index($i) | not) | {id, name, run_cnt: (.run_cnt // 0), run_time_ns: (.run_time_ns // 0)}]'
}
# syscall_ns: ns per getppid (bench/syscall_cost.c) now, with whatever tracer is attached
syscall_ns() { "$WORK/syscall_cost" 1000000; }
# add_syscall_ns NS: adds syscall_ns to the last record
add_syscall_ns() {
    local last
    last=$(tail -n 1 "$RAW" | jq -c --argjson s "$1" '. + {syscall_ns: $s}')
    sed -i '$ d' "$RAW"
    echo "$last" >> "$RAW"
}
# kvio_stats_json TRACE_JSON ROUND ENGINE IOPS [EVENTS_SUMMARY]: the measurement record of one kvio run
kvio_record() {
    local m=$1 r=$2 eng=$3 iops=$4 t=$5 sum=${6:-null}
    record overhead "$m" "$(jq -c --argjson r "$r" --arg e "$eng" --argjson i "$iops" --argjson s "$sum" \
        '([.devices[] | .read.cmds + .write.cmds] | add // 0) as $n |
         {round:$r, engine:$e, iops:$i, cmds:$n, dropped:(if $s then $s.dropped else .dropped end),
          events:(if $s then $s.events else null end), seconds:.duration_s, cmds_per_s:($n / .duration_s),
          lost_completes, unattributed,
          ns_per_cmd:.bpf_stats.ns_per_cmd,
          programs:[.bpf_stats.programs[] | select(.run_cnt > 0) | {name, run_cnt, ns_per_run, ns_per_cmd:(.run_time_ns / ($n + (if $n == 0 then 1 else 0 end)))}]}' "$t")"
}
overhead_run() {  # overhead_run MODE ROUND ENGINE
    local m=$1 r=$2 eng=$3 f=$WORK/fio.json t=$WORK/trace.json ev=$WORK/events.jsonl log=$WORK/trace.log iops kpid fpid jpid
    [ "$m" = kvio_events_bin ] && ev=$WORK/events.kvb
    rm -f "$f" "$t" "$ev" "$log"
    local trace=("$KVIO" trace --stats -d "$LNAME" --json "$t")
    if [ "$m" = peer_hist ]; then
        [ -n "$PEER" ] || { echo "bench: peer_hist needs KVIO_BENCH_PEER (a kvio binary)" >&2; return 1; }
        trace=("$PEER" trace --stats -d "$LNAME" --json "$t")
    fi
    case $m in
    untraced)
        fio $(fio_args "$eng" "$f") >/dev/null
        record overhead "$m" "$(jq -c --argjson r "$r" --arg e "$eng" '{round:$r, engine:$e, iops:.jobs[0].read.iops}' "$f")"
        add_syscall_ns "$(syscall_ns)" ;;
    kvio_child|kvio_events|kvio_events_bin)
        local extra=()
        [ "$m" = kvio_events ] && extra=(--events "$ev")
        [ "$m" = kvio_events_bin ] && extra=(--events "$ev" --events-format bin)
        "${trace[@]}" -q "${extra[@]}" -- fio $(fio_args "$eng" "$f") >/dev/null 2>"$log"
        iops=$(jq '.jobs[0].read.iops' "$f")
        local sum=null
        if [ "$m" = kvio_events_bin ]; then sum=$("$KVIO" dump "$ev" | tail -n 1); elif [ "$m" = kvio_events ]; then sum=$(tail -n 1 "$ev"); fi
        kvio_record "$m" "$r" "$eng" "$iops" "$t" "$sum" ;;
    kvio_hist|kvio_comm|kvio_comm_block|peer_hist|kvio_files)
        local filt=()
        [ "$m" = kvio_files ] && filt=(--files)
        [ "$m" = kvio_comm ] && filt=(-c fio)
        [ "$m" = kvio_comm_block ] && filt=(-c fio --block-only)
        "${trace[@]}" "${filt[@]}" >/dev/null 2>"$log" &
        kpid=$!
        wait_for "$log" '^kvio trace: tracing' 60 || { kill -INT $kpid; wait $kpid; echo "bench: $m did not attach" >&2; return 1; }
        fio $(fio_args "$eng" "$f") >/dev/null
        local sc
        sc=$(syscall_ns)   # getppid is not a traced syscall: no kvio program runs for it
        kill -INT $kpid; wait $kpid || true
        kvio_record "$m" "$r" "$eng" "$(jq '.jobs[0].read.iops' "$f")" "$t"
        add_syscall_ns "$sc" ;;
    kvio_listen)
        "${trace[@]}" --listen 127.0.0.1:0 >/dev/null 2>"$log" &
        kpid=$!
        wait_for "$log" '^kvio trace: tracing' 60 || { kill -INT $kpid; wait $kpid; echo "bench: $m did not attach" >&2; return 1; }
        local url spid n
        url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$log")
        : > "$WORK/scrapes"
        ( while :; do curl -sf -o /dev/null "$url" && echo >> "$WORK/scrapes"; sleep 1; done ) &
        spid=$!
        fio $(fio_args "$eng" "$f") >/dev/null
        kill $spid; wait $spid 2>/dev/null || true
        kill -INT $kpid; wait $kpid || true
        n=$(wc -l < "$WORK/scrapes")
        kvio_record "$m" "$r" "$eng" "$(jq '.jobs[0].read.iops' "$f")" "$t"
        local last   # the record gets the number of scrapes answered during the fio run
        last=$(tail -n 1 "$RAW" | jq -c --argjson n "$n" '. + {scrapes: $n}')
        sed -i '$ d' "$RAW"
        echo "$last" >> "$RAW" ;;
    kvio_pid)
        # fio forks its job process at once and starts its I/O after startdelay: trace that process by PID
        fio $(fio_args "$eng" "$f" --startdelay=4) >/dev/null &
        fpid=$!
        for ((i = 0; i < 50; i++)); do jpid=$(pgrep -P $fpid | head -n 1); [ -n "$jpid" ] && break; sleep 0.1; done
        "${trace[@]}" -p "$jpid" >/dev/null 2>"$log" &
        kpid=$!
        if ! wait_for "$log" '^kvio trace: tracing' 4; then echo "bench: warning: -p attach later than fio's startdelay, round $r skipped" >&2; wait $fpid; kill -INT $kpid; wait $kpid; return 1; fi
        wait $fpid
        kill -INT $kpid; wait $kpid || true
        kvio_record "$m" "$r" "$eng" "$(jq '.jobs[0].read.iops' "$f")" "$t" ;;
    bpftrace)
        local bo=$WORK/bt.out before a b
        before=$(bpftool -j prog show | jq -c '[.[].id]')
        bpftrace -B line "$HERE/bpftrace/kvio_equiv.bt" "$DEVT" fio > "$bo" 2> "$WORK/bt.err" &
        BTPID=$!
        # bpftrace compiles the script with LLVM first: seconds when idle, a minute on a loaded machine
        if ! wait_for "$bo" '^Attaching' 180; then
            stop_bpftrace
            echo "bench: warning: bpftrace did not attach within 180 s, round $r skipped: $(cat "$WORK/bt.err")" >&2
            return 1
        fi
        sleep 0.5   # "Attaching" is printed before the last probe is attached
        a=$(bt_progs "$before")
        fio $(fio_args "$eng" "$f") >/dev/null
        b=$(bt_progs "$before")
        local sc
        sc=$(syscall_ns)   # after the program counts: bpftrace's raw_syscalls programs run for these calls too
        stop_bpftrace
        local n lost
        n=$(awk '/^@cmds:/ {print $2}' "$bo"); n=${n:-0}
        lost=$(cat "$bo" "$WORK/bt.err" | awk '/Lost [0-9]+ events/ {for (i = 1; i < NF; i++) if ($i == "Lost") s += $(i + 1)} END {print s + 0}')
        record overhead "$m" "$(jq -c --argjson r "$r" --arg e "$eng" --argjson n "$n" --argjson l "$lost" --argjson a "$a" --argjson b "$b" \
            '($a | map({key: (.id | tostring), value: .}) | from_entries) as $A |
             [$b[] | ($A[.id | tostring] // {run_cnt: 0, run_time_ns: 0}) as $q |
              {name, run_cnt: (.run_cnt - $q.run_cnt), run_time_ns: (.run_time_ns - $q.run_time_ns)} | select(.run_cnt > 0)] as $d |
             $n as $c |   # per command of the traced device (@cmds), as for kvio
             {round:$r, engine:$e, iops:.jobs[0].read.iops, cmds:$n, dropped:$l,
              ns_per_cmd:(if $c > 0 then ([$d[].run_time_ns] | add) / $c else null end),
              programs:[$d[] | {name, run_cnt, ns_per_run:(.run_time_ns / .run_cnt), ns_per_cmd:(if $c > 0 then .run_time_ns / $c else null end)}]}' "$f")"
        add_syscall_ns "$sc" ;;
    esac
}
if has_stage overhead; then
    echo "== overhead: fio randread 4 KiB QD 32 (direct) on $LOOP (loop over tmpfs), ${SECS} s x $ROUNDS rounds, engines: $ENGINES"
    STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
    sysctl -qw kernel.bpf_stats_enabled=1   # for bpftrace's programs; kvio enables its own with --stats
    ${CC:-cc} -O2 -o "$WORK/syscall_cost" "$HERE/syscall_cost.c" || die "cannot compile bench/syscall_cost.c (CC=${CC:-cc})"
    for eng in $ENGINES; do fio $(fio_args "$eng" "$WORK/warmup.json") >/dev/null; done   # warm up device, fio, page tables
    for ((r = 1; r <= ROUNDS; r++)); do
        for eng in $ENGINES; do
            for ((k = 0; k < ${#OVERHEAD_MODES[@]}; k++)); do
                m=${OVERHEAD_MODES[$(( (k + r - 1) % ${#OVERHEAD_MODES[@]} ))]}
                overhead_run "$m" "$r" "$eng" || continue
                printf '  round %d %-8s %-16s %s\n' "$r" "$eng" "$m" "$(tail -n 1 "$RAW" | jq -r '"\(.iops|floor) IOPS" +
                    (if .ns_per_cmd then ", \(.ns_per_cmd|floor) ns/cmd of BPF" else "" end) +
                    (if .cmds then ", \(.cmds) cmds, \(.dropped) dropped" else "" end) +
                    (if .syscall_ns then ", getppid \(.syscall_ns) ns" else "" end)')"
            done
        done
    done
    sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; STATS_WAS=""
fi

# ---------------------------------------------------------------- files: --files' cost per program
if has_stage files; then
    echo "== files: fio 4 KiB randread/randwrite QD 32 O_DIRECT on ext4 over a loop device, ${SECS} s x $ROUNDS rounds, engines: $ENGINES"
    bash "$HERE/files_cost.sh" "$KVIO" "$RAW" "$ROUNDS" "$SECS" "$ENGINES"
    jq -s -f "$HERE/files_cost.jq" "$RAW" > "$OUT/files_cost.json"
    jq -r '.[] | "  \(.engine) \(.rw) (load \(.load1.min)-\(.load1.max)): " +
        ([.modes[] | "\(.mode) \(.ns_per_cmd | floor) ns/cmd (+\(if .added_vs_plain == null then "?" else (.added_vs_plain | floor) end))"] | join(", "))' "$OUT/files_cost.json"
fi

# ---------------------------------------------------------------- gen vs fio
if has_stage gen; then
    GEN_MODEL=(--model llama3.1-8b --chunk-tokens 256)
    GEN_CHUNKS=${KVIO_BENCH_GEN_CHUNKS:-8}
    echo "== gen: kvio gen vs fio on $LOOP, same bytes, block size = kvio gen's transfer cap, $ROUNDS rounds"
    for cfg in "posix 1 psync" "io_uring 8 io_uring"; do
        read -r eng qd fioeng <<< "$cfg"
        for ((r = 1; r <= ROUNDS; r++)); do
            "$KVIO" gen "${GEN_MODEL[@]}" --num-chunks "$GEN_CHUNKS" --target "$LOOP" --engine "$eng" --qd "$qd" \
                --force -q > "$WORK/gen.out"
            # "..., object B B, transfer cap C B, qd Q" / "  store N objects B bytes ..." / "  total B bytes in S s = M MB/s"
            cap=$(grep -o 'transfer cap [0-9]*' "$WORK/gen.out" | awk '{print $3}')
            sbytes=$(awk '$1 == "store" {print $4}' "$WORK/gen.out")
            lbytes=$(awk '$1 == "load" {print $4}' "$WORK/gen.out")
            read -r gbytes gsecs <<< "$(awk '$1 == "total" {print $2, $5}' "$WORK/gen.out")"
            extra=()
            [ "$fioeng" = io_uring ] && extra=(--fixedbufs=1)
            fio --filename="$LOOP" --direct=1 --ioengine="$fioeng" --iodepth="$qd" --bs="$cap" --offset=1M "${extra[@]}" \
                --name=store --rw=write --size="$sbytes" \
                --name=load --stonewall --rw=read --size="$lbytes" \
                --output-format=json --output="$WORK/fio.json" >/dev/null
            record gen "$eng" "$(jq -c --argjson r "$r" --argjson qd "$qd" --arg fe "$fioeng" --argjson cap "$cap" \
                --argjson gb "$gbytes" --argjson gs "$gsecs" \
                '([.jobs[] | .read.io_bytes + .write.io_bytes] | add) as $fb | ([.jobs[].job_runtime] | add / 1000) as $fs |
                 {round:$r, qd:$qd, fio_engine:$fe, bs:$cap, gen_bytes:$gb, gen_s:$gs, gen_mbps:($gb / $gs / 1e6),
                  fio_bytes:$fb, fio_s:$fs, fio_mbps:($fb / $fs / 1e6), ratio:(($gb / $gs) / ($fb / $fs))}' "$WORK/fio.json")"
            printf '  round %d %-8s QD %d  %s\n' "$r" "$eng" "$qd" "$(tail -n 1 "$RAW" | jq -r '"kvio gen \(.gen_mbps|floor) MB/s, \(.fio_mbps|floor) MB/s, ratio \(.ratio*1000|round/1000)"')"
        done
    done
fi
# ---------------------------------------------------------------- kvio drives around a fio run: its cost
# docs/performance.md, "kvio drives": what a user pays for kvio drives on the job's own figure, and which part of it
# pays what. One job file (the overhead stage's fio job); per round and device, four runs in an order that rotates
# each round, each paired with `plain` of the same round and device:
#   plain   fio JOB
#   bwlog   fio with the job text kvio drives writes (its [global] section: the bandwidth log), taken from a kvio drives
#           run before the rounds, the log's path moved into $WORK
#   trace   fio JOB under the tracer kvio drives starts (kvio trace -q -d DISK --block-only --d2c-sample 16 --json,
#           waited for through --ready-file; drives/target_run.h tracer_sampling: this kernel has the finished counts
#           its depth needs), plus --stats: its BPF ns per command (the statistics' own cost, two clock reads per
#           program run, is in this variant's IOPS and not in kvio drives')
#   trace_before  the same with --qd-sample 16 (what kvio drives ran before): per program, before against after
#   bpftrace  fio JOB under bench/bpftrace/drives_equiv.bt DEVT (the same figures as a bpftrace user writes them: issue
#           time per command keyed by sector, D2C and size histograms), its programs' run time from bpf_stats
#           (kernel.bpf_stats_enabled=1 for its runs only) over its @cmds: the peer of `trace`, paired per round
#   drives  kvio drives --job JOB --drive bench=LOOP --rounds 1 --probe-seconds 0 (the loop device holds only zeros,
#           so it is not refused): fio's own IOPS from drives.json
# Devices (KVIO_BENCH_DRIVES_DEVICES, default "ram disk throttled"): ram = the overhead stage's loop device over a
# private tmpfs
# (CPU-bound: any CPU the tracer takes is throughput lost); disk = a loop device with direct I/O over a written file
# in $WORK on the root filesystem (on this VM's virtio disk still CPU-heavy: the host's emulation and the loop
# worker take the CPUs fio would use); throttled = a loop device over a small private tmpfs whose reads the blkio
# controller (cgroup v1) holds at KVIO_BENCH_DRIVES_THROTTLE_IOPS (20000) for every run of its rounds: a drive slower
# than the CPUs, where the tracer's CPU is spare CPU, as for most real drives a host compares. Per run: the
# CPU the whole machine spent (/proc/stat busy time over the run, every process's, other jobs' too) per command, and
# fio's own CPU per command (its user + system time as its JSON reports it: not other jobs').
DV_ROUNDS=${KVIO_BENCH_DRIVES_ROUNDS:-$ROUNDS}
read -r -a DV_DEVICES <<< "${KVIO_BENCH_DRIVES_DEVICES:-ram disk throttled}"
DV_MODES=(plain bwlog trace trace_before bpftrace drives)
DV_DUTY=${KVIO_BENCH_DRIVES_DUTY-0.5/5}   # kvio drives' tracer duty cycle (drives/target_run.h kTraceDuty)
DV_BEFORE=${KVIO_BENCH_DRIVES_BEFORE:-}   # another build's kvio, its kvio drives paired as drives_before
[ -n "$DV_BEFORE" ] && DV_MODES+=(drives_before)
DISK_LOOP=""
THR_LOOP="" THR_CG=""
THR_IOPS=${KVIO_BENCH_DRIVES_THROTTLE_IOPS:-20000}
# dv_device NAME: the loop device of a drives-stage device name
dv_device() { case $1 in disk) echo "$DISK_LOOP" ;; throttled) echo "$THR_LOOP" ;; *) echo "$LOOP" ;; esac; }
cpu_busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
# drives_run MODE DEVICE_PATH ROUND: prints {"iops": N, "busy_s": CPU seconds busy, ...} of one run
drives_run() {
    local m=$1 dev=$2 out=$WORK/dv-$1-r$3 t0 t1="" iops extra='{}' busy=null
    # the throttled device's runs (fio, kvio drives and the tracers) in its blkio cgroup: this subshell and its children
    [ "$dev" = "$THR_LOOP" ] && echo "$BASHPID" > "$THR_CG/cgroup.procs"
    rm -rf "$out" "$out".*
    t0=$(cpu_busy_ticks)
    case $m in
    plain)
        fio "$WORK/drives-${dev##*/}.fio" --output-format=json --output="$out.json" >/dev/null
        iops=$(jq '.jobs[0].read.iops' "$out.json") ;;
    bwlog)
        fio "$WORK/drives-${dev##*/}.bw.fio" --output-format=json --output="$out.json" >/dev/null
        iops=$(jq '.jobs[0].read.iops' "$out.json")
        rm -f "$WORK"/dvbw_bw.*.log ;;
    trace|trace_before)
        # kvio drives' (drives/target_run.h kD2cSample, kTraceDuty); before: every command (no --duty)
        local kpid samp=(--d2c-sample 16)
        [ "$m" = trace ] && [ -n "$DV_DUTY" ] && samp+=(--duty "$DV_DUTY")
        "$KVIO" trace -q -d "${dev#/dev/}" --block-only "${samp[@]}" --json "$out.trace.json" --stats \
            --ready-file "$out.ready" >/dev/null 2>"$out.log" &
        kpid=$!
        for ((i = 0; i < 1200; i++)); do [ -f "$out.ready" ] && break; kill -0 $kpid 2>/dev/null || break; sleep 0.05; done
        [ -f "$out.ready" ] || { kill -TERM $kpid 2>/dev/null; wait $kpid; echo "bench: drives trace did not attach" >&2; cat "$out.log" >&2; return 1; }
        t0=$(cpu_busy_ticks)
        fio "$WORK/drives-${dev##*/}.fio" --output-format=json --output="$out.json" >/dev/null
        t1=$(cpu_busy_ticks)
        kill -TERM $kpid; wait $kpid || true
        iops=$(jq '.jobs[0].read.iops' "$out.json")
        extra=$(jq -c '([.devices[] | .read.cmds + .write.cmds] | add // 0) as $n |
            {cmds: $n, ns_per_cmd: .bpf_stats.ns_per_cmd, qd_source,
             disk_ns_per_cmd: (.duty.bpf_ns_per_disk_cmd // .bpf_stats.ns_per_cmd),
             traced_share: (if .duty then ([.duty.disks[].traced_share] | max) else 1 end),
             programs: [.bpf_stats.programs[] | select(.run_cnt > 0) | {name, run_cnt, ns_per_run, ns_per_cmd: (.run_time_ns / ($n + (if $n == 0 then 1 else 0 end)))}]}' "$out.trace.json") ;;
    bpftrace)
        local bo=$out.bt before a b n dmm
        dmm=$(cat "/sys/block/${dev#/dev/}/dev")
        before=$(bpftool -j prog show | jq -c '[.[].id]')
        sysctl -qw kernel.bpf_stats_enabled=1   # off again below: bpftrace's run alone pays for it
        bpftrace -B line "$HERE/bpftrace/drives_equiv.bt" $(( ${dmm%:*} << 20 | ${dmm#*:} )) > "$bo" 2> "$out.log" &
        BTPID=$!
        wait_for "$bo" '^Attaching' 180 || { stop_bpftrace; echo "bench: bpftrace did not attach: $(cat "$out.log")" >&2; return 1; }
        sleep 0.5   # "Attaching" is printed before the last probe is attached
        a=$(bt_progs "$before")
        t0=$(cpu_busy_ticks)
        fio "$WORK/drives-${dev##*/}.fio" --output-format=json --output="$out.json" >/dev/null
        t1=$(cpu_busy_ticks)
        b=$(bt_progs "$before")
        sysctl -qw kernel.bpf_stats_enabled=0
        stop_bpftrace
        n=$(awk '/^@cmds:/ {print $2}' "$bo"); n=${n:-0}
        iops=$(jq '.jobs[0].read.iops' "$out.json")
        extra=$(jq -c -n --argjson n "$n" --argjson a "$a" --argjson b "$b" \
            '($a | map({key: (.id | tostring), value: .}) | from_entries) as $A |
             [$b[] | ($A[.id | tostring] // {run_cnt: 0, run_time_ns: 0}) as $q |
              {name, run_cnt: (.run_cnt - $q.run_cnt), run_time_ns: (.run_time_ns - $q.run_time_ns)} | select(.run_cnt > 0)] as $d |
             {cmds: $n, ns_per_cmd: (if $n > 0 then ([$d[].run_time_ns] | add) / $n else null end),
              programs: [$d[] | {name, run_cnt, ns_per_run: (.run_time_ns / .run_cnt), ns_per_cmd: (if $n > 0 then .run_time_ns / $n else null end)}]}') ;;
    drives|drives_before)
        local kv=$KVIO; [ "$m" = drives_before ] && kv=$DV_BEFORE
        "$kv" drives --job "$WORK/drives-${dev##*/}.fio" --drive bench="$dev" --rounds 1 --probe-seconds 0 -o "$out" \
            > "$out.log" 2>&1 || { cat "$out.log" >&2; return 1; }
        iops=$(jq '.targets[0].modes.closed.rounds[0].iops' "$out/drives.json") ;;
    esac
    # kvio drives' busy time would hold its tracer's start (loading BPF) too: the CPU per command is fio's alone
    [ -n "$t1" ] || t1=$(cpu_busy_ticks)
    [ "${m%_before}" = drives ] || busy=$(( t1 - t0 ))
    # fio's own CPU (its threads' user + system time, which fio reports) per command: other jobs' load is not in it
    local fj=$out.json fcpu
    [ "${m%_before}" = drives ] && fj=$out/runs/bench-closed-r1.fio.json
    fcpu=$(jq '.jobs[0] | (.usr_cpu + .sys_cpu) / 100 * .job_runtime / 1000 / (.read.total_ios + .write.total_ios) * 1e6' "$fj")
    jq -c -n --argjson i "$iops" --argjson x "$extra" --argjson b "$busy" --argjson hz "$(getconf CLK_TCK)" --argjson f "$fcpu" \
        '{iops: $i, busy_s: (if $b == null then null else $b / $hz end), fio_cpu_us_per_cmd: $f} + $x'
    rm -rf "$out" "$out".*
}
if has_stage drives; then
    for d in "${DV_DEVICES[@]}"; do
        case $d in
        ram) ;;
        disk)
            mkdir -p "$WORK/dvdisk"
            fallocate -l 1100M "$WORK/dvdisk/disk.img"
            DISK_LOOP=$(losetup -f --show --direct-io=on "$WORK/dvdisk/disk.img")
            [ "$(cat /sys/block/${DISK_LOOP#/dev/}/loop/dio)" = 1 ] || echo "bench: warning: $DISK_LOOP runs without direct I/O" >&2
            dd if=/dev/zero of="$DISK_LOOP" bs=1M count=1100 oflag=direct status=none ;;   # every block written once
        throttled)
            [ -d /sys/fs/cgroup/blkio ] || die "KVIO_BENCH_DRIVES_DEVICES: throttled needs the cgroup v1 blkio controller"
            mkdir -p "$WORK/dvthr"
            mount -t tmpfs -o size=300m kvio-bench-thr "$WORK/dvthr"
            truncate -s 256M "$WORK/dvthr/disk.img"
            THR_LOOP=$(losetup -f --show --direct-io=on "$WORK/dvthr/disk.img")
            dd if=/dev/zero of="$THR_LOOP" bs=1M count=256 oflag=direct status=none
            THR_CG=/sys/fs/cgroup/blkio/kvio-bench-$$
            mkdir "$THR_CG"
            echo "$(cat "/sys/block/${THR_LOOP#/dev/}/dev") $THR_IOPS" > "$THR_CG/blkio.throttle.read_iops_device" ;;
        *) die "KVIO_BENCH_DRIVES_DEVICES: unknown device $d (ram, disk, throttled)" ;;
        esac
    done
    for d in "${DV_DEVICES[@]}"; do
        dev=$(dv_device "$d")
        printf '[global]\nfilename=%s\ndirect=1\nioengine=libaio\niodepth=32\nbs=4k\nrw=randread\nnorandommap\nrandrepeat=0\ntime_based\nruntime=%s\n[randread]\n' \
            "$dev" "$SECS" > "$WORK/drives-${dev##*/}.fio"
        # the job text kvio drives writes, from a run of its own (also a warm-up): the bandwidth log moved into $WORK
        "$KVIO" drives --job "$WORK/drives-${dev##*/}.fio" --drive bench="$dev" --rounds 1 --probe-seconds 0 -o "$WORK/dv-warm" \
            > "$WORK/dv-warm.log" 2>&1 || { cat "$WORK/dv-warm.log" >&2; die "kvio drives failed on $dev"; }
        sed "s|^write_bw_log=.*|write_bw_log=$WORK/dvbw|" "$WORK/dv-warm/runs/bench-closed-r1.job.fio" > "$WORK/drives-${dev##*/}.bw.fio"
        rm -rf "$WORK/dv-warm" "$WORK/dv-warm.log"
    done
    echo "== drives: fio 4 KiB randread QD 32 (libaio, ${SECS} s) plainly / with kvio drives' bandwidth log / under its tracer (now, before) / under bpftrace / inside kvio drives"
    # kernel.bpf_stats_enabled only around bpftrace's runs (drives_run): with it on, every BPF program run pays two
    # clock reads more, so kvio drives' runs would carry a cost kvio drives does not have (it never enables stats);
    # kvio's `trace` runs enable their own with --stats, as the figures they report need
    STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
    sysctl -qw kernel.bpf_stats_enabled=0
    for ((r = 1; r <= DV_ROUNDS; r++)); do
        for d in "${DV_DEVICES[@]}"; do
            dev=$(dv_device "$d")
            load0=$(cut -d' ' -f1 /proc/loadavg)
            res='{}'
            for ((k = 0; k < ${#DV_MODES[@]}; k++)); do
                m=${DV_MODES[$(( (k + r - 1) % ${#DV_MODES[@]} ))]}
                x=$(drives_run "$m" "$dev" "$r") || break 2
                res=$(jq -c -n --argjson a "$res" --argjson x "$x" --arg m "$m" '$a + {($m): $x}')
            done
            record drives "$d" "$(jq -c -n --argjson r "$r" --argjson a "$res" --arg l0 "$load0" --arg l1 "$(cut -d' ' -f1 /proc/loadavg)" \
                '{round: $r, load1: ((($l0 | tonumber) + ($l1 | tonumber)) / 2), plain_iops: $a.plain.iops, bwlog_iops: $a.bwlog.iops,
                  trace_iops: $a.trace.iops, trace_before_iops: $a.trace_before.iops, bpftrace_iops: $a.bpftrace.iops,
                  drives_iops: $a.drives.iops,
                  bwlog_cost_pct: ((1 - $a.bwlog.iops / $a.plain.iops) * 100), trace_cost_pct: ((1 - $a.trace.iops / $a.plain.iops) * 100),
                  trace_before_cost_pct: ((1 - $a.trace_before.iops / $a.plain.iops) * 100),
                  bpftrace_cost_pct: ((1 - $a.bpftrace.iops / $a.plain.iops) * 100),
                  trace_before_ns_per_cmd: $a.trace_before.ns_per_cmd, saving_ns: (if $a.trace.ns_per_cmd and $a.trace_before.ns_per_cmd then $a.trace_before.ns_per_cmd - $a.trace.ns_per_cmd else null end),
                  bpftrace_ns_per_cmd: $a.bpftrace.ns_per_cmd, bpftrace_cmds: $a.bpftrace.cmds,
                  ns_vs_bpftrace: (if $a.bpftrace.ns_per_cmd and $a.trace.ns_per_cmd then $a.trace.ns_per_cmd / $a.bpftrace.ns_per_cmd else null end),
                  cost_pct: ((1 - $a.drives.iops / $a.plain.iops) * 100),
                  drives_before_cost_pct: (if $a.drives_before then (1 - $a.drives_before.iops / $a.plain.iops) * 100 else null end),
                  trace_disk_ns_per_cmd: $a.trace.disk_ns_per_cmd, trace_traced_share: $a.trace.traced_share,
                  bpf_cpu_share_pct: (($a.trace.disk_ns_per_cmd // 0) * $a.plain.iops / ('"$(nproc)"' * 1e9) * 100),
                  bpf_cpu_share_before_pct: (($a.trace_before.ns_per_cmd // 0) * $a.plain.iops / ('"$(nproc)"' * 1e9) * 100),
                  trace_ns_per_cmd: $a.trace.ns_per_cmd, trace_qd_source: $a.trace.qd_source, trace_programs: $a.trace.programs,
                  trace_before_programs: $a.trace_before.programs, bpftrace_programs: $a.bpftrace.programs,
                  fio_cpu_us_per_cmd: ($a | map_values(.fio_cpu_us_per_cmd)),
                  busy_us_per_cmd: ([$a | to_entries[] | select(.value.busy_s != null) | {key, value: (.value.busy_s / (.value.iops * '"$SECS"') * 1e6)}] | from_entries)}')"
            printf '  %-4s round %d %s\n' "$d" "$r" "$(tail -n 1 "$RAW" | jq -r '"load \(.load1*10|round/10): fio \(.plain_iops|floor) IOPS; bw log \(.bwlog_cost_pct*10|round/10) %, tracer \(.trace_cost_pct*10|round/10) % (\(.trace_ns_per_cmd // 0|floor) BPF ns/cmd, depth from \(.trace_qd_source); before \(.trace_before_cost_pct*10|round/10) %, \(.trace_before_ns_per_cmd|floor) ns; bpftrace \(.bpftrace_cost_pct*10|round/10) %, \(.bpftrace_ns_per_cmd // 0|floor) ns, kvio/bpftrace \(.ns_vs_bpftrace // 0|.*1000|round/1000)), kvio drives \(.cost_pct*10|round/10) % (before \(.drives_before_cost_pct // 0|.*10|round/10) %), duty \(.trace_disk_ns_per_cmd // 0|floor) ns per disk cmd, traced \(.trace_traced_share*1000|round/10) %; fio CPU us/cmd plain \(.fio_cpu_us_per_cmd.plain*100|round/100), traced \(.fio_cpu_us_per_cmd.trace*100|round/100), drives \(.fio_cpu_us_per_cmd.drives*100|round/100)"')"
        done
    done
    sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; STATS_WAS=""
    if [ -n "$DISK_LOOP" ]; then losetup -d "$DISK_LOOP"; DISK_LOOP=""; rm -rf "$WORK/dvdisk"; fi
    if [ -n "$THR_LOOP" ]; then losetup -d "$THR_LOOP"; THR_LOOP=""; umount "$WORK/dvthr"; rmdir "$THR_CG"; THR_CG=""; fi
fi

if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=""; umount "$MNT"; fi

# ---------------------------------------------------------------- validate
# synth N_OBJECTS N_COMMANDS DIR: validate's generator; object size chosen so that ops x commands/op ~ N_COMMANDS
# (a store = 4 KiB header + payload/512 KiB commands + 1 noise write, a load = payload/512 KiB + 1 noise write)
synth() {  # synth N_OBJECTS N_COMMANDS DIR [--synth-bin]
    local per=$(( $2 / $1 )) chunks
    chunks=$(( (per - 2) > 1 ? per - 2 : 1 ))
    mkdir -p "$3"
    "$KVIO" validate --synth "$3" --synth-objects "$1" --synth-object-bytes $(( chunks * 512 * 1024 )) --synth-noise-per-op 1 \
        ${4:-} >/dev/null
}
validate_run() {  # validate_run LABEL DIR OBJECTS [EVENTS_FILE_NAME]
    /usr/bin/time -v -o "$WORK/time.txt" "$KVIO" validate --commands "$2/${4:-events.jsonl}" --semantic "$2/semantic.jsonl" \
        --join offset --json "$WORK/val.json" > /dev/null
    record validate "$1" "$(jq -c --argjson t "$(time_json "$WORK/time.txt")" --argjson o "$3" \
        '{objects:$o, commands:.join.records.cmds, exact_match:.exact_match, scored:.objects} + $t |
         . + {cmds_per_s:(.commands / .elapsed_s), cmds_per_cpu_s:(.commands / .cpu_s)}' "$WORK/val.json")"
    printf '  %-14s %s\n' "$1" "$(tail -n 1 "$RAW" | jq -r '"\(.commands) commands, \(.objects) objects: \(.elapsed_s) s, \(.cmds_per_s|floor) cmds/s (\(.cmds_per_cpu_s|floor) per CPU-s), peak RSS \(.peak_rss_kib/1024|floor) MiB, exact \(.exact_match)/\(.scored)"')"
}
if has_stage validate || has_stage distill; then
    echo "== validate: synthetic streams from 'kvio validate --synth' (offset join)"
    synth "$NOBJ" "$NCMDS" "$WORK/big"
fi
if has_stage validate; then
    validate_run big "$WORK/big" "$NOBJ"
    # The same commands as a binary capture (kvio.events.bin/1, `kvio trace --events-format bin`).
    synth "$NOBJ" "$NCMDS" "$WORK/big_bin" --synth-bin; validate_run big_bin "$WORK/big_bin" "$NOBJ" events.kvb; rm -rf "$WORK/big_bin"
    synth "$NOBJ" $(( NCMDS / 10 )) "$WORK/few_cmds";  validate_run few_cmds "$WORK/few_cmds" "$NOBJ";  rm -rf "$WORK/few_cmds"
    synth $(( NOBJ / 10 )) $(( NCMDS / 10 )) "$WORK/few_objs"; validate_run few_objs "$WORK/few_objs" $(( NOBJ / 10 )); rm -rf "$WORK/few_objs"
fi

# ---------------------------------------------------------------- distill
if has_stage distill; then
    echo "== distill: kvio distill --events (the validate stage's kvio.events/1 file)"
    /usr/bin/time -v -o "$WORK/time.txt" "$KVIO" distill --events "$WORK/big/events.jsonl" --filename "$WORK/target" \
        -o "$WORK/job.ini" > /dev/null
    record distill events "$(jq -c -n --argjson t "$(time_json "$WORK/time.txt")" \
        --argjson n "$(grep -c '"type":"cmd"' "$WORK/big/events.jsonl")" --argjson b "$(stat -c %s "$WORK/big/events.jsonl")" \
        '{records:$n, file_bytes:$b} + $t | . + {records_per_s:(.records / .elapsed_s)}')"
    printf '  %s\n' "$(tail -n 1 "$RAW" | jq -r '"\(.records) records (\(.file_bytes/1048576|floor) MiB): \(.elapsed_s) s, \(.records_per_s|floor) records/s, peak RSS \(.peak_rss_kib/1024|floor) MiB"')"
fi

# ---------------------------------------------------------------- simulate vs fio (vs the Python benchmark)
# The storage-baseline config (every KV entry goes to the storage tier: --gpu-mem-gb 0 --cpu-mem-gb 0, no generation
# sleep) on a tmpfs directory and on ext4 over a loop device, then its fio peer (bench/sim_fio_job.jq, from the run's
# own kvio.storage_ops): as many write and read streams as the simulation had storage ops of each kind in flight on
# average, files of the sizes of the run's own entry-size distribution, whole-file writes with fsync at each close,
# whole-file reads after POSIX_FADV_DONTNEED, the same bytes of each kind, all streams at once. Ratio per round =
# simulation storage bytes/s (over its elapsed time) / fio bytes/s (over its longest job); KVIO_BENCH_SIM_ROUNDS
# (3) paired rounds, min / median / max. Also the simulation's own time per storage op of >= 16 MiB beside the time
# in its system calls (kvio.storage_ops.large_entries; target <= 5 %). With MLPERF_KV_DIR pointing to a checkout of
# the Python benchmark (kv-cache.py or kv_cache_benchmark/kv-cache.py), the same flags run with it in every round
# (MLPERF_PYTHON, default a python3 that imports numpy and yaml) and the kvio/Python bytes/s ratio is printed.
SIM_USERS=${KVIO_BENCH_SIM_USERS:-20}
SIM_SECS=${KVIO_BENCH_SIM_SECS:-20}
SIM_ROUNDS=${KVIO_BENCH_SIM_ROUNDS:-3}
SIM_FLAGS=(--model llama3.1-8b --num-users "$SIM_USERS" --duration "$SIM_SECS" --gpu-mem-gb 0 --cpu-mem-gb 0
           --generation-mode none --seed 42)
# sim_mbps RESULTS.json [moved]: storage-tier MB/s (10^6 B/s) of a simulate or kv-cache.py results file over its
# elapsed time: bytes of completed ops; with "moved", also the bytes that ops cut by the stop had moved (fio counts
# every byte it moved; the Python benchmark finishes its ops in flight instead, so its comparison leaves them out)
sim_mbps() {
    jq --arg moved "${2:-}" '.summary.cache_stats as $c | (($c.tier_storage_kv_bytes_written_gb + $c.tier_storage_kv_bytes_read_gb)
        * 1073741824 + (if $moved != "" then .kvio.cache.cut_bytes_moved // 0 else 0 end)) / .summary.elapsed_time / 1e6' "$1"
}
python_for_mlperf() {
    local p
    for p in ${MLPERF_PYTHON:-} python3 /usr/bin/python3; do
        "$p" -c 'import numpy, yaml' 2>/dev/null && { echo "$p"; return 0; }
    done
    return 1
}
simulate_vs_fio() {  # simulate_vs_fio LABEL DIR ROUND
    local label=$1 dir=$2 round=$3 avail load0
    rm -rf "$dir/cache" "$dir/fio"; mkdir -p "$dir/cache" "$dir/fio"
    load0=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -v -o "$WORK/sim_time.txt" "$KVIO" simulate "${SIM_FLAGS[@]}" --cache-dir "$dir/cache" --quiet \
        --progress-interval 0 --output "$WORK/sim.json" > "$WORK/sim.out" 2>&1 || { cat "$WORK/sim.out" >&2; return 1; }
    rm -rf "$dir/cache"
    [ "$(jq '.kvio.storage_ops.write.ops' "$WORK/sim.json")" -gt 0 ] || { echo "bench: simulate on $label wrote nothing" >&2; return 1; }
    avail=$(df -B1 --output=avail "$dir" | tail -n 1)
    for part in prep main; do
        jq -r --arg dir "$dir/fio" --argjson budget $(( avail * 8 / 10 )) --arg part "$part" -f "$HERE/sim_fio_job.jq" \
            "$WORK/sim.json" > "$WORK/fio_$part.ini"
        /usr/bin/time -v -o "$WORK/fio_time.txt" fio "$WORK/fio_$part.ini" --output-format=json --output="$WORK/fio_$part.json" > "$WORK/fio.out" 2>&1 ||
            { echo "bench: fio ($part) on $label failed: $(grep -m 3 -i 'error' "$WORK/fio.out")" >&2; rm -rf "$dir/fio"; return 1; }
    done
    rm -rf "$dir/fio"
    record simulate "$label" "$(jq -c --argjson round "$round" --slurpfile s "$WORK/sim.json" --argjson sm "$(sim_mbps "$WORK/sim.json" moved)" \
        --argjson smc "$(sim_mbps "$WORK/sim.json")" --argjson l0 "$load0" --argjson l1 "$(cut -d' ' -f1 /proc/loadavg)" \
        --argjson st "$(time_json "$WORK/sim_time.txt")" --argjson ft "$(time_json "$WORK/fio_time.txt")" \
        '([.jobs[] | .read.io_bytes + .write.io_bytes] | add) as $fb |
         ([.jobs[] | [.read.runtime, .write.runtime] | max] | max / 1000) as $fs |
         $s[0].summary.cache_stats as $cs | $s[0].kvio.storage_ops as $so |
         {round:$round, users:'"$SIM_USERS"', load_start:$l0, load_end:$l1, load1:(($l0 + $l1) / 2), sim_s:$s[0].summary.elapsed_time, sim_mbps:$sm, sim_completed_mbps:$smc,
          drain_s:$s[0].kvio.stop.drain_s, cut_ops:$s[0].kvio.cache.cut_ops,
          write_streams:([.jobs[] | select(.jobname | startswith("write"))] | length),
          read_streams:([.jobs[] | select(.jobname | startswith("read"))] | length),
          mean_in_flight:$so.mean_in_flight, write_ops:$so.write.ops, read_ops:$so.read.ops,
          fio_bytes:$fb, fio_s:$fs, fio_mbps:($fb / $fs / 1e6), ratio:($sm / ($fb / $fs / 1e6)),
          sim_cpu_s:$st.cpu_s, fio_cpu_s:$ft.cpu_s,
          cpu_per_byte_fio_over_sim:(($ft.cpu_s / $fb) / ($st.cpu_s / ($sm * 1e6 * $s[0].summary.elapsed_time))),
          large_write_overhead:$so.large_entries.write.overhead_over_syscall,
          large_read_overhead:$so.large_entries.read.overhead_over_syscall,
          large_write_ops:$so.large_entries.write.measured_ops, large_read_ops:$so.large_entries.read.measured_ops,
          write_host_over_device_p50:(if ($cs.storage_write_device_p50_ms // 0) > 0
              then $cs.storage_write_host_p50_ms / $cs.storage_write_device_p50_ms else null end),
          read_host_over_device_p50:(if ($cs.storage_read_device_p50_ms // 0) > 0
              then $cs.storage_read_host_p50_ms / $cs.storage_read_device_p50_ms else null end)}' "$WORK/fio_main.json")"
    printf '  %-6s round %s: %s\n' "$label" "$round" "$(tail -n 1 "$RAW" | jq -r '"load \(.load_start)-\(.load_end): kvio simulate \(.sim_mbps|floor) MB/s (drain \(.drain_s*10|round/10) s, \(.write_ops) writes, \(.read_ops) reads, \(.mean_in_flight*10|round/10) in flight), fio \(.write_streams)+\(.read_streams) streams \(.fio_mbps|floor) MB/s, ratio \(.ratio*1000|round/1000), CPU per byte fio/kvio \(.cpu_per_byte_fio_over_sim*100|round/100); own time / syscall time, >= 16 MiB, p50: write \(.large_write_overhead.p50 // "-") read \(.large_read_overhead.p50 // "-")"')"
    if [ -n "${MLPERF_KV_DIR:-}" ]; then
        local py=$MLPERF_KV_DIR/kv-cache.py pyexe kmbps
        [ -f "$py" ] || py=$MLPERF_KV_DIR/kv_cache_benchmark/kv-cache.py
        [ -f "$py" ] || { echo "bench: MLPERF_KV_DIR=$MLPERF_KV_DIR has no kv-cache.py" >&2; return 0; }
        pyexe=$(python_for_mlperf) || { echo "bench: no python3 imports numpy and yaml (apt install python3-numpy python3-yaml)" >&2; return 0; }
        kmbps=$(tail -n 1 "$RAW" | jq .sim_completed_mbps)
        mkdir -p "$dir/cache"
        (cd "$(dirname "$py")" && /usr/bin/time -v -o "$WORK/py_time.txt" "$pyexe" "$py" "${SIM_FLAGS[@]}" --cache-dir "$dir/cache" \
            --output "$WORK/py.json") > "$WORK/py.out" 2>&1 ||
            { echo "bench: the Python benchmark failed, see $WORK/py.out" >&2; tail -3 "$WORK/py.out" >&2; rm -rf "$dir/cache"; return 0; }
        rm -rf "$dir/cache"
        # kv-cache.py stops its clock (elapsed_time) before the join window in which its ops in flight finish and
        # are counted, so its bytes / elapsed_time overstates it; both are also compared over each process's wall
        # time (setup, run and drain: kv-cache.py spends ~25 s draining a 20 s run here) and CPU time per byte.
        record simulate "${label}_python" "$(jq -c -n --argjson round "$round" --argjson p "$(sim_mbps "$WORK/py.json")" --argjson k "$kmbps" \
            --slurpfile ps "$WORK/py.json" --slurpfile ks "$WORK/sim.json" \
            --argjson pt "$(time_json "$WORK/py_time.txt")" --argjson kt "$(time_json "$WORK/sim_time.txt")" \
            '($ps[0].summary.cache_stats | (.tier_storage_kv_bytes_written_gb + .tier_storage_kv_bytes_read_gb) * 1073741824) as $pb |
             ($ks[0].summary.cache_stats | (.tier_storage_kv_bytes_written_gb + .tier_storage_kv_bytes_read_gb) * 1073741824) as $kb |
             {round:$round, py_mbps:$p, kvio_mbps:$k, kvio_over_python:($k / $p),
              py_wall_s:$pt.elapsed_s, kvio_wall_s:$kt.elapsed_s, py_cpu_s:$pt.cpu_s, kvio_cpu_s:$kt.cpu_s,
              kvio_over_python_wall:(($kb / $kt.elapsed_s) / ($pb / $pt.elapsed_s)),
              python_cpu_per_byte_over_kvio:(($pt.cpu_s / $pb) / ($kt.cpu_s / $kb))}')"
        printf '  %-6s round %s: %s\n' "$label" "$round" "$(tail -n 1 "$RAW" | jq -r '"Python benchmark \(.py_mbps|floor) MB/s over its elapsed_time: kvio/Python \(.kvio_over_python*100|round/100)x; over process wall time \(.kvio_over_python_wall*100|round/100)x; Python CPU per byte / kvio \(.python_cpu_per_byte_over_kvio*100|round/100)x"')"
    fi
}
if has_stage simulate; then
    echo "== simulate: storage baseline (${SIM_FLAGS[*]}) vs fio at the same streams, entry sizes and bytes"
    SIMT=$WORK/simtmpfs
    mkdir -p "$SIMT" "$WORK/simext4"
    mount -t tmpfs -o size=6g kvio-bench-sim "$SIMT"
    sim_tmpfs() {
        mkdir -p "$SIMT/dir"
        simulate_vs_fio tmpfs "$SIMT/dir" "$1" || true
        rm -rf "$SIMT/dir"
    }
    sim_loop() {  # ext4 on a loop device (direct I/O) over a file in the same tmpfs: a device path at memory speed
        truncate -s 5500M "$SIMT/disk.img"
        LOOP=$(losetup -f --show --direct-io=on "$SIMT/disk.img")
        mkfs.ext4 -q -F "$LOOP"
        mount "$LOOP" "$WORK/simext4"
        simulate_vs_fio loop "$WORK/simext4" "$1" || true
        umount "$WORK/simext4"; losetup -d "$LOOP"; LOOP=""; rm -f "$SIMT/disk.img"
    }
    for ((r = 1; r <= SIM_ROUNDS; r++)); do  # the order of the two targets alternates, so a load trend hits both
        if ((r % 2)); then sim_tmpfs "$r"; sim_loop "$r"; else sim_loop "$r"; sim_tmpfs "$r"; fi
    done
    umount "$SIMT"
fi

# ---------------------------------------------------------------- one client vs --num-clients 2 vs mpirun -np 2
# The storage-baseline config (SIM_FLAGS; KVIO_BENCH_CLIENT_SECS s, default 10) on one 4 GiB tmpfs: a single
# client, `--num-clients 2` (forked clients) and `mpirun -np 2 ... --mpi`, interleaved in KVIO_BENCH_CLIENT_ROUNDS
# rounds (default 3). Every client runs the full user count (MLPerf's scale-out model), so 2 clients offer twice
# the load. Storage throughput = storage-tier bytes written + read / elapsed_time of the (merged) results; the
# ratios are paired per round (same device, same minute), min / median / max over rounds.
CL_SECS=${KVIO_BENCH_CLIENT_SECS:-10}
CL_ROUNDS=${KVIO_BENCH_CLIENT_ROUNDS:-3}
client_bps() {  # client_bps single|procs|mpi DIR: storage bytes/s of one run
    local kind=$1 dir=$2 out=$WORK/clients.json
    local flags=("${SIM_FLAGS[@]}" --duration "$CL_SECS" --cache-dir "$dir/cache" --quiet --progress-interval 0 --output "$out")
    case $kind in
        single) "$KVIO" simulate "${flags[@]}" ;;
        procs) "$KVIO" simulate "${flags[@]}" --num-clients 2 ;;
        mpi) mpirun --allow-run-as-root --oversubscribe -np 2 "$KVIO" simulate "${flags[@]}" --mpi ;;
    esac > "$WORK/clients.out" 2>&1 || { echo "bench: $kind clients failed:" >&2; tail -5 "$WORK/clients.out" >&2; return 1; }
    rm -rf "$dir/cache"
    jq -r '.summary.cache_stats as $c | ($c.tier_storage_kv_bytes_written_gb + $c.tier_storage_kv_bytes_read_gb)
           * 1073741824 / .summary.elapsed_time' "$out"
}
if has_stage clients; then
    command -v mpirun >/dev/null || die "mpirun is missing (bash scripts/deps.sh installs openmpi-bin)"
    "$KVIO" simulate --help | grep -q 'MPI: built with' || die "$KVIO was built without MPI (libopenmpi-dev missing at build time)"
    echo "== clients: storage baseline (${SIM_FLAGS[*]} --duration $CL_SECS) on one tmpfs: 1 client vs --num-clients 2 vs mpirun -np 2"
    CLT=$WORK/clients
    mkdir -p "$CLT"
    mount -t tmpfs -o size=4g kvio-bench-clients "$CLT"
    for ((r = 1; r <= CL_ROUNDS; r++)); do
        one=$(client_bps single "$CLT") && two=$(client_bps procs "$CLT") && mpi=$(client_bps mpi "$CLT") || break
        record clients "round$r" "$(jq -c -n --argjson a "$one" --argjson b "$two" --argjson c "$mpi" --argjson s "$CL_SECS" \
            '{round:'"$r"', secs:$s, single_mbps:($a / 1e6), procs2_mbps:($b / 1e6), mpi2_mbps:($c / 1e6),
              procs2_over_single:($b / $a), mpi2_over_single:($c / $a), mpi2_over_procs2:($c / $b)}')"
        printf '  round %d %s\n' "$r" "$(tail -n 1 "$RAW" | jq -r '"1 client \(.single_mbps|floor) MB/s, --num-clients 2 \(.procs2_mbps|floor) MB/s (x\(.procs2_over_single*100|round/100)), mpirun -np 2 \(.mpi2_mbps|floor) MB/s (x\(.mpi2_over_single*100|round/100); mpi/procs x\(.mpi2_over_procs2*100|round/100))"')"
    done
    umount "$CLT"
fi

# ---------------------------------------------------------------- simulate --verify-reads: its cost
# The storage-baseline config (SIM_FLAGS; KVIO_BENCH_VERIFY_SECS s, default 10) on one 4 GiB tmpfs (memory speed: the
# check's CPU cost is the largest share there), without and with --verify-reads, paired per round
# (KVIO_BENCH_VERIFY_ROUNDS, default 5; the order alternates so a load trend hits both). Read bytes/s = storage-tier
# bytes read / elapsed_time; the ratio with / without per round, min / median / max over rounds. Beside it, the figure
# load does not move: the check's own CPU time (kvio.cache.verify_reads: thread CPU seconds around each chunk's
# comparison) as GB checked per CPU second and as a share of the storage tier's read time.
VR_SECS=${KVIO_BENCH_VERIFY_SECS:-10}
VR_ROUNDS=${KVIO_BENCH_VERIFY_ROUNDS:-5}
verify_bps() {  # verify_bps plain|verify DIR: "READ TOTAL GB_PER_CPU_S SHARE" (bytes/s; the last two null for plain)
    local kind=$1 dir=$2 out=$WORK/verify.json extra=()
    [ "$kind" = verify ] && extra=(--verify-reads)
    "$KVIO" simulate "${SIM_FLAGS[@]}" --duration "$VR_SECS" --cache-dir "$dir/cache" --quiet --progress-interval 0 \
        --output "$out" "${extra[@]}" > "$WORK/verify.out" 2>&1 \
        || { echo "bench: simulate ($kind) failed:" >&2; tail -5 "$WORK/verify.out" >&2; return 1; }
    rm -rf "$dir/cache"
    [ "$(jq '.kvio.cache.failed_reads' "$out")" -eq 0 ] || { echo "bench: simulate ($kind) had failed reads" >&2; return 1; }
    jq -r '.summary.cache_stats as $c | "\($c.tier_storage_kv_bytes_read_gb * 1073741824 / .summary.elapsed_time) \(
           ($c.tier_storage_kv_bytes_written_gb + $c.tier_storage_kv_bytes_read_gb) * 1073741824 / .summary.elapsed_time) \(
           .kvio.cache.verify_reads.checked_gb_per_cpu_s) \(.kvio.cache.verify_reads.share_of_read_time)"' "$out"
}
if has_stage verify; then
    echo "== verify: simulate storage baseline (${SIM_FLAGS[*]} --duration $VR_SECS) on tmpfs, without and with --verify-reads"
    VRT=$WORK/verify
    mkdir -p "$VRT"
    mount -t tmpfs -o size=4g kvio-bench-verify "$VRT"
    for ((r = 1; r <= VR_ROUNDS; r++)); do
        load0=$(cut -d' ' -f1 /proc/loadavg)
        if ((r % 2)); then
            plain=$(verify_bps plain "$VRT") && checked=$(verify_bps verify "$VRT") || break
        else
            checked=$(verify_bps verify "$VRT") && plain=$(verify_bps plain "$VRT") || break
        fi
        record verify "round$r" "$(jq -c -n --argjson r "$r" --argjson s "$VR_SECS" --arg p "$plain" --arg v "$checked" \
            --arg l0 "$load0" --arg l1 "$(cut -d' ' -f1 /proc/loadavg)" \
            '($p | split(" ") | map(if . == "null" then null else tonumber end)) as $a | ($v | split(" ") | map(if . == "null" then null else tonumber end)) as $b |
             {round: $r, secs: $s, load1: ((($l0 | tonumber) + ($l1 | tonumber)) / 2),
              plain_read_mbps: ($a[0] / 1e6), verify_read_mbps: ($b[0] / 1e6), read_ratio: ($b[0] / $a[0]),
              plain_mbps: ($a[1] / 1e6), verify_mbps: ($b[1] / 1e6), total_ratio: ($b[1] / $a[1]),
              check_gb_per_cpu_s: $b[2], check_share_of_read_time: $b[3]}')"
        printf '  round %d %s\n' "$r" "$(tail -n 1 "$RAW" | jq -r '"load \(.load1*10|round/10): reads \(.plain_read_mbps|floor) MB/s, with --verify-reads \(.verify_read_mbps|floor) MB/s (x\(.read_ratio*1000|round/1000)); reads+writes x\(.total_ratio*1000|round/1000); check \(.check_gb_per_cpu_s*10|round/10) GB per CPU s, \(.check_share_of_read_time*1000|round/10) % of read time"')"
    done
    umount "$VRT"
fi

# ---------------------------------------------------------------- remote tier vs redis-benchmark
# docs/performance.md, "Remote tier": one redis-server (loopback, a free port, --save '', maxmemory 2 GiB noeviction,
# its own directory in $WORK). Per round (KVIO_BENCH_REMOTE_ROUNDS, default 3; the order alternates): `kvio simulate`
# with the remote tier as its only tier (KVIO_BENCH_REMOTE_SECS s, default 10); then redis-benchmark on the same
# server with kvio's chunk size as -d and kvio's connection counts as -c (its data connections, `connections`, for
# each; with --remote-connections split its SETs' connections_write for SET and its GETs' connections_read for GET;
# the control connection, idle while data moves, is not counted; docs/simulate.md, "Remote tier"; more simulate
# flags, e.g. "--remote-connections split", in KVIO_BENCH_REMOTE_ARGS), at -P 1 and -P 4, the better of the two per
# command (redis-benchmark's own hiredis buffers make -P 4 of 4 MiB values ~10x slower for SET on this machine): SET
# of new keys (-n = kvio's SET count, -r 100000000: kvio's stores are new keys, which the server faults in; the old
# peer's -r 64 overwrote 64 keys and recycled their memory, 5x faster), then after a FLUSHALL SET+GET over 64 keys
# (KVIO_BENCH_REMOTE_REQS each, default 1000), of which the GETs are kept. redis-benchmark's time for kvio's own
# bytes = written / SET bytes/s + read / GET bytes/s; the ratio = that time / kvio's in_flight_s (the wall time with
# at least one SET or GET in flight on any of its connections: the tier's busy time, whatever the simulation's pacing
# offered). Kept beside it: the ratio over kvio's elapsed time (elapsed_ratio), the per-connection ratio over busy_s
# (conn_ratio), the in-flight share of the run and the mean number of requests in flight.
# The exact peer: kvio runs under strace (write, writev and sendto only, seccomp-filtered: its SET, GET and DEL
# commands with key, value size, connection and time; bench/redis_ops.py), and bench/redis_replay.c sends the same
# commands on as many connections through plain hiredis, each no earlier than kvio did (`asis`; a GET after the SET it
# read): exact_ratio = kvio's bytes/s in flight / the replay's. Per run the server's CPU, minor faults and jemalloc's
# purged dirty pages (MEMORY MALLOC-STATS) are kept for kvio, the mixing redis-benchmark and the replay.
RM_SECS=${KVIO_BENCH_REMOTE_SECS:-10}
RM_ROUNDS=${KVIO_BENCH_REMOTE_ROUNDS:-3}
RM_REQS=${KVIO_BENCH_REMOTE_REQS:-1000}
RM_PORT=""
RM_SIM=(--model tiny-1b --num-users 2 --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 42 --remote-capacity-gb 1.5)
read -r -a RM_EXTRA <<< "${KVIO_BENCH_REMOTE_ARGS:-}"
RM_SIM+=("${RM_EXTRA[@]}")
RM_PID=""
RM_TCK=$(getconf CLK_TCK)
# the server's minor faults, utime + stime ticks and jemalloc's purged dirty pages (its arenas' "dirty:" decay row)
srv_stat() {
    echo "$(awk '{print $10, $14 + $15}' "/proc/$RM_PID/stat") $(redis-cli -p "$RM_PORT" memory malloc-stats | awk '$1 == "dirty:" {print $NF; exit}')"
}
srv_cost() {  # srv_cost "FAULTS0 TICKS0 PURGED0" "FAULTS1 TICKS1 PURGED1": prints "CPU_S FAULTS PURGED" between two srv_stat
    awk -v a="$1" -v b="$2" -v t="$RM_TCK" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "%.3f %d %d\n", (y[2] - x[2]) / t, y[1] - x[1], y[3] - x[3]}'
}
remote_kvio() {  # prints "WRITTEN_BYTES READ_BYTES ELAPSED_S CHUNK CONNECTIONS SET_BUSY_S GET_BUSY_S IN_FLIGHT_S SETS GETS SET_CONNS GET_CONNS SRV_CPU_S SRV_FAULTS SRV_PURGED" of one run; its commands in $WORK/remote.ops
    # SET_CONNS GET_CONNS: the connections that carried kvio's SETs and its GETs (connections_write, connections_read);
    # a binary whose connections carry both (no such fields) prints CONNECTIONS for each.
    local out=$WORK/remote.json s0 s1 k
    s0=$(srv_stat)
    strace -f -qq --seccomp-bpf -ttt -s 400 -e trace=writev,write,sendto -o "$WORK/remote.strace" \
        "$KVIO" simulate "${RM_SIM[@]}" --duration "$RM_SECS" --remote-tier "redis://127.0.0.1:$RM_PORT" --quiet \
        --progress-interval 0 --output "$out" > "$WORK/remote.out" 2>&1 \
        || { echo "bench: simulate --remote-tier failed:" >&2; tail -5 "$WORK/remote.out" >&2; return 1; }
    s1=$(srv_stat)
    python3 "$HERE/redis_ops.py" "$WORK/remote.strace" > "$WORK/remote.ops" || return 1
    rm -f "$WORK/remote.strace"
    k=$(jq -r '(.kvio.cache.tiers[] | select(.tier == "remote") | .remote) as $t | .summary.cache_stats as $c |
           if $t.errors > 0 then error("remote tier errors: \($t.errors)") else
           "\($t.bytes_sent) \($t.bytes_received) \(.summary.elapsed_time) \($t.chunk_bytes) \($t.connections) \($t.busy_s.set) \($t.busy_s.get) \($t.in_flight_s) \($t.commands.set) \($t.commands.get + $t.commands.getex) \([$t.connections_write // $t.connections, 1] | max) \([$t.connections_read // $t.connections, 1] | max)" end' "$out") \
        && echo "$k $(srv_cost "$s0" "$s1")"
}
remote_bench() {  # remote_bench CHUNK SET_CONNS GET_CONNS SETS: prints "SET_RPS GET_RPS", each the better of -P 1 and -P 4
    : > "$WORK/rb.csv"
    for p in 1 4; do
        # SETs of new keys, as kvio's stores are (-r far above -n: nearly every key is new; SETS = kvio's count, so
        # the server holds what kvio's run held), then SET+GET over 64 keys, of which the GETs are kept.
        redis-benchmark -h 127.0.0.1 -p "$RM_PORT" -t set -d "$1" -c "$2" -P "$p" -n "$4" -r 100000000 --csv >> "$WORK/rb.csv" 2> "$WORK/rb.err" \
            && redis-cli -p "$RM_PORT" flushall > /dev/null \
            && redis-benchmark -h 127.0.0.1 -p "$RM_PORT" -t set,get -d "$1" -c "$3" -P "$p" -n "$RM_REQS" -r 64 --csv > "$WORK/rb2.csv" 2> "$WORK/rb.err" \
            && grep '^"GET"' "$WORK/rb2.csv" >> "$WORK/rb.csv" \
            || { echo "bench: redis-benchmark failed:" >&2; tail -3 "$WORK/rb.err" >&2; return 1; }
        redis-cli -p "$RM_PORT" flushall > /dev/null
    done
    awk -F'"' '$2 == "SET" && $4 + 0 > s + 0 {s = $4} $2 == "GET" && $4 + 0 > g + 0 {g = $4} END {if (s == "" || g == "") exit 1; print s, g}' "$WORK/rb.csv"
}
remote_replay() {  # prints "BYTES IN_FLIGHT_S SRV_CPU_S SRV_FAULTS SRV_PURGED" of kvio's commands ($WORK/remote.ops) replayed
    local s0 s1 r
    s0=$(srv_stat)
    r=$("$WORK/redis_replay" 127.0.0.1 "$RM_PORT" "$WORK/remote.ops" asis 2> "$WORK/replay.err") \
        || { echo "bench: redis_replay failed:" >&2; tail -3 "$WORK/replay.err" >&2; return 1; }
    s1=$(srv_stat)
    redis-cli -p "$RM_PORT" flushall > /dev/null
    echo "$(jq -r '"\(.set_bytes + .get_bytes) \(.in_flight_s)"' <<< "$r") $(srv_cost "$s0" "$s1")"
}
remote_mix() {  # remote_mix CHUNK SET_CONNS GET_CONNS SETS GETS: prints "WALL_S SRV_CPU_S SRV_FAULTS SRV_PURGED" of kvio's mix made by redis-benchmark
    # 64 keys of CHUNK bytes for the GETs (redis-benchmark's key names for -r 64), then two redis-benchmark at once, -P 1:
    # SETS SETs of new keys on SET_CONNS connections and GETS GETs over the 64 keys on GET_CONNS: kvio's own counts.
    local s0 s1 t0 t1 p1 p2 i
    head -c "$1" /dev/zero > "$WORK/rb.val"
    for ((i = 0; i < 64; i++)); do redis-cli -p "$RM_PORT" -x set "$(printf 'key:%012d' "$i")" < "$WORK/rb.val" > /dev/null || return 1; done
    s0=$(srv_stat) t0=$(date +%s.%N)
    redis-benchmark -h 127.0.0.1 -p "$RM_PORT" -t set -d "$1" -c "$2" -P 1 -n "$4" -r 100000000 --csv > "$WORK/mix_set.csv" 2> "$WORK/rb.err" &
    p1=$!
    redis-benchmark -h 127.0.0.1 -p "$RM_PORT" -t get -d "$1" -c "$3" -P 1 -n "$5" -r 64 --csv > "$WORK/mix_get.csv" 2> "$WORK/rb2.err" &
    p2=$!
    wait "$p1" && wait "$p2" || { echo "bench: redis-benchmark (mix) failed:" >&2; tail -3 "$WORK/rb.err" "$WORK/rb2.err" >&2; return 1; }
    t1=$(date +%s.%N) s1=$(srv_stat)
    redis-cli -p "$RM_PORT" flushall > /dev/null
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') $(srv_cost "$s0" "$s1")"
}
mix_conns() {  # mix_conns "$(remote_kvio)": prints "SET_CONNS GET_CONNS" for the mixing peer: kvio's own (its write and
    # read connections, --remote-connections split); when its connections carry both, half of them each (one each
    # for two): the same number of connections in all.
    read -r _ _ _ _ c _ _ _ _ _ sc gc _ <<< "$1"
    if ((sc + gc <= c)); then echo "$sc $gc"; else echo "$(((c + 1) / 2)) $((c > 1 ? c / 2 : 1))"; fi
}
if has_stage remote; then
    for t in redis-server redis-cli redis-benchmark strace python3; do command -v "$t" >/dev/null || die "$t is missing (apt install redis-server redis-tools strace python3)"; done
    ${CC:-cc} -O2 -o "$WORK/redis_replay" "$HERE/redis_replay.c" -lhiredis -lpthread || die "cannot compile bench/redis_replay.c (CC=${CC:-cc}; libhiredis-dev)"
    echo "== remote: kvio simulate --remote-tier (${RM_SIM[*]} --duration $RM_SECS) vs redis-benchmark, same server, chunk size, connections"
    mkdir -p "$WORK/redis"
    RM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$RM_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK/redis" --maxmemory 2gb \
        --maxmemory-policy noeviction --daemonize yes --pidfile "$WORK/redis/pid" --logfile "$WORK/redis/log"
    for ((i = 0; i < 100; i++)); do redis-cli -p "$RM_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    RM_PID=$(cat "$WORK/redis/pid")
    for ((r = 1; r <= RM_ROUNDS; r++)); do
        load0=$(cut -d' ' -f1 /proc/loadavg)
        if ((r % 2)); then
            k=$(remote_kvio) && read -r _ _ _ chunk _ _ _ _ sets gets sc gc _ <<< "$k" && mc=$(mix_conns "$k") && x=$(remote_replay) \
                && b=$(remote_bench "$chunk" "$sc" "$gc" "$sets") && m=$(remote_mix "$chunk" $mc "$sets" "$gets") || break
        else  # redis-benchmark first: kvio's chunk size, connections and command counts of the round before
            b=$(remote_bench "$chunk" "$sc" "$gc" "$sets") && m=$(remote_mix "$chunk" $mc "$sets" "$gets") && k=$(remote_kvio) \
                && x=$(remote_replay) || break
        fi
        record remote "round$r" "$(jq -c -n --argjson r "$r" --argjson s "$RM_SECS" --arg k "$k" --arg b "$b" --arg m "$m" --arg x "$x" \
            --arg l0 "$load0" --arg l1 "$(cut -d' ' -f1 /proc/loadavg)" \
            --arg mc "$mc" \
            '($k | split(" ") | map(tonumber)) as [$w, $rd, $el, $chunk, $conns, $bset, $bget, $infl, $sets, $gets, $sc, $gc, $kcpu, $kflt, $kpur] |
             ($mc | split(" ") | map(tonumber)) as [$msc, $mgc] |
             ($b | split(" ") | map(tonumber)) as [$set, $get] | ($m | split(" ") | map(tonumber)) as [$mwall, $mcpu, $mflt, $mpur] |
             ($x | split(" ") | map(tonumber)) as [$xbytes, $xinfl, $xcpu, $xflt, $xpur] |
             ($w / ($set * $chunk) + $rd / ($get * $chunk)) as $rb_s |
             ($w / ($set * $chunk / $sc) + $rd / ($get * $chunk / $gc)) as $rb_conn_s |
             (($sets + $gets) * $chunk) as $mbytes |
             {round: $r, secs: $s, load1: ((($l0 | tonumber) + ($l1 | tonumber)) / 2), chunk_bytes: $chunk, connections: $conns,
              set_connections: $sc, get_connections: $gc, mix_set_connections: $msc, mix_get_connections: $mgc,
              kvio_mbps: (($w + $rd) / $el / 1e6), kvio_write_gb: ($w / 1e9), kvio_read_gb: ($rd / 1e9), kvio_elapsed_s: $el,
              rb_set_mbps: ($set * $chunk / 1e6), rb_get_mbps: ($get * $chunk / 1e6), rb_mbps: (($w + $rd) / $rb_s / 1e6),
              kvio_busy_s: ($bset + $bget), kvio_busy_share: (($bset + $bget) / ($conns * $el)), kvio_conn_mbps: (($w + $rd) / ($bset + $bget) / 1e6),
              rb_conn_mbps: (($w + $rd) / $rb_conn_s / 1e6),
              kvio_in_flight_s: $infl, kvio_in_flight_share: ($infl / $el), kvio_concurrency: (($bset + $bget) / $infl),
              kvio_in_flight_mbps: (($w + $rd) / $infl / 1e6), kvio_sets: $sets, kvio_gets: $gets,
              mix_wall_s: $mwall, mix_mbps: ($mbytes / $mwall / 1e6),
              kvio_srv_cpu_ms_per_mb: ($kcpu * 1e3 / (($w + $rd) / 1e6)), kvio_srv_faults_per_mb: ($kflt / (($w + $rd) / 1e6)),
              mix_srv_cpu_ms_per_mb: ($mcpu * 1e3 / ($mbytes / 1e6)), mix_srv_faults_per_mb: ($mflt / ($mbytes / 1e6)),
              kvio_srv_purged_per_mb: ($kpur / (($w + $rd) / 1e6)), mix_srv_purged_per_mb: ($mpur / ($mbytes / 1e6)),
              replay_mbps: ($xbytes / $xinfl / 1e6), replay_srv_cpu_ms_per_mb: ($xcpu * 1e3 / ($xbytes / 1e6)),
              replay_srv_faults_per_mb: ($xflt / ($xbytes / 1e6)), replay_srv_purged_per_mb: ($xpur / ($xbytes / 1e6)),
              exact_ratio: ((($w + $rd) / $infl) / ($xbytes / $xinfl)),
              elapsed_ratio: ($rb_s / $el), conn_ratio: ($rb_conn_s / ($bset + $bget)), separate_ratio: ($rb_s / $infl),
              ratio: ((($w + $rd) / $infl) / ($mbytes / $mwall))}')"
        printf '  round %d %s\n' "$r" "$(tail -n 1 "$RAW" | jq -r '"load \(.load1*10|round/10): kvio \(.kvio_in_flight_mbps|floor) MB/s while a request was in flight (\(.kvio_in_flight_s*10|round/10) s, \(.kvio_in_flight_share*100|round) % of the run, \(.kvio_concurrency*100|round/100) in flight; \(.kvio_write_gb*100|round/100) GB written, \(.kvio_read_gb*100|round/100) GB read, \(.connections) connections), server \(.kvio_srv_cpu_ms_per_mb*100|round/100) CPU-ms and \(.kvio_srv_faults_per_mb|round) faults per MB; redis-benchmark SET and GET at once: \(.mix_mbps|floor) MB/s, server \(.mix_srv_cpu_ms_per_mb*100|round/100) CPU-ms and \(.mix_srv_faults_per_mb|round) faults per MB: x\(.ratio*1000|round/1000); kvio'"'"'s own commands replayed: \(.replay_mbps|floor) MB/s in flight, server \(.replay_srv_cpu_ms_per_mb*100|round/100) CPU-ms, \(.replay_srv_faults_per_mb|round) faults per MB: x\(.exact_ratio*1000|round/1000); purged pages per MB kvio \(.kvio_srv_purged_per_mb|round), mix \(.mix_srv_purged_per_mb|round), replay \(.replay_srv_purged_per_mb|round); apart: SET \(.rb_set_mbps|floor) GET \(.rb_get_mbps|floor) MB/s -> \(.rb_mbps|floor) MB/s at kvio'"'"'s mix: x\(.separate_ratio*1000|round/1000) (elapsed x\(.elapsed_ratio*1000|round/1000), per connection x\(.conn_ratio*1000|round/1000))"')"
    done
    redis-cli -p "$RM_PORT" shutdown nosave > /dev/null 2>&1 || true
fi

# ---------------------------------------------------------------- distill fidelity, quiet and beside CPU hogs
# The closed-loop known shape the e2e test Distill.ClosedLoopReproducesTracedFioJob asserts with bounds that hold on a
# busy machine: fio randrw 70 % reads, bssplit 128k/100,512k/100, QD 4, 4 s on a loop device over a written file,
# traced, distilled and --verify'd on a second one; per round once quiet and once beside `stress-ng --cpu $(nproc)`.
# The figures the distiller aims at on a quiet machine (queue-depth TV <= 0.1, size TV 0, rwmixread within 1 point)
# are these, as min / median / max over KVIO_BENCH_FIDELITY_ROUNDS (3).
FID_ROUNDS=${KVIO_BENCH_FIDELITY_ROUNDS:-3}
fidelity_round() {  # MODE ROUND: one trace + distill --verify; records the verify scores
    local mode=$1 r=$2 d=$WORK/fid src dst stress=""
    mkdir -p "$d"
    truncate -s 256M "$d/src.img" "$d/dst.img"
    src=$(losetup -f --show --direct-io=on "$d/src.img") && dst=$(losetup -f --show --direct-io=on "$d/dst.img") || return 1
    for x in "$src" "$dst"; do dd if=/dev/zero of="$x" bs=1M count=256 oflag=direct status=none; done
    printf '[src]\nfilename=%s\nioengine=libaio\ndirect=1\nrw=randrw\nrwmixread=70\nnorandommap=1\nbssplit=128k/100,512k/100\niodepth=4\ntime_based=1\nruntime=4\n' "$src" > "$d/src.ini"
    if [ "$mode" = stress ]; then stress-ng --cpu "$(nproc)" --timeout 0 --quiet & stress=$!; fi
    nice -n -20 "$KVIO" trace -q -d "${src#/dev/}" --events "$d/src.jsonl" -- fio --output=/dev/null "$d/src.ini" &&
        nice -n -20 "$KVIO" distill --events "$d/src.jsonl" --filename "$dst" --runtime 4 -o "$d/job.ini" --verify --force --json "$d/v.json" >/dev/null
    local rc=$?
    [ -n "$stress" ] && { kill "$stress"; wait "$stress" 2>/dev/null; }
    losetup -d "$src"; losetup -d "$dst"; rm -f "$d"/*.img
    [ $rc -eq 0 ] || return 1
    record fidelity "$mode" "$(jq -c --argjson r "$r" '.verify as $v | {round:$r, qd_tv:$v.qd_tv, size_tv_read:$v.size_tv.read,
        size_tv_write:$v.size_tv.write, rwmix_err_points:$v.rwmix_err_points, worst_depth_tv:$v.time_resolved.worst.depth_tv,
        iodepth:(.job.iodepth // null)}' "$d/v.json")"
    printf '  %-6s round %d: %s\n' "$mode" "$r" "$(tail -n 1 "$RAW" | jq -r '"queue-depth TV \(.qd_tv*1000|round/1000), worst window depth TV \(.worst_depth_tv*1000|round/1000), rwmixread error \(.rwmix_err_points*100|round/100) points"')"
}
if has_stage fidelity; then
    command -v stress-ng >/dev/null || bash "$HERE/../scripts/deps.sh" stress-ng
    echo "== fidelity: closed-loop distill --verify of a known fio shape, quiet and beside stress-ng --cpu $(nproc)"
    for ((r = 1; r <= FID_ROUNDS; r++)); do fidelity_round quiet "$r" && fidelity_round stress "$r" || break; done
fi

# ---------------------------------------------------------------- the Python benchmark under kvio audit
# docs/audit.md: the same kv-cache.py run three ways on ext4 over a loop device (a file in $WORK, disk-backed), each
# under `kvio audit --cache-dir`: as is (expected PASS), under eatmydata (expected FAIL fsync: its fsync calls never
# reach the device) and with a no-op posix_fadvise preloaded (expected FAIL reads and fadvise: its reads after the
# page-cache drop come from memory). The preload check fails in both wrapped runs, naming the library. The model is
# small (tiny-1b) so that what a run writes stays in the page cache until it is read back: the shim's effect is then
# the whole difference (llama3.1-8b at 10 users writes ~30 GiB in 20 s here, more than the free memory). The shim
# defines posix_fadvise64 too: Debian's python3 is built with _FILE_OFFSET_BITS=64 and calls that name (a shim with
# posix_fadvise alone changed nothing: read share 1.0). The loop device uses direct I/O: its backing file is not
# cached a second time.
AUDIT_MODEL=${KVIO_BENCH_AUDIT_MODEL:-tiny-1b}
AUDIT_USERS=${KVIO_BENCH_AUDIT_USERS:-4}
AUDIT_SECS=${KVIO_BENCH_AUDIT_SECS:-10}
audit_python() {  # audit_python MODE PY PYEXE: one audited run; records and prints its verdicts
    local mode=$1 py=$2 pyexe=$3 cache=$WORK/auditfs/cache wrap=()
    case $mode in
        eatmydata) wrap=(eatmydata) ;;
        nofadvise) wrap=(env "LD_PRELOAD=$WORK/libnofadvise.so") ;;
    esac
    rm -rf "$cache"; mkdir -p "$cache"
    (cd "$(dirname "$py")" && "$KVIO" audit --cache-dir "$cache" --json "$WORK/audit_$mode.json" -- "${wrap[@]}" \
        "$pyexe" "$py" --model "$AUDIT_MODEL" --num-users "$AUDIT_USERS" --duration "$AUDIT_SECS" --gpu-mem-gb 0 \
        --cpu-mem-gb 0 --generation-mode none --seed 42 --cache-dir "$cache" --output "$WORK/audit_py.json") \
        > "$WORK/audit_$mode.out" 2>&1 || true
    rm -rf "$cache"
    [ -f "$WORK/audit_$mode.json" ] || { echo "bench: audit ($mode) wrote no verdicts, see $WORK/audit_$mode.out" >&2; tail -3 "$WORK/audit_$mode.out" >&2; return 1; }
    record audit "$mode" "$(jq -c '([.filesystems[].checks[]] + [.preload]) as $c |
        ($c | map({key: .name, value: .verdict}) | from_entries) +
        {passed, command_status, failed: ([$c[] | select(.verdict == "FAIL") | .name]),
         app_read_bytes: ([.filesystems[].checks[] | select(.name == "reads") | .figures.app_read_bytes // 0] | add),
         device_read_share: ([.filesystems[].checks[] | select(.name == "reads") | .figures.device_share // null] | first),
         fsync_calls: ([.filesystems[].checks[] | select(.name == "fsync") | .figures.calls // 0] | add),
         device_flushes: ([.filesystems[].checks[] | select(.name == "fsync") | .figures.device_flushes // 0] | add)}' "$WORK/audit_$mode.json")"
    # expected: the checks that must fail ("" = every check passes). Under eatmydata the writes check may fail too:
    # without fsync the written bytes reach the device by writeback, possibly after the run (docs/audit.md).
    local expect got as
    case $mode in
        clean) expect="" ;;
        eatmydata) expect="fsync preload" ;;
        nofadvise) expect="reads fadvise preload" ;;
    esac
    got=$(tail -n 1 "$RAW" | jq -r 'if .passed then "PASS" else "FAIL " + (.failed | join("+")) end')
    as=$(tail -n 1 "$RAW" | jq -r --arg e "$expect" '($e | split(" ") | map(select(. != ""))) as $x |
        if ($x | length) == 0 then (if .passed then "as expected" else "NOT as expected" end)
        else (if ([$x[] as $c | .failed | index($c)] | all) and (.failed | index("reads") != null) == ($x | index("reads") != null)
              then "as expected" else "NOT as expected" end) end')
    printf '  %-9s %-28s expected %-28s (%s); %s\n' "$mode" "$got" \
        "$(if [ -z "$expect" ]; then echo PASS; else echo "FAIL ${expect// /+}"; fi)" "$as" \
        "$(tail -n 1 "$RAW" | jq -r '"device read share \(if .device_read_share then (.device_read_share * 1000 | round / 1000) else "-" end) of \(.app_read_bytes / 1073741824 * 100 | round / 100) GiB, \(.fsync_calls) fsync calls / \(.device_flushes) device flushes"')"
}
if has_stage audit; then
    echo "== audit: the Python benchmark under kvio audit, clean / eatmydata / no-op posix_fadvise shim"
    py=""
    if [ -z "${MLPERF_KV_DIR:-}" ]; then
        echo "  skipped: MLPERF_KV_DIR is unset (point it to a checkout of the Python benchmark: kv-cache.py or kv_cache_benchmark/kv-cache.py)"
    else
        py=$MLPERF_KV_DIR/kv-cache.py
        [ -f "$py" ] || py=$MLPERF_KV_DIR/kv_cache_benchmark/kv-cache.py
        [ -f "$py" ] || { echo "  skipped: MLPERF_KV_DIR=$MLPERF_KV_DIR has no kv-cache.py"; py=""; }
    fi
    pyexe=""
    if [ -n "$py" ]; then
        pyexe=$(python_for_mlperf) || { echo "  skipped: no python3 imports numpy and yaml (apt install python3-numpy python3-yaml)"; py=""; }
    fi
    if [ -n "$py" ]; then
        command -v eatmydata >/dev/null || bash "$HERE/../scripts/deps.sh" eatmydata
        # both names: a program built with _FILE_OFFSET_BITS=64 (Debian's python3) calls posix_fadvise64
        printf 'int posix_fadvise(int fd, long off, long len, int advice) { (void)fd; (void)off; (void)len; (void)advice; return 0; }\nint posix_fadvise64(int fd, long off, long len, int advice) { return posix_fadvise(fd, off, len, advice); }\n' > "$WORK/nofadvise.c"
        cc -shared -fPIC -o "$WORK/libnofadvise.so" "$WORK/nofadvise.c" || die "cannot build the no-op posix_fadvise shim"
        mkdir -p "$WORK/auditfs"
        truncate -s 8G "$WORK/audit.img"   # sparse
        AUDIT_LOOP=$(losetup -f --show --direct-io=on "$WORK/audit.img")
        mkfs.ext4 -q -F "$AUDIT_LOOP"
        mount "$AUDIT_LOOP" "$WORK/auditfs"
        for mode in clean eatmydata nofadvise; do audit_python "$mode" "$py" "$pyexe" || true; done
        umount "$WORK/auditfs"; losetup -d "$AUDIT_LOOP"; AUDIT_LOOP=""; rm -f "$WORK/audit.img"
    fi
fi

jq -s --slurpfile m "$OUT/machine.json" -f "$HERE/summarize.jq" "$RAW" > "$OUT/results.json"
jq -r -f "$HERE/table.jq" "$OUT/results.json"
echo "results: $OUT/results.json (every measurement: $RAW)"
