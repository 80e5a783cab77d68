# Guest steps of tests/e2e/nvme_guest_test.cpp (run by tests/qemu/guest.sh under busybox sh,
# cwd = $1 = /results).  Each step leaves NAME.out (its output) and NAME.rc (its exit status);
# the C++ test asserts on those files.  Keep it short: the guest is emulated (TCG).
set -u
T=/sys/kernel/tracing
step() { n=$1; shift; "$@" > "$n.out" 2>&1; echo $? > "$n.rc"; echo "step $n: rc=$(cat "$n.rc")"; }

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
exit 0
