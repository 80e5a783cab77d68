# Guest steps of tests/e2e/nvme_guest_test.cpp (run by tests/qemu/guest.sh under busybox sh,
# cwd = $1 = /results).  Each step leaves NAME.out (its output) and NAME.rc (its exit status);
# the C++ test asserts on those files.  Keep it short: the guest is emulated (TCG).
set -u
T=/sys/kernel/tracing
step() { local s=$1; shift; "$@" > "$s.out" 2>&1; echo $? > "$s.rc"; echo "step $s: rc=$(cat "$s.rc") t=$(cut -d' ' -f1 /proc/uptime)"; }

# --- the guest itself: kernel, devices, limits, the static kvio.
uname -r > uname.txt
step help kvio --help
for a in max_hw_sectors_kb max_sectors_kb logical_block_size; do
  cat /sys/block/nvme0n1/queue/$a > nvme0n1.$a
done
[ -c /dev/ng0n1 ] && echo char > ng0n1.type
[ -b /dev/nvme0n1 ] && echo block > nvme0n1.type
[ -r /sys/kernel/btf/vmlinux ] && echo yes > btf.present
ls $T/events/nvme > nvme_events.txt 2>&1

# --- ground truth from the kernel's own tracepoints (tracefs, no kvio): a 1 MiB O_DIRECT write
# at byte offset 3 MiB must reach the controller as 8 x 128 KiB NVMe writes (MDTS 5).
echo > $T/trace
echo 1 > $T/events/nvme/nvme_setup_cmd/enable
echo 1 > $T/events/nvme/nvme_complete_rq/enable
step dd_tracefs dd if=/dev/zero of=/dev/nvme0n1 bs=1M count=1 seek=3 oflag=direct
echo 0 > $T/events/nvme/enable
grep -v '^#' $T/trace > tracefs_nvme.txt
echo > $T/trace

step trace_help kvio trace --help

# --- kvio trace of the same kind of write, at byte offset 5 MiB (KVIO_DEBUG: verifier log on failure).
step trace_dd env KVIO_DEBUG=1 kvio trace -d nvme0n1 -q --events trace_dd.events.jsonl --json trace_dd.trace.json -- \
  dd if=/dev/zero of=/dev/nvme0n1 bs=1M count=1 seek=5 oflag=direct

# --- syscalls on either hook: per-syscall tracepoints where this kernel's tracefs has them, and raw_syscalls forced;
# dd's 8 O_DIRECT 4 KiB read()s of the device land in the VFS read histogram of both.
[ -d $T/events/syscalls/sys_enter_pread64 ] && echo yes > syscall_events.present
step syscalls_default kvio trace -d nvme0n1 -q --json syscalls_default.trace.json -- \
  dd if=/dev/nvme0n1 of=/dev/null bs=4k count=8 iflag=direct
step syscalls_raw env KVIO_TRACE_RAW_SYSCALLS=1 kvio trace -d nvme0n1 -q --json syscalls_raw.trace.json -- \
  dd if=/dev/nvme0n1 of=/dev/null bs=4k count=8 iflag=direct

# --- --files on this kernel, which has no bpf_rdonly_cast (6.2+): the issue program that reads a direct-I/O file by
# probe reads must load. A raw block device's direct I/O is no file's (not iomap's): 4 commands, no file.
step files_dd kvio trace -d nvme0n1 -q --files --stats --json files_dd.trace.json -- \
  dd if=/dev/zero of=/dev/nvme0n1 bs=64k count=4 seek=200 oflag=direct

# --- kvio gen under kvio trace, then kvio validate, per engine: llama3.1-8b, 256-token chunks
# (32 MiB objects), 2 chunks stored then loaded.
GEN="--model llama3.1-8b --chunk-tokens 256 --num-chunks 2 --force -q"
gen_validate() {  # NAME ENGINE TARGET JOIN
  step $1_gen kvio trace -d nvme0n1 -q --events $1.events.jsonl --json $1.trace.json -- \
    kvio gen $GEN --engine $2 --target $3 --semantic $1.semantic.jsonl --record $1.record.json
  step $1_validate kvio validate --commands $1.events.jsonl --semantic $1.semantic.jsonl --record $1.record.json \
    --trace-json $1.trace.json --join $4 --json $1.validate.json
}
# --- blktrace (Debian's binary, run with the host's glibc from /data: the guest is busybox) and kvio trace of the
# same run, for `kvio import blktrace` against `kvio trace` (tests/e2e/nvme_guest_test.cpp). The host kernel's
# lockdown refuses blktrace's debugfs relay files; this guest kernel has none.
if [ -x /data/blktrace ]; then
  mkdir -p bt
  /data/ld-linux-x86-64.so.2 --library-path /data /data/blktrace -d /dev/nvme0n1 -o nvme0n1 -D bt > blktrace.log 2>&1 &
  btpid=$!
  sleep 2
  # Each dd is kvio trace's own child (no `sh -c`): busybox sh runs dd as a forked applet whose comm is "sh" until
  # it renames itself, and blktrace notes a task's comm once, so the two tools' comm could differ.
  step bt_trace kvio trace -d nvme0n1 -q --events bt.events.jsonl -- \
    dd if=/dev/zero of=/dev/nvme0n1 bs=64k count=16 seek=160 oflag=direct
  step bt_trace_read kvio trace -d nvme0n1 -q --events bt_read.events.jsonl -- \
    dd if=/dev/nvme0n1 of=/dev/null bs=256k count=4 skip=40 iflag=direct
  sleep 1
  kill -INT $btpid
  wait $btpid
  echo $? > blktrace.rc
fi

gen_validate uring_cmd uring_cmd /dev/ng0n1 user_data
gen_validate io_uring io_uring /dev/nvme0n1 user_data
gen_validate posix posix /dev/nvme0n1 offset
exit 0
