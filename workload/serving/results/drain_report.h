// What a stopped simulation's drain waited on, from what the cache measured (docs/simulate.md, "Stop rules"): the
// bytes each tier moved since the stop, so the console's drain line says where the requests in flight spend their
// time (memcpy into the CPU tier, or the storage device) instead of guessing.
#pragma once
#include <cstdint>
#include <string>

#include "workload/serving/results/cache_stats.h"

namespace kvio::serving {

/// The console's drain line, without its newline: "simulate: draining: N requests in flight after T s; since the
/// stop: cpu tier 1.21 GB written, 0.00 GB read; storage tier nothing moved". `left` requests in flight, `waited_s`
/// seconds since the stop (whole seconds said), `at_stop` and `now` the cache's counters then and now (per tier
/// tier_bytes_written, which counts a demotion into the tier too, and tier_bytes_read; GB = 1e9 bytes).
/// Only the tiers present (tier_present) are named, gpu, cpu, storage, remote in that order.
std::string drain_line(uint64_t left, double waited_s, const CacheStats& at_stop, const CacheStats& now);

}  // namespace kvio::serving
