// 64-bit byte arithmetic that says when it overflows instead of wrapping: sizes and offsets read from files
// (payload_bytes, extents, slot counts) may be anything, and a wrapped offset writes the wrong place.
#pragma once
#include <cstdint>
#include <optional>

namespace kvio {

/// a + b; nullopt when it does not fit in 64 bits.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}
/// a × b; nullopt when it does not fit in 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}
/// v rounded up to a multiple of a (a > 0); nullopt when that does not fit in 64 bits.
inline std::optional<uint64_t> checked_round_up(uint64_t v, uint64_t a) {
    auto s = checked_add(v, a - 1);
    if (!s) return std::nullopt;
    return *s / a * a;
}

/// A logical block size a device can have: a power of two from 512 (SECTOR_SIZE) to 65536 bytes
/// (BLK_MAX_BLOCK_SIZE, include/linux/blkdev.h: what blk_validate_block_size accepts).
constexpr bool valid_lba_bytes(uint64_t v) { return v >= 512 && v <= 65536 && (v & (v - 1)) == 0; }

}  // namespace kvio
