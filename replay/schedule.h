// Device-level replay arithmetic, pure and unit-tested: where a captured command lands on the target
// (offset wrapping), when it is issued (timing mode), and which earlier commands it waits for.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvio::replay {

/// How recorded inter-arrival times are reproduced.
struct Timing {
    enum class Mode { AsIs, Afap, Scale } mode = Mode::AsIs;
    double factor = 1.0;  ///< Scale: replay gap = recorded gap × factor (0.5 = twice as fast); AsIs = 1
};

/// Parses "asis" | "afap" (also spelled "fast") | "scale=F" (F > 0, e.g. scale=0.5). Throws kvio::Error naming the
/// spellings.
Timing parse_timing(const std::string& s);
/// "asis" | "afap" | "scale=F".
std::string timing_name(const Timing& t);

/// Offset of command [off, off+len) (bytes from the start of the source disk) on a target of
/// `target_bytes`: unchanged when it fits; else wrapped: off mod W, W = target_bytes rounded down to
/// `align`, and moved to 0 when the wrapped range would cross W. nullopt when len > W (cannot fit).
/// `align` > 0: the target's logical block size (O_DIRECT alignment); `off` is assumed aligned.
std::optional<uint64_t> map_offset(uint64_t off, uint64_t len, uint64_t target_bytes, uint64_t align);

/// Issue time of a command relative to the replay start, ns: (ts_issue - first_ts_issue) × factor;
/// 0 for afap.
uint64_t scheduled_ns(uint64_t ts_issue, uint64_t first_ts_issue, const Timing& t);

/// Dependencies that keep the captured concurrency. Input: the captured commands' (ts_issue,
/// ts_complete) in issue order. Command i may be issued once every command that had completed in the
/// capture before i was issued (ts_complete_j < ts_issue_i; requires ts_issue sorted and
/// ts_complete >= ts_issue) has completed in the replay. Those commands
/// are always a prefix of `completion_order`; `need[i]` is the length of that prefix. Overlap that the
/// capture had is allowed, overlap it did not have is not, so in-flight depth never exceeds the
/// captured depth (`max_inflight` = max over i of i + 1 - need[i]).
struct Dependencies {
    std::vector<uint32_t> completion_order;  ///< command indices sorted by (ts_complete, index)
    std::vector<uint32_t> need;              ///< per command: completed prefix of completion_order required
    uint32_t max_inflight = 0;
};
Dependencies dependencies(const std::vector<uint64_t>& ts_issue, const std::vector<uint64_t>& ts_complete);

}  // namespace kvio::replay
