// The diagnosis' rules, one function each (docs/diagnose.md); diagnose() in diagnose.cpp calls them in order.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/syscall_trace.h"
#include "diagnose/diagnose.h"

namespace kvio::diagnose {

/// Count and sum of histogram `name` of the histograms object `hs` (0, 0 when absent).
struct HistSum {
    uint64_t count = 0, sum = 0;
    double mean() const { return count ? double(sum) / double(count) : 0; }
};
HistSum hist_sum(const nlohmann::json& hs, const std::string& name);

/// Commands at one cap (bytes) and runs of them: contiguous same-direction commands, each issued before the previous
/// one completed (the pieces of one split transfer).
struct CapChains {
    uint64_t at_limit = 0;       ///< commands of exactly the cap
    uint64_t chained_bytes = 0;  ///< bytes in chains of >= 2 contiguous commands issued while the previous one ran
    uint64_t chains = 0;         ///< such chains
    uint64_t chained_cmds = 0;   ///< commands in them
};
/// What the per-command records say about one device and direction (filled from the events file).
struct CommandFacts {
    uint64_t cmds = 0, bytes = 0;
    uint64_t unaligned = 0;  ///< commands whose start or size is not a multiple of 4 KiB
    CapChains sectors;       ///< at max_sectors_kb
    CapChains segments;      ///< at max_segments pages, when that is below max_sectors_kb (command_caps)
};
/// Per device "MAJ:MIN", per direction ("read", "write").
using CommandFactsMap = std::map<std::string, std::map<std::string, CommandFacts>>;

/// The caps on a command of a device of the summary (`devices[]` entry `d`), bytes: `sectors` max_sectors_kb × 1024;
/// `segments` max_segments × 4096 when that is smaller (each segment one page when the pages are not physically
/// contiguous), else 0. Both 0 when the summary has no max_sectors_kb.
struct CommandCaps {
    uint64_t sectors = 0, segments = 0;
};
CommandCaps command_caps(const nlohmann::json& d);

/// Reads the events file's commands: fills `facts` (chains and commands at each device's caps, command_caps of
/// `trace`) and appends the low_queue_depth findings.
void command_rules(const Inputs& in, CommandFactsMap& facts, std::vector<Finding>& out);
/// split_by_max_sectors per device and direction, from bssplit, block_events and `facts` (empty without events); else
/// split_by_max_segments from `facts` alone.
void split_rule(const nlohmann::json& trace, const CommandFactsMap& facts, std::vector<Finding>& out);
/// page_cache_reads from the events file's syscall records `sys` (none: no finding).
void page_cache_rule(const nlohmann::json& trace, const std::vector<SyscallRec>& sys, std::vector<Finding>& out);
/// small_write_amplification: the application's write bytes (syscall records) against the devices' (summary).
void small_write_rule(const nlohmann::json& trace, const std::vector<SyscallRec>& sys, std::vector<Finding>& out);
/// unaligned_io: syscall reads and writes (per direction) and device commands (per device and direction, from
/// `facts`) whose offset or length is not a multiple of 4 KiB.
void unaligned_rule(const nlohmann::json& trace, const std::vector<SyscallRec>& sys, const CommandFactsMap& facts,
                    std::vector<Finding>& out);
/// fsync_dominated_writes from the process histograms.
void fsync_rule(const nlohmann::json& trace, std::vector<Finding>& out);
/// queue_wait, requeues and merged_small_io per device and direction.
void queue_rules(const nlohmann::json& trace, std::vector<Finding>& out);

}  // namespace kvio::diagnose
