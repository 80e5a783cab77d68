// The serving cache's counters and per-op latency lists (CacheStats) and their one schema: a field table that says,
// for every member, its kvio.merge_state key and how two clients' values combine. Reset, sum (add_cache_stats),
// the merge_state JSON and its parser all walk that table; summary.cache_stats (cache_stats_json) is the
// benchmark's report derived from the same struct, written in the benchmark's key order.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/results/storage_op_stats.h"

namespace kvio::serving {

/// Slots of the per-tier arrays: gpu, cpu, storage, remote (the Tier enum, cache.h).
inline constexpr int kTierSlots = 4;

/// Counters and per-op latency lists, a consistent copy (MultiTierCache::stats()). Byte counters are bytes; lists
/// are seconds; per-tier arrays are indexed by Tier (gpu, cpu, storage, remote). Names follow summary.cache_stats where
/// the benchmark has the figure (docs/mlperf-benchmark.md, "Metrics and the results JSON").
struct CacheStats {
    uint64_t cache_hits = 0, cache_misses = 0;
    uint64_t system_prompt_hits = 0, common_phrase_hits = 0, user_cache_hits = 0, multi_turn_hits = 0;
    uint64_t prefill_writes = 0, decode_reads = 0;
    uint64_t read_operations = 0, write_operations = 0;  ///< read_iops / write_iops in the JSON (counts)
    uint64_t total_read_bytes = 0,
             total_write_bytes = 0;  ///< completed ops only (kvio fix: the benchmark counts before I/O)
    uint64_t offloads_cpu = 0, offloads_storage = 0, evictions = 0;
    double storage_tokens_processed = 0;
    /// Direct ops + demotions (kvio fix: the benchmark counts demotion traffic in neither tier).
    uint64_t tier_bytes_written[kTierSlots] = {}, tier_bytes_read[kTierSlots] = {};
    uint64_t entries[kTierSlots] = {};                                   ///< entries present now
    uint64_t used_bytes[kTierSlots] = {}, limit_bytes[kTierSlots] = {};  ///< limit UINT64_MAX = unlimited
    bool tier_present[kTierSlots] = {};
    std::vector<double> read_lat[kTierSlots], write_lat[kTierSlots];  ///< total, per op, direct ops only
    std::vector<double> storage_read_device, storage_read_host, storage_write_device, storage_write_host;
    std::vector<StorageOpSample> storage_ops;  ///< every completed storage-tier op, demotions included (kvio)
    // kvio's additions (the benchmark does not count demotions at all)
    uint64_t demotions[kTierSlots] = {};  ///< demotions *into* tier t
    uint64_t demotion_bytes[kTierSlots] = {};
    std::vector<double> demotion_lat[kTierSlots];  ///< read from source + write to destination, s
    uint64_t deletions = 0, deletion_bytes = 0;    ///< LRU deletions at the bottom tier
    uint64_t failed_writes = 0, failed_reads = 0;  ///< every failed write (both kinds below) and read
    /// Entries no tier can ever hold (larger than every tier's limit; docs/mlperf-benchmark.md, "Tiers and the
    /// waterfall"): refused unwritten, a subset of failed_writes, with their bytes.
    uint64_t capacity_refusals = 0, capacity_refused_bytes = 0;
    /// Writes that failed on a tier that had room reserved for them (EIO, ENOSPC, a short write; a demotion's write
    /// side included): a subset of failed_writes, failed_writes = capacity_refusals + write_io_errors.
    uint64_t write_io_errors = 0;
    /// --verify-reads (storage tier): payload bytes compared with what was written, and the CPU seconds it took
    /// (OpTiming::check_cpu summed over reads): the check's measured cost, steady where bytes/s swing with load.
    uint64_t verified_bytes = 0;
    double verify_cpu_s = 0;
    uint64_t cut_ops = 0;          ///< ops stopped by cut_ops(): not done, not failed, not in any other counter
    uint64_t cut_bytes_moved = 0;  ///< bytes their system calls had moved (a cut write's file is removed)
    /// Buffered-tier write chunks sent as iovecs per 4 KiB block (the slower gather path) because every noise-pool
    /// copy was taken (NoisePool::copy_misses since the last reset_stats).
    uint64_t gather_fallbacks = 0;
    std::string first_error;             ///< first I/O error seen, of any kind (empty if none)
    std::string first_write_error;       ///< first failed write's (or demotion's write side) I/O error
    std::string first_capacity_refusal;  ///< first entry no tier could hold (a capacity refusal, not an I/O error)
    std::string first_read_error;        ///< first failed read's error (a corrupted read included)
    /// --verify-reads: reads whose bytes differed from what was written (also counted in failed_reads), and the
    /// first one's entry and offset.
    uint64_t corrupted_reads = 0;
    std::string first_corruption;
    /// Why the remote tier was marked down for the rest of the run ("" while it is up): docs/simulate.md, "Remote
    /// tier".
    std::string remote_down;
};

/// limit_bytes of an unlimited tier.
inline constexpr uint64_t kUnlimitedTierBytes = std::numeric_limits<uint64_t>::max();

/// How a CacheStats field combines when many clients' stats are summed (add_cache_stats).
enum class FieldMerge {
    Sum,             ///< counts, bytes, tokens: a + b (per tier for arrays)
    SumOrUnlimited,  ///< tier limits: a + b, unlimited (null in JSON) when either is unlimited
    Any,             ///< tier presence: a || b
    Concat,          ///< latency lists: b's samples after a's
    First,           ///< first_error: a's unless empty
    Local,           ///< the client's own figure: not in kvio.merge_state and not summed (its section reports it)
};

/// A pointer to one CacheStats member, of any of the shapes CacheStats has.
using CacheStatsMember =
    std::variant<uint64_t CacheStats::*, double CacheStats::*, uint64_t (CacheStats::*)[kTierSlots],
                 bool (CacheStats::*)[kTierSlots], std::vector<double> CacheStats::*,
                 std::vector<double> (CacheStats::*)[kTierSlots], std::vector<StorageOpSample> CacheStats::*,
                 std::string CacheStats::*>;

/// One row of the schema: the member's kvio.merge_state key, the member, how it merges.
struct CacheStatsField {
    const char* key;
    CacheStatsMember member;
    FieldMerge merge;
};

/// Every CacheStats member, once, in kvio.merge_state key order (Local fields last).
std::span<const CacheStatsField> cache_stats_fields();

/// Every field back to its default (zero, empty, absent, unlimited = 0 as a fresh CacheStats has).
void reset_cache_stats(CacheStats& s);

/// a += b over the table: counters, bytes, entries and usage summed; latency lists concatenated; limits summed
/// (unlimited stays unlimited); a tier is present if it is in either; a's first_error unless empty; Local fields
/// (cut_ops, cut_bytes_moved, storage_ops) stay a's.
void add_cache_stats(CacheStats& a, const CacheStats& b);

/// kvio.merge_state of one client's results: {"format": "kvio.merge_state/1", "cache_stats": every non-Local field
/// by its table key (counters in ops and bytes, latency lists in seconds per op, arrays indexed gpu, cpu, storage,
/// remote (a state of 3 = before the remote tier), an unlimited limit as null)}.
nlohmann::ordered_json merge_state_json(const CacheStats& s);

/// The CacheStats of a kvio.merge_state. Throws kvio::Error "<where>: field 'kvio.merge_state...x': ..." for a
/// missing or mistyped field.
CacheStats cache_stats_from_state(const nlohmann::ordered_json& state, const std::string& where);

/// summary.cache_stats of `s` for a run of `elapsed_s` seconds: every key the benchmark writes, same units,
/// percentiles with numpy's linear interpolation, plus storage_health (docs/mlperf-benchmark.md, "Pass/fail
/// assessment") for `performance_profile`. MultiTierCache::cache_stats_json is this on stats(); the multi-client
/// merge calls it on the clients' summed stats.
nlohmann::ordered_json cache_stats_json(const CacheStats& s, double elapsed_s, const std::string& performance_profile);

/// kvio.cache.verify_reads: what --verify-reads checked and what it cost, measured: {checked_bytes, cpu_s,
/// checked_gb_per_cpu_s (10^9 bytes per CPU second), share_of_read_time (cpu_s over the storage tier's summed read
/// latency; null without reads)}.
nlohmann::ordered_json verify_reads_json(const CacheStats& s);

}  // namespace kvio::serving
