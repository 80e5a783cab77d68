// The multi-tier KV cache of the serving simulation (docs/mlperf-benchmark.md, "Tiers and the waterfall"; benchmark
// cache.py:MultiTierCache): GPU → CPU → storage tiers, placement by the waterfall policy (waterfall.h: capacities, 0.8
// target, 0.95 large-entry rule, recursive LRU demotion, LRU deletion at the bottom, no promotion), real I/O through
// one tier backend per tier (tiers.h), and the benchmark's counters and latency lists with its accounting bugs fixed
// (docs/simulate.md). Every method is thread-safe; many workers call allocate()/access() at once.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/results/cache_stats.h"
#include "workload/serving/config.h"

namespace kvio::serving {

/// Remote: kvio's shared Redis/Valkey tier between CPU and storage (docs/simulate.md, "Remote tier"); its value is 3 so
/// the benchmark's three keep theirs (results arrays, io-trace rows).
enum class Tier { Gpu = 0, Cpu = 1, Storage = 2, Remote = 3 };
/// "gpu" | "cpu" | "storage" | "remote" (the results' key spelling; the benchmark's code says "nvme" for storage).
const char* tier_name(Tier t);

/// Phase of a cache operation: PREFILL writes (and prefill-phase reads), DECODE reads. Trace CSV: "Prefill" /
/// "Decode"; demotion pairs are logged as "Evict".
enum class CachePhase { Prefill, Decode };

/// Which counter a hit feeds (benchmark access_cache cache_type): system_prompt_hits, common_phrase_hits,
/// multi_turn_hits, user_cache_hits.
enum class CacheType { User, System, MultiTurn, CommonPhrase };

/// Times of one backend op, in seconds (the benchmark's unit), CLOCK_MONOTONIC. For GPU and CPU tiers
/// total = device = host. Storage (docs/mlperf-benchmark.md, "Latency layers" L4): write host = the write() calls into
/// the page cache (or the O_DIRECT transfers' submission), device = fsync (buffered) or transfer completion (direct);
/// read host = open + fadvise, device = the read() calls / transfers. Data generation is never included.
struct OpTiming {
    double total = 0, host = 0, device = 0;
    /// kvio's own split (storage tiers that measure it; < 0 = not measured): seconds inside the op's system
    /// calls (open, write/writev, fallocate, fsync, close, stat, fadvise, read) ...
    double syscall = -1;
    /// ... and generating its data (pool copy + stamps), which total/host/device leave out. The op's wall time
    /// is total + gen; its own overhead (what the simulation costs beyond the I/O) is total − syscall.
    double gen = 0;
    /// --verify-reads: this thread's CPU seconds spent comparing the bytes read with the entry's (inside total;
    /// CLOCK_THREAD_CPUTIME_ID around each chunk's check), and the payload bytes compared. 0 when not checked.
    double check_cpu = 0;
    uint64_t checked_bytes = 0;
};

struct AllocResult {
    bool ok = false;       ///< false: no tier took it, or the write failed (then nothing is counted as written)
    bool existed = false;  ///< key was already cached: no I/O, latency 0 (benchmark step 1)
    Tier tier = Tier::Storage;
    double latency_s = 0;  ///< timing.total of the write (demotions it caused are not in it, as in the benchmark)
    bool cut = false;      ///< stopped by cut_ops() (then ok is false and nothing is counted but CacheStats::cut_ops)
};

struct AccessResult {
    bool hit = false;
    bool ok = false;  ///< hit and the read succeeded
    Tier tier = Tier::Storage;
    double latency_s = 0;  ///< timing.total of the read; 0 on a miss
    bool cut = false;      ///< stopped by cut_ops() (then hit and ok are false, no hit or miss counted)
    uint64_t bytes = 0;    ///< bytes read when ok: the entry's size in the tier that held it
};

class MultiTierCache {
public:
    /// Builds the tiers from the config (docs/mlperf-benchmark.md, "Tiers and the waterfall"): GPU = gpu_mem_gb ×
    /// num_gpus GiB (present only when > 0; the model or CUDA tier per c.gpu_tier — never silently dropped:
    /// gpu_tier_description() says which runs), CPU = cpu_mem_gb GiB of real RAM, storage under c.cache_dir (a
    /// directory: one file per entry; a block device: an extent allocator on the device, with kvio gen's safety
    /// refusals) limited to storage_capacity_gb GiB or statvfs f_bavail × f_frsize × 0.95. With c.io_trace_log all
    /// tiers are null backends and every op is a CSV row. Throws kvio::Error for an unusable cache_dir or device.
    MultiTierCache(const SimConfig& c, uint64_t bytes_per_token, std::ostream* log);
    ~MultiTierCache();
    MultiTierCache(const MultiTierCache&) = delete;
    MultiTierCache& operator=(const MultiTierCache&) = delete;

    /// allocate_cache(key, tokens, phase): size = tokens × bytes_per_token / TP bytes; places and writes it.
    /// Bounded by --max-concurrent-allocs (a semaphore held across data generation, placement and the write).
    AllocResult allocate(const std::string& key, int64_t tokens, CachePhase phase = CachePhase::Prefill);
    /// access_cache(key, phase, cache_type): a full-entry read if present (no promotion), else a miss. With the
    /// remote tier, a shared entry (remote_shared_key) of `bytes` bytes that this client's tiers do not hold is
    /// looked up on the server: another client may have written it (docs/simulate.md, "Remote tier"). `bytes` is the
    /// size its writer wrote; 0 when the reader does not know it: then only this client's tiers are asked.
    AccessResult access(const std::string& key, CachePhase phase, CacheType type, uint64_t bytes = 0);
    bool contains(const std::string& key) const;
    /// Keys currently cached whose name starts with `prefix` (decode-only picks among "prepop_").
    std::vector<std::string> keys_with_prefix(const std::string& prefix) const;

    CacheStats stats() const;
    /// The run is stopping: from now on storage ops stop between transfers (the buffered directory tier), and
    /// waits for the allocation semaphore, for placement room or for a key another thread reads end, each op
    /// returning with `cut` set. Counted in CacheStats::cut_ops, never as done or failed.
    void cut_ops();
    /// The end of a run, after the workers stopped: the remote tier's write-back queues are drained (at most
    /// kWriteBackDrainS s), then its writers stop; writes still queued are counted lost. No-op otherwise.
    void finish_remote_writes();
    /// Conversation handoff through the remote tier (docs/simulate.md, "Remote tier"): `msg` to client `to`'s list;
    /// false when there is no remote tier or the server refused (the error is counted, the first one kept).
    bool handoff_send(int to, const std::string& msg);
    /// The oldest message handed to this client, nullopt when none (or no remote tier, or an error: counted).
    std::optional<std::string> handoff_take();
    /// reset_stats(): counters and lists to zero; entries and usage stay (after precondition / prepopulation).
    void reset_stats();
    /// summary.cache_stats (docs/mlperf-benchmark.md, "Metrics and the results JSON") for a run of `elapsed_s` seconds:
    /// every key the benchmark writes, same units, percentiles with numpy's linear interpolation, plus storage_health
    /// (docs/mlperf-benchmark.md, "Pass/fail assessment") for `performance_profile`.
    nlohmann::ordered_json cache_stats_json(double elapsed_s, const std::string& performance_profile) const;
    /// kvio's additions for the results' kvio object: demotions, deletions, failures, tier limits and backends.
    nlohmann::ordered_json kvio_json() const;
    /// "model (64 GB/s host↔GPU, no device)" | "cuda (NVIDIA ...)" | "absent (--gpu-mem-gb 0)".
    std::string gpu_tier_description() const;
    /// Storage tier description: path, filesystem or device, I/O mode, limit.
    std::string storage_description() const;
    /// Remote tier description (server, key prefix, chunk size) and limit; "" without --remote-tier.
    std::string remote_description() const;
    /// Set when --storage-capacity-gb is more than the storage tier can hold (the default limit: 95 % of the free
    /// space of the cache directory, or the device's capacity): writes past that fail and are counted; "" otherwise.
    const std::string& capacity_warning() const;
    /// bytes per token / TP: the entry size of `tokens` tokens.
    uint64_t entry_bytes(int64_t tokens) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace kvio::serving
