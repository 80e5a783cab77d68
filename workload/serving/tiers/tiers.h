// The tier backends of the multi-tier KV cache behind one small ops table, fio-engine style (STYLE.md): the
// waterfall policy and the cache never know whether a tier is RAM, a bandwidth model, files or a raw device.
// Every op returns its OpTiming (cache.h: seconds, CLOCK_MONOTONIC; data generation never inside) and throws
// kvio::Error on failure, leaving no bytes of a failed write behind.
#pragma once
#include <atomic>
#include <stdexcept>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "workload/serving/cache.h"
#include "workload/serving/tiers/kv_data.h"

namespace kvio::serving {

/// Thrown by a storage op that stopped part way because the run was stopping (MultiTierCache::cut_ops()): the
/// entry is not there (a write removed its file), nothing of it is counted as done.
struct OpCut : std::runtime_error {
    uint64_t bytes_moved;  ///< bytes the op's system calls had moved before it stopped
    explicit OpCut(uint64_t moved) : std::runtime_error("storage op cut by the stop"), bytes_moved(moved) {}
};

/// Thrown by a --verify-reads read whose bytes differ from what the write of its key stored: the data came back
/// wrong (a corrupting drive, filesystem or server), counted apart from reads that failed (CacheStats).
struct PayloadMismatch : Error {
    using Error::Error;
};

/// Thrown by a read of an entry whose bytes never reached the tier (a remote write-back write lost at a fault:
/// docs/simulate.md, "Remote tier"): the cache counts it a miss and forgets the entry, not a failed read.
struct EntryLost : Error {
    using Error::Error;
};

class TierBackend {
public:
    virtual ~TierBackend() = default;
    /// Ops check `*flag` between their transfers and throw OpCut once it is set (the storage tiers: buffered
    /// between its 2 MiB writev and 4 MiB read calls, direct/io_uring and block between engine transfers, so a stop
    /// waits for the transfers in flight only). Null = never. A wrapping tier passes it on.
    virtual void set_cut_flag(const std::atomic<bool>* flag) { cut_flag_ = flag; }
    /// --verify-reads: reads check every byte against what a write of the key stored (EntryData of `pool` and
    /// key_hash(key, seed)) and fail with the entry and offset of the first wrong byte (tiers that support it: the
    /// buffered directory tier). Null = no check. A wrapping tier passes it on.
    virtual void set_read_check(const NoisePool* pool, uint64_t seed) { check_pool_ = pool, check_seed_ = seed; }
    /// "cpu" | "gpu-model" | "gpu-cuda" | "storage-buffered" | "storage-direct" | "storage-io_uring" |
    /// "storage-block" | "null".
    virtual std::string name() const = 0;
    /// One line for the console and results (what runs, where, limits).
    virtual std::string description() const = 0;
    /// Stores `bytes` bytes of `data` under `key` (a new key: the policy never writes a key twice).
    virtual OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) = 0;
    /// Reads the whole entry back (into a scratch buffer: the simulation drops the bytes).
    virtual OpTiming read(const std::string& key, uint64_t bytes) = 0;
    /// Drops the entry (no-op when absent).
    virtual void remove(const std::string& key) = 0;

protected:
    bool cut_requested() const { return cut_flag_ && cut_flag_->load(std::memory_order_relaxed); }
    const NoisePool* check_pool_ = nullptr;
    uint64_t check_seed_ = 0;

private:
    const std::atomic<bool>* cut_flag_ = nullptr;
};

/// Bytes per chunk of a streamed write/read (CPU copies, storage writes and reads): a per-thread buffer of
/// this size bounds memory whatever the entry size.
inline constexpr size_t kChunkBytes = 4u << 20;

/// A thread's chunk buffer (kChunkBytes, 4 KiB-aligned for O_DIRECT), made on first use.
uint8_t* thread_chunk();

/// Seconds on CLOCK_MONOTONIC.
double now_s();

/// The calling thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID): what a piece of work cost, whatever the load.
double thread_cpu_s();

/// CPU tier: real bytes in RAM; write = memcpy from generated chunks (the copies timed), read = memcpy out.
std::unique_ptr<TierBackend> make_cpu_tier();
/// GPU tier, bandwidth model: holds no bytes; an op of B bytes takes B / (gbps × 1e9) s (sleep, then spin to
/// the deadline so latency lists are exact).
std::unique_ptr<TierBackend> make_gpu_model_tier(double gbps);
/// Trace mode: no data, all timings 0; remembers sizes.
std::unique_ptr<TierBackend> make_null_tier();

/// How the storage tier is built (SimConfig's cache_dir, storage_io, storage_qd, max_io_bytes, force).
struct StorageOptions {
    std::string path;             ///< a directory, or a raw block device
    std::string io = "buffered";  ///< buffered | direct (posix engine, O_DIRECT) | io_uring (O_DIRECT)
    uint32_t qd = 8;              ///< io_uring: transfers in flight per op
    uint64_t max_io_bytes = 0;    ///< direct/io_uring transfer cap; 0 = default_max_io() of the device
    bool force = false;           ///< block device: write even if its first MiB holds data
    std::string semantic_path;    ///< kvio.semantic/1 record of every storage op ("" = none)
};

/// A storage backend: also says how much room an entry takes and how much the target has.
class StorageTier : public TierBackend {
public:
    /// Bytes an entry of `bytes` occupies on the target (header + data, rounded to the layout's blocks).
    virtual uint64_t footprint(uint64_t bytes) const = 0;
    /// The target's usable bytes when --storage-capacity-gb is 0: a directory's statvfs f_bavail × f_frsize ×
    /// 0.95 (the benchmark's rule, measured after old entries are deleted), a device's size after its first MiB.
    virtual uint64_t auto_capacity() const = 0;
};

/// The .npy header of a buffered directory tier's entry file, bytes: numpy 1.24's header for these shapes
/// (docs/mlperf-benchmark.md, "Storage I/O and data generation"); an entry takes it plus its data, in whole blocks.
inline constexpr size_t kBufferedNpyHeaderBytes = 128;

/// The storage tier for `o` (docs/mlperf-benchmark.md, "Storage I/O and data generation"):
/// - directory, buffered (the benchmark's device pattern): `<dir>/<key>.npy` = a 128-byte .npy v1.0 header +
///   the data, fallocate(KEEP_SIZE), buffered writes of kChunkBytes (the same device pattern as one big
///   write: writeback decides the commands), fsync, close; read = stat + open + fadvise(DONTNEED) + whole-file
///   reads. Old `*.npy` in the directory are deleted at start.
/// - directory, direct / io_uring: the same files with a 4 KiB .npy header and the data padded to 4 KiB,
///   moved by kvio's engines (O_DIRECT) in transfers of at most max_io_bytes, qd in flight (io_uring).
/// - block device: entries in 1 MiB-aligned extents after the device's first MiB (first-fit, coalescing
///   free list), a 4 KiB header then the data, O_DIRECT through the engine; kvio gen's safety refusals
///   (mounted, in use, read-only; non-empty first MiB unless force).
/// Throws kvio::Error for an unusable path or mode.
std::unique_ptr<StorageTier> make_storage_tier(const StorageOptions& o);

/// The .npy v1.0 header of a 1-D array of `bytes` bytes ('<f2' when even, else '|u1'), padded with spaces
/// to `total` bytes (a multiple of 64, >= 128) ending in '\n'.
std::string npy_header(uint64_t bytes, size_t total);

}  // namespace kvio::serving
