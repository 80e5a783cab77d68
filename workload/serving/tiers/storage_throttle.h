// A throttled storage tier (kvio's --storage-throttle-mibps, a test hook): wraps the real storage tier and serves
// its ops first come, first served at a fixed bandwidth, as a slow device would. Tests use it to give the storage
// a latency they control (the autoscaler sees latency rise while throughput stays flat, docs/mlperf-benchmark.md,
// "Autoscaler").
#pragma once
#include <memory>

#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

/// `inner` with every read and write also occupying the bytes / (mib_per_s × 2^20) seconds of a shared FIFO
/// timeline: an op starts its slot when the previous op's slot ends and returns when its own slot ends (after
/// its real I/O). The wait is added to the op's device time and total (OpTiming). mib_per_s must be > 0.
std::unique_ptr<StorageTier> make_throttled_storage_tier(std::unique_ptr<StorageTier> inner, double mib_per_s);

}  // namespace kvio::serving
