#!/usr/bin/env bash
# Installs the Debian packages kvio builds and tests with; installs only what is missing.
# libclang-rt-dev: clang's libFuzzer and sanitizer runtimes (make fuzz). libxlsxwriter-dev: simulate --xlsx-output;
# python3-openpyxl: the test that reads the workbook back. libopenmpi-dev + openmpi-bin: kvio simulate --mpi
# (built when found) and its mpirun test.
# prometheus (server and promtool) and curl: the Prometheus e2e tests scrape `kvio trace --listen` with a real server.
# blktrace: `kvio import blktrace` is checked against a real capture (in the QEMU guest, tests/e2e/nvme_guest_test.cpp).
# jq: tests/e2e/bench_verdict_test.cpp runs bench/summarize.jq.
# ccache: the Makefile puts it in front of every compile where installed (a rebuild of unchanged sources is a
# cache hit); the build never needs it. clang-format: `make check-format` (run by `make test`) and `make format`.
# eatmydata: the audit test runs a benchmark under it (an interposed fsync must be found).
# libhiredis-dev: simulate's --remote-tier client (redis/); redis-server + redis-tools: the servers and redis-cli
# its tests start (docs/simulate.md, "Remote tier").
# libfuse3-dev + fuse3: the tests' fault-injecting filesystem (tests/faultfs, build/faultfs) and its fusermount3.
# iproute2 (ss), psmisc (fuser), bc: the drives tests wait for their fio servers' ports, free them and time stops.
set -euo pipefail
pkgs=(clang llvm libclang-rt-dev libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev liburing-dev
      libcli11-dev libyaml-cpp-dev nlohmann-json3-dev rapidjson-dev libsimdjson-dev libgtest-dev g++ make pkg-config
      fio e2fsprogs util-linux xfsprogs zstd blktrace jq ccache clang-format
      libopenmpi-dev openmpi-bin
      qemu-system-x86 busybox-static
      chromium libxlsxwriter-dev python3-openpyxl
      prometheus curl eatmydata libfuse3-dev fuse3
      libhiredis-dev redis-server redis-tools
      iproute2 psmisc bc)
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "kvio deps: missing ${missing[*]}; run 'sudo make deps'" >&2; exit 1
  fi
  echo "kvio deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
