// Where entries live on a raw block device used as the storage tier: a first-fit free list of byte ranges
// with coalescing, in units of `align` (1 MiB), over [start, end) (after a reserved first MiB, as kvio gen's
// slots). An entry gets the first free range that holds it whole, else pieces from the lowest offsets, so an
// allocation succeeds whenever enough bytes are free (the policy's accounting is then the only limit).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace kvio::serving {

class ExtentAllocator {
public:
    using Pieces = std::vector<std::pair<uint64_t, uint64_t>>;  // {offset, length}, bytes
    /// [start, end) rounded inwards to `align`.
    ExtentAllocator(uint64_t start, uint64_t end, uint64_t align);
    /// Pieces covering `bytes` rounded up to align, in stream order; empty when fewer bytes are free.
    Pieces allocate(uint64_t bytes);
    /// Returns pieces to the free list, merging neighbours.
    void release(const Pieces& p);
    uint64_t free_bytes() const { return free_total_; }
    uint64_t capacity() const { return capacity_; }
    /// The free ranges (tests).
    const std::map<uint64_t, uint64_t>& free_ranges() const { return free_; }

private:
    void take(std::map<uint64_t, uint64_t>::iterator it, uint64_t len, Pieces& out);
    uint64_t align_;
    uint64_t capacity_ = 0, free_total_ = 0;
    std::map<uint64_t, uint64_t> free_;  // offset -> length
};

}  // namespace kvio::serving
