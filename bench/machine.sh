#!/usr/bin/env bash
# bench/machine.sh KVIO ROUNDS SECS ENGINES — what bench/run.sh records in machine.json, as one JSON object on stdout:
# the machine (kernel, CPUs, memory), the tools' versions, `KVIO --version` of the binary under test (kvio_version:
# the commit it was built from) and the source tree's HEAD (git_head: a build dir can be older than the tree), the
# date and the bench's knobs. A tool that is missing is recorded as "missing".
set -euo pipefail
KVIO=$1 ROUNDS=$2 SECS=$3 ENGINES=$4
HERE=$(cd "$(dirname "$0")" && pwd)
first_line() { { "$@" 2>/dev/null || echo missing; } | head -1; }
jq -n --arg k "$(uname -r)" --argjson n "$(nproc)" --argjson m "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" \
      --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" --arg fio "$(first_line fio --version)" \
      --arg bt "$(first_line bpftrace --version)" --arg kv "$(first_line "$KVIO" --version)" \
      --arg head "$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)" \
      --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson rounds "$ROUNDS" --argjson secs "$SECS" --arg eng "$ENGINES" \
      '{kernel:$k, nproc:$n, mem_kib:$m, cpu:$cpu, fio:$fio, bpftrace:$bt, kvio_version:$kv, git_head:$head, date:$date,
        rounds:$rounds, fio_secs:$secs, overhead_engines:$eng}'
