// The fake KV payload: every 4 KiB block of an object is one fixed pseudo-random block (the base
// block, the same for every object) whose first 32 bytes are replaced by a stamp naming the block:
// (object id, payload offset of the block, generation, a check word). Every block of a run is unique
// and can be checked without keeping a copy; filling a buffer costs one memcpy once and 32 bytes per
// 4 KiB per transfer afterwards, so the driver moves bytes about as cheaply as fio does.
//
// Two checks (Verify): Stamps (the default) reads only the stamps, 32 of every 4096 bytes: it catches a
// block that is missing, zeroed, stale (an older generation), misdirected (another object's or
// another offset's block) or torn at 4 KiB granularity, but not a changed byte elsewhere in a block.
// Full compares every byte and checksums every word (the expensive check).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvio::workload {

/// How loads are checked and what OpResult::checksum covers.
enum class Verify { Stamps, Full };
/// "stamps" | "full"; parse throws kvio::Error on anything else.
const char* verify_name(Verify v);
Verify parse_verify(const std::string& s);

constexpr uint64_t kStampBlockBytes = 4096;  ///< one stamp per this many payload bytes
constexpr uint64_t kStampBytes = 32;         ///< stamp words at the start of each block (4 × 8 bytes)

/// The 64-bit word at payload byte offset `off` (a multiple of 8) of object `object_id` stored by the
/// store with generation `gen` (kvio gen: that store's trace_id, >= 1). With B = off rounded down to
/// 4 KiB: word 0 of a block = object_id, word 1 = B, word 2 = gen, word 3 = stamp_check(object_id, B,
/// gen); every other word = base word (off mod 4096) / 8 = splitmix64(0x6b76696f ^ that index).
/// Stored little-endian.
uint64_t pattern_word(uint64_t object_id, uint64_t gen, uint64_t off);

/// Word 3 of a stamp: splitmix64(splitmix64(object_id) ^ B × golden ratio ^ splitmix64(gen)).
uint64_t stamp_check(uint64_t object_id, uint64_t block_off, uint64_t gen);

/// Writes the base block bytes of payload bytes [off, off + len) to `buf` (stamps not written).
void fill_base(void* buf, uint64_t off, size_t len);

/// Writes only the stamp words that fall in payload bytes [off, off + len) (off, len multiples of 8).
/// After fill_base() of the same range (same off mod 4096) the buffer holds the full pattern.
void stamp_pattern(void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len);

/// Fills `len` bytes (multiple of 8) at `buf` with the pattern of payload bytes [off, off + len):
/// fill_base() then stamp_pattern().
void fill_pattern(void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len);

/// Contribution of one word to the checksum: splitmix64(word ^ (off/8) * golden ratio).
uint64_t checksum_word(uint64_t word, uint64_t off);

/// Checksum of bytes [off, off+len) of `buf` = sum (mod 2^64) of checksum_word over its stamp words
/// (Stamps) or over all its words (Full), so pieces of an object can be summed in any order.
/// `off` and `len` multiples of 8.
uint64_t checksum(const void* buf, uint64_t off, size_t len, Verify v);

/// checksum() of the pattern of payload bytes [0, len) of `object_id`, generation `gen`: what the
/// store of that generation and a correct load of it report. Full costs a pass over `len` bytes.
uint64_t pattern_checksum(uint64_t object_id, uint64_t gen, uint64_t len, Verify v);

/// Compares `len` bytes of `buf` with the pattern of [off, off+len): only the stamp words (Stamps)
/// or every word (Full). Returns the payload offset of the first differing word, or UINT64_MAX when
/// all compared words match.
uint64_t verify_pattern(const void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len,
                        Verify v = Verify::Full);

/// The generation in the first stamp inside payload bytes [off, off + len) of `buf`, 0 when the range
/// holds no stamp (a load that has no store before it in the stream adopts what it finds).
uint64_t stamp_generation(const void* buf, uint64_t off, size_t len);

/// One sentence on what the stamp of the block holding payload byte `bad` holds, for an error
/// message: "block at payload byte B holds object X, offset Y, generation G (expected object ..., generation ...)"
/// (or "holds no valid stamp"), plus "; first differing byte N" when `bad` lies beyond the stamp.
/// `buf` holds payload bytes [off, off + len) and `bad` is inside it.
std::string describe_block(const void* buf, uint64_t object_id, uint64_t gen, uint64_t off, size_t len, uint64_t bad);

}  // namespace kvio::workload
