// What the tracer's BPF maps hold at one moment: read for the end-of-run summary, each INTERVAL, and each scrape.
#pragma once
#include <cstdint>
#include <vector>

#include "bpf/kvio_trace.h"
#include "trace/bpf_stats.h"
#include "trace/trace_report.h"

namespace kvio::trace {

/// Cumulative since the trace started (the in-kernel maps are never cleared).
struct TraceSnapshot {
    explicit TraceSnapshot(uint64_t lba_bucket_bytes) : report(lba_bucket_bytes) {}
    TraceReport report;                     ///< histograms per device and syscall side, groups
    uint64_t counters[KVIO_COUNTERS] = {};  ///< the BPF counters summed over CPUs (enum kvio_counter)
    bool nvme_present = false;              ///< NVMe tracepoints attached
    bool stats_on = false;                  ///< --stats: `progs` carry run counts and times
    std::vector<ProgStats> progs;           ///< per program, since statistics were enabled (empty without --stats)
    uint64_t recursion_misses = 0;          ///< summed bpf_prog_info recursion_misses
    uint64_t taken_ns = 0;                  ///< CLOCK_MONOTONIC when read
    double elapsed_s = 0;                   ///< seconds since the programs were attached
    double start_unix_s = 0;                ///< wall-clock time the trace started (Unix seconds)
};

}  // namespace kvio::trace
