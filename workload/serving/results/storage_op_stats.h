// What the storage tier's ops did, op by op, for kvio's additions to the results (kvio.storage_ops): how many
// were in flight on average (Little's law), the entry sizes they moved, and how much of each op was the
// simulation's own overhead rather than system calls — the figures `make bench` compares with fio.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// One completed storage-tier op. Seconds, CLOCK_MONOTONIC.
struct StorageOpSample {
    bool write = false;
    bool demotion = false;  ///< moved down from a faster tier (the waterfall), not a request's own op
    uint64_t bytes = 0;     ///< entry bytes (payload; headers not included)
    double wall_s = 0;      ///< the backend call from start to end, data generation included
    double syscall_s = -1;  ///< inside its system calls; < 0 = the backend does not measure it
    double gen_s = 0;       ///< generating its data (pool copy, stamps)
};

/// Entries of at least this many bytes are the ones the bench's overhead target is about.
inline constexpr uint64_t kLargeEntryBytes = 16ull << 20;

/// kvio.storage_ops: {"mean_in_flight": Σ wall_s / elapsed_s, "write"/"read": {"ops", "bytes", "busy_s",
/// "mean_in_flight", "size_quantiles_bytes": entry sizes at 0, 5, …, 100 % (numpy linear)}, "large_entries":
/// {"min_bytes", "write"/"read": {"ops", "measured_ops" (with a syscall time), "syscall_ms", "overhead_ms",
/// "generation_ms" (p50 each), "overhead_over_syscall": {"p50", "p95", "total" (Σ overhead / Σ syscall)}}}}.
/// overhead = wall − syscall − generation: what the op spent outside its system calls besides making data.
/// elapsed_s <= 0 gives in-flight 0.
nlohmann::ordered_json storage_ops_json(const std::vector<StorageOpSample>& ops, double elapsed_s,
                                        uint64_t large_bytes = kLargeEntryBytes);

}  // namespace kvio::serving
