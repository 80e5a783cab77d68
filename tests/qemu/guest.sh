#!/usr/bin/env bash
# Runs a step script inside a QEMU (TCG) guest that has an emulated NVMe controller, and
# brings the step's result files back.  See tests/qemu/README.md.
#
#   tests/qemu/guest.sh [options] --out DIR STEPS.sh
#
# The guest: Debian's 6.1 cloud kernel (fetched with apt-get download, cached), a busybox-static
# initramfs holding a static kvio at /bin/kvio, STEPS.sh at /steps.sh and any --file at /data/.
# Devices: /dev/nvme0n1 + /dev/ng0n1 (QEMU nvme, sparse image, mdts set) and a virtio disk on
# which the guest writes a tar of /results when the steps end.
# STEPS.sh runs under busybox sh with cwd /results and $1 = /results; what it leaves there
# comes back in DIR, with steps.log (its stdout+stderr), status (its exit code), dmesg.txt,
# console.log (the serial console) and timing (host-measured seconds).
#
# Exit status: the step script's exit status when the guest finished; 124 when the guest timed
# out; 125 when the harness itself failed (a message on stderr says why).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=build
CACHE=""
KVIO=""
OUT=""
TIMEOUT=300
MEM=1G
SMP=1
NVME_SIZE=4G
MDTS=5
RESULTS_SIZE=256M
FILES=()
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
  cat <<EOF
Options:
  --build DIR       kvio build dir (default build); kvio-static is made there with make
  --kvio PATH       use this static kvio instead of making \$BUILD/kvio-static
  --cache DIR       kernel cache (default \$BUILD/qemu-cache; reused when present)
  --out DIR         where the results land (required; emptied first)
  --file SRC        copy SRC into the guest as /data/\$(basename SRC) (repeatable)
  --timeout SEC     wall-clock limit for the whole guest run (default $TIMEOUT)
  --mem SIZE        guest memory (default $MEM);  --smp N  guest CPUs (default $SMP)
  --nvme-size SIZE  sparse NVMe image size (default $NVME_SIZE)
  --mdts N          NVMe MDTS, max transfer = 2^N x 4 KiB (default $MDTS: 128 KiB)
  --kernel-pkg NAME Debian kernel package (default: newest linux-image-6.1.0-*-cloud-amd64-unsigned)
EOF
}
die() { echo "guest.sh: $*" >&2; exit 125; }

while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --kvio) KVIO=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --file) FILES+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --nvme-size) NVME_SIZE=$2; shift 2 ;;
    --mdts) MDTS=$2; shift 2 ;;
    --kernel-pkg) KERNEL_PKG=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
(($# == 1)) || { usage >&2; die "expected exactly one STEPS.sh argument"; }
STEPS=$1
[ -n "$OUT" ] || die "--out DIR is required"
[ -r "$STEPS" ] || die "cannot read step script $STEPS"
[[ $TIMEOUT =~ ^[0-9]+$ ]] && ((TIMEOUT >= 60)) || die "--timeout must be an integer >= 60 seconds"

# A build dir under the repo is passed to make relative, as the Makefile's dependency files name it.
case $BUILD in /*) [[ $BUILD == "$ROOT"/* ]] && BUILD=${BUILD#"$ROOT"/} ;; esac
BUILD_ABS=$BUILD
[[ $BUILD == /* ]] || BUILD_ABS=$ROOT/$BUILD
[ -n "$CACHE" ] || CACHE=$BUILD_ABS/qemu-cache
mkdir -p "$CACHE" "$OUT"
CACHE=$(cd "$CACHE" && pwd)
OUT=$(cd "$OUT" && pwd)
find "$OUT" -mindepth 1 -delete

# (1) host tools: qemu-system-x86 and busybox-static come from scripts/deps.sh.
if ! command -v qemu-system-x86_64 >/dev/null || ! [ -x /bin/busybox ] ||
   ! /bin/busybox cpio --help >/dev/null 2>&1; then
  bash "$ROOT/scripts/deps.sh" >&2 || die "could not install qemu-system-x86 / busybox-static (scripts/deps.sh failed; are you root?)"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is not installed (Debian package qemu-system-x86)"
is_static() { ! readelf -lW "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; }
is_static /bin/busybox || die "/bin/busybox is dynamically linked; install busybox-static"

# (2) the guest kernel: vmlinuz + the virtio modules the results disk needs, cached per package.
VIRTIO_MODS=(drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev
             drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci drivers/block/virtio_blk)
if [ -z "${KERNEL_PKG:-}" ]; then
  if [ -r "$CACHE/kernel-pkg" ] && [ -r "$CACHE/$(cat "$CACHE/kernel-pkg")/vmlinuz" ]; then
    KERNEL_PKG=$(cat "$CACHE/kernel-pkg")
  else
    newest() { apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' |
               awk '{print $1}' | sort -V | tail -1; }
    KERNEL_PKG=$(newest)
    [ -n "$KERNEL_PKG" ] || { apt-get update -q >/dev/null 2>&1 || true; KERNEL_PKG=$(newest); }
    [ -n "$KERNEL_PKG" ] || die "no linux-image-6.1.0-*-cloud-amd64-unsigned package in apt's lists (apt-get update?)"
  fi
fi
KDIR=$CACHE/$KERNEL_PKG
if ! [ -r "$KDIR/vmlinuz" ]; then
  echo "guest.sh: fetching $KERNEL_PKG into $CACHE" >&2
  tmp=$(mktemp -d "$CACHE/dl.XXXXXX")
  (cd "$tmp" && apt-get download -q "$KERNEL_PKG" >/dev/null 2>&1) ||
    { rm -rf "$tmp"; die "apt-get download $KERNEL_PKG failed"; }
  dpkg-deb -x "$tmp"/*.deb "$tmp/x" || { rm -rf "$tmp"; die "dpkg-deb -x failed on $KERNEL_PKG"; }
  mkdir -p "$tmp/k/modules"
  cp "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
  cp "$tmp"/x/boot/config-* "$tmp/k/config"
  for m in "${VIRTIO_MODS[@]}"; do
    cp "$tmp"/x/lib/modules/*/kernel/"$m".ko "$tmp/k/modules/" || { rm -rf "$tmp"; die "$KERNEL_PKG has no $m.ko"; }
  done
  rm -rf "$KDIR" && mv "$tmp/k" "$KDIR" && rm -rf "$tmp"
fi
echo "$KERNEL_PKG" > "$CACHE/kernel-pkg"

# The static kvio (statically linked: the guest has no libraries).
if [ -z "$KVIO" ]; then
  if ! (cd "$ROOT" && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make BUILD="$BUILD" "$BUILD/kvio-static") > "$OUT/make.log" 2>&1; then
    tail -30 "$OUT/make.log" >&2
    die "make BUILD=$BUILD $BUILD/kvio-static failed (log: $OUT/make.log)"
  fi
  KVIO=$BUILD_ABS/kvio-static
fi
[ -x "$KVIO" ] || die "no executable kvio at $KVIO"
is_static "$KVIO" || die "$KVIO is not statically linked (the guest has no shared libraries)"

# (3) the initramfs.
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/kvio-guest.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
R=$WORK/root
mkdir -p "$R"/{bin,dev,proc,sys,tmp,results,data,lib/modules}
cp /bin/busybox "$R/bin/busybox"
strip -o "$R/bin/kvio" "$KVIO" 2>/dev/null || cp "$KVIO" "$R/bin/kvio"
cp "$STEPS" "$R/steps.sh"
cp "$KDIR"/modules/*.ko "$R/lib/modules/"
for f in "${FILES[@]}"; do cp "$f" "$R/data/" || die "cannot copy --file $f"; done
GUEST_TIMEOUT=$((TIMEOUT - 45))   # leaves time to boot before and to write results after
mods=""
for m in "${VIRTIO_MODS[@]}"; do mods+=" ${m##*/}"; done
cat > "$R/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/results
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t tmpfs tmpfs /tmp
ulimit -l unlimited
for m in$mods; do insmod /lib/modules/\$m.ko || echo "KVIO-GUEST: insmod \$m failed"; done
n=0; while ! [ -b /dev/vda ] || ! [ -b /dev/nvme0n1 ]; do
  n=\$((n + 1)); [ \$n -gt 100 ] && { echo "KVIO-GUEST: /dev/vda or /dev/nvme0n1 missing"; break; }
  sleep 0.1
done
echo "KVIO-GUEST-BOOTED uptime=\$(cut -d' ' -f1 /proc/uptime)"
cd /results
{ timeout $GUEST_TIMEOUT sh /steps.sh /results; echo \$? > /tmp/rc; } 2>&1 | tee /results/steps.log
rc=\$(cat /tmp/rc)
[ "\$rc" = 143 ] && echo "KVIO-GUEST: steps killed after $GUEST_TIMEOUT s"
echo "\$rc" > /results/status
cut -d' ' -f1 /proc/uptime > /results/guest_uptime
dmesg > /results/dmesg.txt
if tar -cf /dev/vda -C /results . && sync; then echo "KVIO-GUEST-RESULTS-WRITTEN"; else echo "KVIO-GUEST-RESULTS-FAILED"; fi
echo "KVIO-GUEST-STATUS=\$rc"
poweroff -f
EOF
chmod 755 "$R/init" "$R/steps.sh" "$R/bin/kvio"
(cd "$R" && find . -mindepth 1 | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null > "$WORK/initrd") ||
  die "busybox cpio failed to build the initramfs"

# (4) boot.
truncate -s "$NVME_SIZE" "$WORK/nvme.img"
truncate -s "$RESULTS_SIZE" "$WORK/results.img"
qemu=(qemu-system-x86_64 -M q35 -m "$MEM" -smp "$SMP" -nodefaults -no-user-config -display none
      -no-reboot -serial stdio -monitor none
      -kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd"
      -append "console=ttyS0 panic=-1 quiet mitigations=off"
      -drive "file=$WORK/nvme.img,if=none,id=nv0,format=raw"
      -device "nvme,serial=kvio0,drive=nv0,mdts=$MDTS"
      -drive "file=$WORK/results.img,if=none,id=res0,format=raw"
      -device virtio-blk-pci,drive=res0)
echo "guest.sh: booting $KERNEL_PKG (timeout ${TIMEOUT}s)" >&2
t0=$(date +%s.%N)
set +e
timeout -k 10 "$TIMEOUT" "${qemu[@]}" < /dev/null > "$OUT/console.log" 2>&1
qrc=$?
set -e
t1=$(date +%s.%N)

# (5) results.
tar -xf "$WORK/results.img" -C "$OUT" 2>/dev/null || true
boot=$(sed -n 's/.*KVIO-GUEST-BOOTED uptime=\([0-9.]*\).*/\1/p' "$OUT/console.log" | head -1)
{ echo "kernel_pkg=$KERNEL_PKG"
  echo "guest_boot_s=${boot:-?}"
  echo "guest_uptime_s=$(cat "$OUT/guest_uptime" 2>/dev/null || echo ?)"
  echo "host_wall_s=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")"; } > "$OUT/timing"
if ((qrc == 124 || qrc == 137)); then
  echo "guest.sh: the guest did not finish within ${TIMEOUT}s; last console lines:" >&2
  tail -20 "$OUT/console.log" >&2
  exit 124
fi
if ! [ -r "$OUT/status" ]; then
  echo "guest.sh: no results came back (qemu exit $qrc); last console lines:" >&2
  tail -30 "$OUT/console.log" >&2
  exit 125
fi
exit "$(cat "$OUT/status")"
