#include "workload/serving/tiers/extent_alloc.h"

namespace kvio::serving {

ExtentAllocator::ExtentAllocator(uint64_t start, uint64_t end, uint64_t align) : align_(align) {
    uint64_t s = (start + align - 1) / align * align, e = end / align * align;
    if (e > s) {
        free_[s] = e - s;
        capacity_ = free_total_ = e - s;
    }
}

void ExtentAllocator::take(std::map<uint64_t, uint64_t>::iterator it, uint64_t len, Pieces& out) {
    uint64_t off = it->first, have = it->second;
    out.push_back({off, len});
    free_.erase(it);
    if (have > len) free_[off + len] = have - len;
    free_total_ -= len;
}

ExtentAllocator::Pieces ExtentAllocator::allocate(uint64_t bytes) {
    Pieces out;
    uint64_t need = (bytes + align_ - 1) / align_ * align_;
    if (need == 0 || need > free_total_) return out;
    for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second >= need) {
            take(it, need, out);
            return out;
        }
    while (need > 0) {  // fragmented: pieces from the lowest offsets
        auto it = free_.begin();
        uint64_t len = std::min(need, it->second);
        take(it, len, out);
        need -= len;
    }
    return out;
}

void ExtentAllocator::release(const Pieces& p) {
    for (auto [off, len] : p) {
        free_total_ += len;
        auto next = free_.lower_bound(off);
        if (next != free_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == off) {
                off = prev->first;
                len += prev->second;
                free_.erase(prev);
            }
        }
        if (next != free_.end() && off + len == next->first) {
            len += next->second;
            free_.erase(next);
        }
        free_[off] = len;
    }
}

}  // namespace kvio::serving
