#!/usr/bin/env bash
# bench/files_cost.sh — what `kvio trace --files` adds to the kernel's BPF time per device command, per program
# (bench/run.sh stage "files"; runnable alone). ext4 over a loop device (direct I/O) over a file in a tmpfs under
# /dev/shm; fio 4 KiB random reads and writes at QD 32, O_DIRECT, on one 512 MiB file of that ext4, libaio and
# io_uring; each run under `kvio trace --stats -d LOOP` started in the background (no task filter), once plain and
# once with --files (the dio source where the kernel has it, bpf/file_attr.bpf.h) and once with --files from the
# submitting context (KVIO_TRACE_FILES_FROM_SUBMITTER=1: the syscall and uring sources), the order rotating per round. Per run: the kernel's run_cnt and run_time_ns of each
# program (bpf_stats) over the loop device's commands in that run, and the 1-minute load average at its start.
# RW `smallfiles` is the buffered case where the block layer merges several files' pages into one request: fio
# writes 4000 files of 6000 bytes buffered (the ENGINE is ignored: psync) and `sync` writes them back, all inside
# the trace; the files are removed (and synced) before each run. A MODE prefixed `base_` (base_plain, base_files)
# runs the binary in $KVIO_BASE instead (another build, e.g. main's), so two builds are paired per round. A MODE
# ending in `_events` (files_events, base_files_events) adds `--events` (JSONL, into the mktemp directory, removed
# after the run): the cost of the event records, and with smallfiles of the per-file parts of merged commands.
#
# usage: bench/files_cost.sh KVIO OUT.jsonl [ROUNDS (5)] [SECS (4)] [ENGINES ("io_uring libaio")] [RWS ("randread
# randwrite")] [MODES ("plain files files_submitter")]. One JSON line per run: {stage:"files", mode, round, engine, rw, load1, iops, cmds,
# ns_per_cmd, programs:[{name, run_cnt, run_time_ns, ns_per_run, ns_per_cmd}], files_attribution}.
# Needs root, fio, jq, mkfs.ext4, losetup. Everything it makes sits under one mktemp directory in /dev/shm and is
# removed on exit (loop device detached, ext4 unmounted).
set -euo pipefail

KVIO=$(realpath "$1")
OUTF=$2
ROUNDS=${3:-5}
SECS=${4:-4}
read -r -a ENGS <<< "${5:-io_uring libaio}"
read -r -a RWS <<< "${6:-randread randwrite}"
read -r -a MODES <<< "${7:-plain files files_submitter}"

die() { echo "files_cost: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root"
for t in fio jq mkfs.ext4 losetup; do command -v "$t" >/dev/null || die "$t is missing"; done

W=$(mktemp -d /dev/shm/kvio-files-cost.XXXXXX)
LOOP=""
KPID=""
cleanup() {
    set +e
    [ -n "$KPID" ] && kill -INT "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
    mountpoint -q "$W/mnt" && umount "$W/mnt"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s 768M "$W/disk.img"
LOOP=$(losetup -f --show --direct-io=on "$W/disk.img")
LNAME=${LOOP#/dev/}
mkfs.ext4 -q -F "$LOOP"
mkdir "$W/mnt"
mount "$LOOP" "$W/mnt"
F=$W/mnt/data.bin
dd if=/dev/zero of="$F" bs=1M count=512 oflag=direct status=none   # every block allocated: reads hit the device

run_one() {  # run_one MODE ROUND ENGINE RW
    local mode=$1 r=$2 eng=$3 rw=$4 t=$W/trace.json fj=$W/fio.json ready=$W/ready load
    local extra=() env=() bin=$KVIO m=${mode#base_}
    if [ "$m" != "$mode" ]; then
        [ -n "${KVIO_BASE:-}" ] || die "mode $mode needs KVIO_BASE"
        bin=$(realpath "$KVIO_BASE")
    fi
    [ "${m%_events}" != plain ] && extra=(--files)
    [ "${m%_events}" != "$m" ] && extra+=(--events "$W/ev.jsonl")
    [ "${m%_events}" = files_submitter ] && env=(KVIO_TRACE_FILES_FROM_SUBMITTER=1)
    if [ "$rw" = smallfiles ]; then
        rm -rf "$W/mnt/sf"
        mkdir "$W/mnt/sf"
        sync
    fi
    rm -f "$t" "$fj" "$ready"
    load=$(cut -d' ' -f1 /proc/loadavg)
    env "${env[@]}" "$bin" trace -q --stats -d "$LNAME" "${extra[@]}" --json "$t" --ready-file "$ready" >/dev/null 2>"$W/trace.log" &
    KPID=$!
    local i
    for ((i = 0; i < 600; i++)); do [ -e "$ready" ] && break; sleep 0.1; done
    [ -e "$ready" ] || die "kvio trace did not attach: $(cat "$W/trace.log")"
    if [ "$rw" = smallfiles ]; then
        fio --name=j --directory="$W/mnt/sf" --nrfiles=4000 --filesize=6000 --bs=6000 --rw=write --direct=0 \
            --ioengine=psync --openfiles=64 --output-format=json --output="$fj" >/dev/null
        sync
    else
        fio --name=j --filename="$F" --direct=1 --rw="$rw" --bs=4k --iodepth=32 --ioengine="$eng" --size=512M \
            --time_based --runtime="$SECS" --norandommap --randrepeat=0 --output-format=json --output="$fj" >/dev/null
    fi
    kill -INT "$KPID"
    wait "$KPID" || true
    KPID=""
    rm -f "$W/ev.jsonl"
    jq -c --arg m "$mode" --argjson r "$r" --arg e "$eng" --arg rw "$rw" --argjson l "$load" \
        --argjson iops "$(jq '.jobs[0].read.iops + .jobs[0].write.iops' "$fj")" \
        '([.devices[] | .read.cmds + .write.cmds] | add // 0) as $n | ($n + (if $n == 0 then 1 else 0 end)) as $d |
         {stage:"files", mode:$m, round:$r, engine:$e, rw:$rw, load1:$l, iops:$iops, cmds:$n,
          ns_per_cmd:.bpf_stats.ns_per_cmd, files_attribution:(.files_attribution // null),
          programs:[.bpf_stats.programs[] | select(.run_cnt > 0) |
                    {name, run_cnt, run_time_ns, ns_per_run, ns_per_cmd:(.run_time_ns / $d)}]}' "$t" >> "$OUTF"
}

for ((r = 1; r <= ROUNDS; r++)); do
    for eng in "${ENGS[@]}"; do
        for rw in "${RWS[@]}"; do
            local_n=${#MODES[@]}
            for ((k = 0; k < local_n; k++)); do run_one "${MODES[$(((k + r) % local_n))]}" "$r" "$eng" "$rw"; done
        done
    done
done
