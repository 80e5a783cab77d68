// Writes before the measured run (docs/mlperf-benchmark.md, "Trace replay and special modes"): --decode-only's
// prepopulation (num_users × 10 entries "prepop_<i>") and --precondition's fill ("precond_<seq>" entries until a byte
// target). Both write 2048-token entries through the normal tier logic from several threads, print progress, and end
// with reset_stats() (counters only: the entries stay and are evicted by LRU later).
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/cache.h"

namespace kvio::serving {

/// What a warm-up wrote.
struct WarmupResult {
    std::vector<std::string> keys;  ///< keys written successfully, by sequence number
    uint64_t bytes_written = 0;     ///< Σ entry bytes of those keys (tokens × bytes/token / TP)
    uint64_t failed = 0;            ///< allocations that failed (no tier took the entry, or the write failed)
    bool stalled = false;           ///< precondition: more than 50 consecutive failures ended it early
    double seconds = 0;             ///< wall time, CLOCK_MONOTONIC
    unsigned threads = 0;
    uint64_t target_bytes = 0;  ///< precondition: the byte target (0 for prepopulation)
    bool stopped = false;       ///< `stop_requested` said stop (a signal) before the warm-up was done
    /// kvio.prepopulation / kvio.precondition: {entries, bytes_written, failed, threads, seconds, stopped,
    /// [target_bytes, stalled]}.
    nlohmann::ordered_json to_json() const;
};

/// Polled by the warm-up writers before each entry; true ends the warm-up early (WarmupResult::stopped). Empty: never.
using StopRequested = std::function<bool()>;

/// --decode-only: `count` entries "prepop_<i>" (i = 0 .. count-1) of 2048 tokens with `threads` writers (0 =
/// online CPUs, else 16 — the benchmark's os.cpu_count() or 16). Progress lines on `progress` (may be null).
WarmupResult prepopulate(MultiTierCache& cache, uint64_t count, unsigned threads, std::ostream* progress,
                         const StopRequested& stop_requested = {});

/// --precondition: "precond_<seq>" entries of 2048 tokens until their summed size reaches `target_bytes`, with
/// `threads` writers (0 = online CPUs, else 4); more than 50 consecutive failures stop it (stalled).
WarmupResult precondition(MultiTierCache& cache, uint64_t target_bytes, unsigned threads, std::ostream* progress,
                          const StopRequested& stop_requested = {});

}  // namespace kvio::serving
