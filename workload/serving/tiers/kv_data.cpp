#include "workload/serving/tiers/kv_data.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

namespace kvio::serving {
namespace {

constexpr uint64_t kBlock = 4096;

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

size_t default_pool_copies() { return std::clamp<size_t>(2 * std::thread::hardware_concurrency(), 4, 16); }

NoisePool::NoisePool(uint64_t seed, size_t bytes, size_t max_copies)
    : size_(std::max<size_t>(bytes / kBlock, 1) * kBlock), max_copies_(max_copies) {
    data_.reset(
        static_cast<uint8_t*>(std::aligned_alloc(kBlock, size_)));  // blocks on page boundaries, as fio's buffers
    if (!data_) throw std::bad_alloc();
    uint64_t sm = seed, s[4];
    for (auto& w : s) w = splitmix64(sm);
    auto* out = reinterpret_cast<uint64_t*>(data_.get());
    for (size_t i = 0; i < size_ / 8; ++i) {  // xoshiro256** (Blackman & Vigna)
        out[i] = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;
        s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    }
}

uint8_t* NoisePool::take_copy() const {
    {
        std::lock_guard<std::mutex> g(mu_);
        if (!free_.empty()) {
            uint8_t* c = free_.back();
            free_.pop_back();
            return c;
        }
        if (reserved_ >= max_copies_) {
            ++misses_;
            return nullptr;
        }
        ++reserved_;  // a new copy is ours to make, outside the lock
    }
    auto* c = static_cast<uint8_t*>(std::aligned_alloc(kBlock, size_));
    if (c) std::memcpy(c, data_.get(), size_);
    std::lock_guard<std::mutex> g(mu_);
    if (c)
        copies_.emplace_back(c);
    else
        --reserved_, ++misses_;  // out of memory: no copy, the caller gathers instead
    return c;
}

void NoisePool::put_copy(uint8_t* copy) const {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(copy);
}

size_t NoisePool::copies_made() const {
    std::lock_guard<std::mutex> g(mu_);
    return copies_.size();
}

uint64_t NoisePool::copy_misses() const {
    std::lock_guard<std::mutex> g(mu_);
    return misses_;
}

uint64_t key_hash(const std::string& key, uint64_t seed) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    uint64_t sm = h ^ seed;
    return splitmix64(sm);
}

uint64_t EntryData::pool_offset(uint64_t off) const {
    const size_t psize = pool_->size();
    return ((hash_ % (psize / kBlock)) * kBlock + off) % psize;
}

void EntryData::fill(uint64_t off, void* dst, size_t len) const {
    auto* out = static_cast<uint8_t*>(dst);
    const size_t psize = pool_->size();
    for (size_t done = 0; done < len;) {  // pool bytes, wrapping
        uint64_t p = pool_offset(off + done);
        size_t n = std::min<size_t>(len - done, psize - p);
        std::memcpy(out + done, pool_->data() + p, n);
        done += n;
    }
    // Stamps: block b's first 16 bytes ^= (hash, b), for the parts of them inside [off, off + len).
    for (uint64_t b = off / kBlock; b * kBlock < off + len; ++b) {
        uint8_t stamp[16];
        uint64_t words[2] = {hash_, b};
        std::memcpy(stamp, words, 16);
        uint64_t s0 = b * kBlock;
        uint64_t lo = std::max(s0, off), hi = std::min(s0 + 16, off + len);
        for (uint64_t i = lo; i < hi; ++i) out[i - off] ^= stamp[i - s0];
    }
}

uint64_t EntryData::first_mismatch(uint64_t off, const uint8_t* buf, size_t len) const {
    for (size_t i = 0; i < len;) {
        const uint64_t o = off + i, b = o / kBlock, in_block = o % kBlock;
        const size_t run = size_t(std::min<uint64_t>(len - i, kBlock - in_block));  // within one block: no wrap
        const uint8_t* p = pool_->data() + pool_offset(o);
        const uint64_t words[2] = {hash_, b};
        uint8_t stamp[16];
        std::memcpy(stamp, words, 16);
        size_t k = 0;
        for (; k < run && in_block + k < 16; ++k)
            if (buf[i + k] != uint8_t(p[k] ^ stamp[in_block + k])) return o + k;
        if (k < run && std::memcmp(buf + i + k, p + k, run - k) != 0)
            for (; k < run; ++k)
                if (buf[i + k] != p[k]) return o + k;
        i += run;
    }
    return kNoMismatch;
}

size_t EntryData::gather(uint64_t off, size_t len, iovec* iov, size_t max_iov, size_t& n_iov, uint8_t* stamps) const {
    n_iov = 0;
    size_t done = 0;
    for (uint64_t b = off / kBlock; done < len && n_iov + 2 <= max_iov; ++b) {
        const size_t blen = std::min<size_t>(kBlock, len - done);
        const uint8_t* src = pool_->data() + pool_offset(b * kBlock);  // a block never wraps: pool is whole blocks
        const size_t sl = std::min<size_t>(16, blen);
        uint64_t words[2] = {hash_, b};
        uint8_t* st = stamps + 16 * (b - off / kBlock);
        std::memcpy(st, words, 16);
        for (size_t i = 0; i < sl; ++i) st[i] ^= src[i];
        iov[n_iov++] = {st, sl};
        if (blen > sl) iov[n_iov++] = {const_cast<uint8_t*>(src + sl), blen - sl};
        done += blen;
    }
    return done;
}

void EntryData::toggle_stamps(uint8_t* copy, uint64_t off, size_t len) const {
    for (uint64_t b = off / kBlock; b * kBlock < off + len; ++b) {  // whole 16 bytes: the copy is the caller's alone
        uint64_t w[2], s[2] = {hash_, b};
        uint8_t* p = copy + pool_offset(b * kBlock);  // a block never wraps: pool is whole blocks
        std::memcpy(w, p, 16);
        w[0] ^= s[0], w[1] ^= s[1];
        std::memcpy(p, w, 16);
    }
}

StampedRange::StampedRange(const EntryData& d, uint64_t off, size_t len)
    : d_(d), off_(off), len_(std::min(len, d.pool().size())), copy_(len_ ? d.pool().take_copy() : nullptr) {
    if (!copy_) return;
    d_.toggle_stamps(copy_, off_, len_);
    const uint64_t p = d_.pool_offset(off_);
    const size_t first = std::min<size_t>(len_, d_.pool().size() - p);
    iov_[n_iov_++] = {copy_ + p, first};
    if (first < len_) iov_[n_iov_++] = {copy_, len_ - first};
}

StampedRange::~StampedRange() {
    if (!copy_) return;
    d_.toggle_stamps(copy_, off_, len_);
    d_.pool().put_copy(copy_);
}

BlockStamp read_stamp(const uint8_t* block, const uint8_t* pool_bytes) {
    uint64_t w[2], p[2];
    std::memcpy(w, block, 16);
    std::memcpy(p, pool_bytes, 16);
    return {w[0] ^ p[0], w[1] ^ p[1]};
}

}  // namespace kvio::serving
