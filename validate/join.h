// Join: attribute each device command to the object op that caused it, streaming, with memory
// proportional to the number of ops (per-op accumulators), never to the number of commands.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "validate/semantic.h"
#include "validate/types.h"

namespace kvio::validate {

/// How commands find their op (docs/validate.md, "Join").
enum class JoinMode { Auto, UserData, Key, Offset };
const char* join_mode_name(JoinMode m);
/// "auto", "user_data", "key", "offset" -> mode. Throws kvio::Error otherwise.
JoinMode parse_join_mode(const std::string& s);

/// Chooses a concrete mode for Auto: `key` when commands carry `key` and ops carry keys; `user_data` when
/// commands carry `user_data`, ops carry trace_id and the engine is io_uring or uring_cmd; else `offset`.
/// Looks at `first`, the first command records of the events file (validate::run passes up to 4096, which it
/// then joins: the file is read once, so a pipe works). `why` receives a one-line reason.
JoinMode choose_join_mode(const SemanticTrace& t, const std::vector<Command>& first, std::string& why);

/// Measured commands of one op: count, bytes, min/max size and an order-free multiset fingerprint
/// (Σ splitmix64(size) mod 2^64; with count and bytes, two multisets that differ collide with p ≈ 2^-64).
struct OpTally {
    uint64_t cmds = 0, bytes = 0, min = UINT64_MAX, max = 0, mhash = 0;
    void add(uint64_t size);
    void merge(const OpTally& o);
};

/// Fingerprint of one command size for OpTally::mhash (splitmix64 finalizer).
uint64_t size_fingerprint(uint64_t size);

inline constexpr int kSizeBins = 64;  ///< bin k holds sizes with floor(log2(bytes)) == k

/// A byte count and a command count.
struct CmdBytes {
    uint64_t cmds = 0, bytes = 0;
    void add(uint64_t b) {
        ++cmds;
        bytes += b;
    }
    void merge(const CmdBytes& o) {
        cmds += o.cmds;
        bytes += o.bytes;
    }
};

/// Everything the join measured.
struct JoinResult {
    JoinMode mode = JoinMode::Offset;
    std::vector<OpTally> ops;                                      ///< indexed like SemanticTrace::ops
    std::array<std::array<uint64_t, kSizeBins>, kOpKinds> bins{};  ///< joined command sizes per op kind
    CmdBytes records;                                              ///< every cmd record read
    CmdBytes joined;                                               ///< attributed to exactly one op
    CmdBytes untagged;                   ///< joined nothing (other processes, metadata, journal, untagged user_data)
    CmdBytes ties;                       ///< two or more ops claim the command (overlapping windows on the same bytes)
    CmdBytes straddles;                  ///< the command crosses op extents (two objects, or partly outside the op)
    CmdBytes direction_mismatch;         ///< user_data/key names an op of the other direction (read for a store, ...)
    CmdBytes duplicates;                 ///< the same command recorded again (same src, dev, offset, bytes, ts_issue)
    CmdBytes non_data;                   ///< flush, discard, other, or 0 bytes: never joined
    CmdBytes passthrough_block_skipped;  ///< block rows dropped because the trace has nvme rows (each NVMe command
                                         ///< shows as both)
    uint64_t nvme_rows = 0;
};

class Joiner {
public:
    /// Builds the index for `mode` (not Auto) over `t.ops`. Throws kvio::Error on ops the mode cannot
    /// index (a trace_id above 32 bits for user_data). `t` must outlive the Joiner.
    Joiner(const SemanticTrace& t, JoinMode mode);
    ~Joiner();
    /// Attributes one command. O(log ops) per command. Returns the index (into SemanticTrace::ops) of the op the
    /// command was joined to, or -1 (untagged, tie, straddle, mismatch, duplicate, non-data). On a trace with NVMe
    /// rows the block rows' answers are provisional: finish() drops those rows (passthrough_block_skipped).
    int64_t add(const Command& c);
    /// Resolves passthrough block rows (dropped when any nvme row was seen, else counted) and returns the tallies.
    JoinResult finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kvio::validate
