// The fake KV payload: a pattern derived from (object id, byte offset) so any byte read back can be
// checked without keeping a copy, plus an order-independent checksum over it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kvio::workload {

/// The 64-bit word at payload byte offset `off` (a multiple of 8) of object `object_id`:
/// splitmix64(object_id << 40 ^ off / 8). Stored little-endian.
uint64_t pattern_word(uint64_t object_id, uint64_t off);

/// Fills `len` bytes (multiple of 8) at `buf` with the pattern of payload bytes [off, off + len).
void fill_pattern(void* buf, uint64_t object_id, uint64_t off, size_t len);

/// Contribution of one word to the checksum: splitmix64(word ^ (off/8) * golden ratio).
uint64_t checksum_word(uint64_t word, uint64_t off);

/// Checksum of bytes [off, off+len) of `buf` = sum of checksum_word over its words (mod 2^64), so
/// pieces of an object can be summed in any order. `len` a multiple of 8.
uint64_t checksum(const void* buf, uint64_t off, size_t len);

/// Checksum of the pattern of payload bytes [0, len) of `object_id` (what a correct load returns).
uint64_t pattern_checksum(uint64_t object_id, uint64_t len);

/// Compares `len` bytes of `buf` with the pattern of [off, off+len); returns the payload offset of the
/// first differing word, or UINT64_MAX when all match.
uint64_t verify_pattern(const void* buf, uint64_t object_id, uint64_t off, size_t len);

}  // namespace kvio::workload
