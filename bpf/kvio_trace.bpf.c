// SPDX-License-Identifier: GPL-2.0
/* kvio_trace.bpf.c — the storage latency stack, aggregated in the kernel: one BPF object, one skeleton
 * (trace/tracer.cpp loads it). Each concern is a header, included here in the order the programs appear:
 *   config.bpf.h      every rodata knob (set by userspace before load) and every map
 *   core_fixes.bpf.h  kernel structures that moved between versions (CO-RE), typed vs probe-read access
 *   util.bpf.h        counters, lookup-or-init, the event ring buffer
 *   hist.bpf.h        histograms (slot rules shared with userspace: kvio_trace.h)
 *   slot_table.bpf.h  open addressing of in-flight state by kernel pointer
 *   filters.bpf.h     -d, -p, -c, --cgroup
 *   owner.bpf.h       who submitted an I/O
 *   rq_state.bpf.h    in-flight block requests and device queue depths
 *   test_hooks.bpf.h  hooks of the test build only (-DKVIO_BPF_TEST_HOOKS)
 *   block.bpf.h       block layer programs        io_uring.bpf.h  io_uring submission programs
 *   nvme.bpf.h        NVMe driver programs        syscalls.bpf.h  syscall programs
 *   forks.bpf.h       children of filtered processes
 *   breakdown.bpf.h   --breakdown: merges, splits, requeues
 *   file_attr.bpf.h   --files: the file each command moves, per-file stats */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/kvio_trace.h"

char LICENSE[] SEC("license") = "GPL";

#include "bpf/config.bpf.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/util.bpf.h"
#include "bpf/hist.bpf.h"
#include "bpf/slot_table.bpf.h"
#include "bpf/filters.bpf.h"
#include "bpf/owner.bpf.h"
#include "bpf/rq_state.bpf.h"
#include "bpf/test_hooks.bpf.h"
#include "bpf/file_attr.bpf.h"

#include "bpf/block.bpf.h"
#include "bpf/io_uring.bpf.h"
#include "bpf/nvme.bpf.h"
#include "bpf/syscalls.bpf.h"
#include "bpf/forks.bpf.h"
#include "bpf/breakdown.bpf.h"
