#include "workload/pattern.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "common/error.h"

namespace kvio::workload {

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr size_t kBlockWords = kStampBlockBytes / 8;
constexpr uint64_t kStampWords = kStampBytes / 8;

inline uint64_t splitmix64(uint64_t x) {
    x += kGolden;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// The base block, computed once (thread-safe static init).
const std::array<uint64_t, kBlockWords>& base() {
    static const std::array<uint64_t, kBlockWords> b = [] {
        std::array<uint64_t, kBlockWords> a{};
        for (size_t i = 0; i < kBlockWords; ++i) a[i] = splitmix64(0x6b76696full ^ i);
        return a;
    }();
    return b;
}

inline uint64_t stamp_word(uint64_t object_id, uint64_t block_off, uint64_t gen, uint64_t k) {
    switch (k) {
        case 0:
            return object_id;
        case 1:
            return block_off;
        case 2:
            return gen;
        default:
            return stamp_check(object_id, block_off, gen);
    }
}

/// Calls f(word_index_in_buf, payload_off, k) for every stamp word k in payload bytes [off, off + len).
template <class F>
void for_each_stamp_word(uint64_t off, size_t len, F&& f) {
    const uint64_t end = off + len;
    for (uint64_t b = off & ~(kStampBlockBytes - 1); b < end; b += kStampBlockBytes)
        for (uint64_t k = 0; k < kStampWords; ++k) {
            uint64_t o = b + k * 8;
            if (o >= off && o < end) f(size_t((o - off) / 8), o, k);
        }
}

}  // namespace

const char* verify_name(Verify v) { return v == Verify::Full ? "full" : "stamps"; }

Verify parse_verify(const std::string& s) {
    if (s == "stamps") return Verify::Stamps;
    if (s == "full") return Verify::Full;
    throw Error("unknown verify mode '" + s + "' (stamps or full)");
}

uint64_t stamp_check(uint64_t object_id, uint64_t block_off, uint64_t gen) {
    return splitmix64(splitmix64(object_id) ^ (block_off * kGolden) ^ splitmix64(gen ^ 0x67656eull));
}

uint64_t pattern_word(uint64_t object_id, uint64_t gen, uint64_t off) {
    uint64_t in = off & (kStampBlockBytes - 1);
    if (in < kStampBytes) return stamp_word(object_id, off - in, gen, in / 8);
    return base()[in / 8];
}

void fill_base(void* buf, uint64_t off, size_t len) {
    const auto* src = reinterpret_cast<const char*>(base().data());
    auto* dst = static_cast<char*>(buf);
    while (len > 0) {
        size_t in = size_t(off & (kStampBlockBytes - 1));
        size_t n = std::min<size_t>(len, kStampBlockBytes - in);
        std::memcpy(dst, src + in, n);
        dst += n;
        off += n;
        len -= n;
    }
}

void stamp_pattern(void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len) {
    auto* w = static_cast<uint64_t*>(buf);
    for_each_stamp_word(off, len,
                        [&](size_t i, uint64_t o, uint64_t k) { w[i] = stamp_word(object_id, o - k * 8, gen, k); });
}

void fill_pattern(void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len) {
    fill_base(buf, off, len);
    stamp_pattern(buf, object_id, gen, off, len);
}

uint64_t checksum_word(uint64_t word, uint64_t off) { return splitmix64(word ^ ((off >> 3) * kGolden)); }

uint64_t checksum(const void* buf, uint64_t off, size_t len, Verify v) {
    const auto* w = static_cast<const uint64_t*>(buf);
    uint64_t s = 0;
    if (v == Verify::Stamps) {
        for_each_stamp_word(off, len, [&](size_t i, uint64_t o, uint64_t) { s += checksum_word(w[i], o); });
        return s;
    }
    for (size_t i = 0; i < len / 8; ++i) s += checksum_word(w[i], off + i * 8);
    return s;
}

uint64_t pattern_checksum(uint64_t object_id, uint64_t gen, uint64_t len, Verify v) {
    uint64_t s = 0;
    if (v == Verify::Stamps) {
        for_each_stamp_word(0, len, [&](size_t, uint64_t o, uint64_t k) {
            s += checksum_word(stamp_word(object_id, o - k * 8, gen, k), o);
        });
        return s;
    }
    for (uint64_t o = 0; o + 8 <= len; o += 8) s += checksum_word(pattern_word(object_id, gen, o), o);
    return s;
}

uint64_t verify_pattern(const void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len, Verify v) {
    const auto* w = static_cast<const uint64_t*>(buf);
    if (v == Verify::Stamps) {
        uint64_t bad = UINT64_MAX;
        for_each_stamp_word(off, len, [&](size_t i, uint64_t o, uint64_t k) {
            if (bad == UINT64_MAX && w[i] != stamp_word(object_id, o - k * 8, gen, k)) bad = o;
        });
        return bad;
    }
    // Full: block by block, the stamp words, then the rest against the base block (memcmp; a word
    // loop only to locate a difference).
    const auto* b = reinterpret_cast<const char*>(base().data());
    const auto* p = static_cast<const char*>(buf);
    const uint64_t end = off + len;
    for (uint64_t o = off; o < end;) {
        const uint64_t blk = o & ~(kStampBlockBytes - 1);
        const uint64_t pend = std::min<uint64_t>(end, blk + kStampBlockBytes);
        const uint64_t rest = std::max<uint64_t>(o, blk + kStampBytes);
        for (uint64_t x = o; x < std::min(pend, rest); x += 8)
            if (w[(x - off) / 8] != pattern_word(object_id, gen, x)) return x;
        if (rest < pend && std::memcmp(p + (rest - off), b + (rest - blk), pend - rest) != 0)
            for (uint64_t x = rest; x < pend; x += 8)
                if (w[(x - off) / 8] != base()[(x - blk) / 8]) return x;
        o = pend;
    }
    return UINT64_MAX;
}

uint64_t stamp_generation(const void* buf, uint64_t off, size_t len) {
    const auto* w = static_cast<const uint64_t*>(buf);
    uint64_t g = 0;
    bool found = false;
    for_each_stamp_word(off, len, [&](size_t i, uint64_t, uint64_t k) {
        if (!found && k == 2) {
            g = w[i];
            found = true;
        }
    });
    return g;
}

std::string describe_block(const void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len, uint64_t bad) {
    const uint64_t blk = bad & ~(kStampBlockBytes - 1);
    std::string s = "block at payload byte " + std::to_string(blk);
    if (blk < off || blk + kStampBytes > off + len) return s + " differs at byte " + std::to_string(bad);
    const auto* w = static_cast<const uint64_t*>(buf) + (blk - off) / 8;
    if (w[3] != stamp_check(w[0], w[1], w[2]))
        s += " holds no valid stamp";
    else
        s += " holds object " + std::to_string(w[0]) + ", offset " + std::to_string(w[1]) + ", generation " +
             std::to_string(w[2]);
    s += " (expected object " + std::to_string(object_id) + ", offset " + std::to_string(blk) + ", generation " +
         std::to_string(gen) + ")";
    if (bad >= blk + kStampBytes && bad + 8 <= off + len) {
        // The exact byte inside the differing word (little-endian words: byte i of the word is byte bad + i).
        uint64_t got, want = pattern_word(object_id, gen, bad & ~uint64_t(7));
        std::memcpy(&got, static_cast<const char*>(buf) + (bad - off), 8);
        uint64_t x = got ^ want, byte = bad;
        while (x && !(x & 0xff)) x >>= 8, ++byte;
        s += "; first differing byte " + std::to_string(byte);
    }
    return s;
}

}  // namespace kvio::workload
