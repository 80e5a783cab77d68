#include "workload/pattern.h"

#include <cstring>

namespace kvio::workload {

static inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t pattern_word(uint64_t object_id, uint64_t off) { return splitmix64((object_id << 40) ^ (off >> 3)); }

void fill_pattern(void* buf, uint64_t object_id, uint64_t off, size_t len) {
    auto* w = static_cast<uint64_t*>(buf);
    for (size_t i = 0; i < len / 8; ++i) w[i] = pattern_word(object_id, off + i * 8);
}

uint64_t checksum_word(uint64_t word, uint64_t off) { return splitmix64(word ^ ((off >> 3) * 0x9e3779b97f4a7c15ull)); }

uint64_t checksum(const void* buf, uint64_t off, size_t len) {
    const auto* w = static_cast<const uint64_t*>(buf);
    uint64_t s = 0;
    for (size_t i = 0; i < len / 8; ++i) s += checksum_word(w[i], off + i * 8);
    return s;
}

uint64_t pattern_checksum(uint64_t object_id, uint64_t len) {
    uint64_t s = 0;
    for (uint64_t o = 0; o + 8 <= len; o += 8) s += checksum_word(pattern_word(object_id, o), o);
    return s;
}

uint64_t verify_pattern(const void* buf, uint64_t object_id, uint64_t off, size_t len) {
    const auto* w = static_cast<const uint64_t*>(buf);
    for (size_t i = 0; i < len / 8; ++i)
        if (w[i] != pattern_word(object_id, off + i * 8)) return off + i * 8;
    return UINT64_MAX;
}

}  // namespace kvio::workload
