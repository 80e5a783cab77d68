// The bytes of KV-cache entries (docs/mlperf-benchmark.md, "Storage I/O and data generation", the benchmark's
// KVCacheGenerator in spirit): one pre-generated noise pool made once at start from a seeded PRNG, and a
// per-4-KiB-block stamp (key hash and block index XORed into each block's first 16 bytes) so no two blocks of any
// entries are equal (no dedup or compression gain). Generation is never timed as storage time: backends fill their own
// buffers through EntryData and time only the copies and I/O.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/uio.h>

namespace kvio::serving {

/// Default noise pool size: 4 MiB, small enough to stay in the CPU caches while every storage stream copies from
/// it, as fio's per-job buffer does (a 64 MiB pool streamed from DRAM made the kernel's copy into the page cache
/// cost 2x fio's per byte: docs/performance.md, simulate). Entry bytes repeat with this period (apart from the
/// stamps), beyond the windows of filesystem and device compression (128 KiB-1 MiB records).
inline constexpr size_t kNoisePoolBytes = 4u << 20;

/// Writable copies of the pool a NoisePool keeps by default: 2 per hardware thread, at least 4, at most 16 (4 MiB
/// each; only as many as writers ever held at once get made).
size_t default_pool_copies();

/// The noise pool: `bytes` (a multiple of 4096, 4 KiB-aligned) of xoshiro256** output seeded with `seed`, and up
/// to `max_copies` writable copies of it, made on first demand, for stamping entries in place (StampedRange).
class NoisePool {
public:
    explicit NoisePool(uint64_t seed, size_t bytes = kNoisePoolBytes, size_t max_copies = default_pool_copies());
    const uint8_t* data() const { return data_.get(); }
    size_t size() const { return size_; }
    /// A copy equal to data() for the caller alone (the most recently returned one: LIFO, cache-hot), or nullptr
    /// when all `max_copies` are out; never waits. Hand it back, its bytes equal to data() again, with put_copy.
    uint8_t* take_copy() const;
    void put_copy(uint8_t* copy) const;
    /// Copies made so far (tests).
    size_t copies_made() const;
    /// take_copy calls that got nullptr (every copy out, or out of memory): each one a chunk the caller gathered.
    uint64_t copy_misses() const;
    size_t max_copies() const { return max_copies_; }

private:
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data_;
    size_t size_ = 0;
    size_t max_copies_ = 0;
    mutable std::mutex mu_;
    mutable size_t reserved_ = 0;  // copies made or being made
    mutable uint64_t misses_ = 0;
    mutable std::vector<std::unique_ptr<uint8_t, Free>> copies_;
    mutable std::vector<uint8_t*> free_;  // LIFO
};

/// 64-bit FNV-1a of the key, mixed with the seed (the entry's identity in its stamps and pool offset).
uint64_t key_hash(const std::string& key, uint64_t seed);

/// The content of one entry: pool bytes from a key-derived, 4 KiB-aligned start (wrapping), with block b's
/// bytes [0, 8) XORed with the key hash and [8, 16) with b (little-endian).
class EntryData {
public:
    EntryData(const NoisePool& pool, uint64_t hash) : pool_(&pool), hash_(hash) {}
    /// Writes entry bytes [off, off + len) to dst.
    void fill(uint64_t off, void* dst, size_t len) const;
    /// The same bytes without copying the pool: entry bytes [off, off + len) (off a multiple of 4096) as
    /// iovecs pointing into the pool, each block's stamped first bytes written to `stamps` (16 bytes per block)
    /// and pointed at in between, for writev. Stops early when `iov` would exceed `max_iov` (2 per block);
    /// sets `n_iov` and returns the bytes covered (> 0 when max_iov >= 2 and len > 0).
    size_t gather(uint64_t off, size_t len, struct iovec* iov, size_t max_iov, size_t& n_iov, uint8_t* stamps) const;
    uint64_t hash() const { return hash_; }
    /// Pool offset entry byte `off` comes from (before stamping).
    uint64_t pool_offset(uint64_t off) const;
    const NoisePool& pool() const { return *pool_; }
    /// XORs the stamps of the blocks starting in [off, off + len) (off a multiple of 4096, len <= pool size) into
    /// `copy`, a writable copy of the pool, in place: the pool bytes of [off, off + len) in `copy` become the
    /// entry's bytes. Calling it again restores the pool bytes (XOR is its own inverse).
    void toggle_stamps(uint8_t* copy, uint64_t off, size_t len) const;
    /// Checks `len` bytes read back as entry bytes [off, off + len) (any offset) against what fill() writes there,
    /// without making them: each block's 16 stamped bytes one by one, the rest with memcmp against the pool.
    /// Returns the entry offset of the first byte that differs, or kNoMismatch.
    uint64_t first_mismatch(uint64_t off, const uint8_t* buf, size_t len) const;
    static constexpr uint64_t kNoMismatch = ~uint64_t(0);

private:
    const NoisePool* pool_;
    uint64_t hash_;
};

/// Entry bytes [off, off + len) (off a multiple of 4096) as one contiguous range of a writable pool copy with the
/// range's stamps XORed in place, two iovecs where the pool wraps: writev walks 2 iovecs instead of 2 per 4 KiB
/// block (gather) and nothing copies the data. Covers min(len, pool size) bytes. The copy is this object's alone;
/// the destructor XORs the stamps back and returns it. ok() is false when every copy is out (use gather then).
class StampedRange {
public:
    StampedRange(const EntryData& d, uint64_t off, size_t len);
    ~StampedRange();
    StampedRange(const StampedRange&) = delete;
    StampedRange& operator=(const StampedRange&) = delete;
    bool ok() const { return copy_ != nullptr; }
    const struct iovec* iov() const { return iov_; }
    size_t n_iov() const { return n_iov_; }
    size_t bytes() const { return len_; }

private:
    const EntryData& d_;
    uint64_t off_;
    size_t len_;
    uint8_t* copy_;
    struct iovec iov_[2] = {};
    size_t n_iov_ = 0;
};

/// The stamp block `block` of an entry with `hash` carries: (hash, block), for checks in tests.
struct BlockStamp {
    uint64_t hash = 0, block = 0;
};
/// Reads the stamp of a 4 KiB block given the pool bytes it was made from (XOR inverse).
BlockStamp read_stamp(const uint8_t* block, const uint8_t* pool_bytes);

}  // namespace kvio::serving
