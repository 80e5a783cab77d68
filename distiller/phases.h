// Phases of a device trace: stretches of commands with one mix (direction share, sizes, in-flight depth,
// sequentiality), separated where the mix changes or by long idle gaps. Rules: docs/distill.md "Phases".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/event_trace.h"

namespace kvio::distiller {

/// Per-command facts the phase detector and the time-resolved score share, one entry per read/write
/// command of a trace (flushes, discards and other commands are not data and have no entry).
struct DataCmd {
    size_t index = 0;  ///< position in EventTrace::cmds
    uint64_t ts = 0;   ///< ts_issue, ns
    uint64_t bytes = 0;
    uint32_t inflight = 0;  ///< device-wide commands in flight at its issue, this one included (issue/complete sweep)
    uint32_t inflight_dir = 0;  ///< commands of its own direction in flight at its issue, this one included
    uint64_t idle_before = 0;   ///< ns the device was idle (nothing in flight) right before this issue; 0 when busy
    bool write = false;
    bool seq = false;  ///< starts where one of the last kSeqWindow same-direction commands ended
};

/// The data commands of `cmds` (sorted by ts_issue) with their in-flight count, idle gap and sequentiality.
std::vector<DataCmd> data_cmds(const std::vector<Cmd>& cmds);

/// Limits of the detector. Defaults: docs/distill.md.
struct PhaseOptions {
    size_t min_cmds = 64;           ///< a phase has at least this many commands ...
    double min_share = 0.01;        ///< ... and at least this share of all data commands
    size_t max_phases = 16;         ///< cap: the most similar neighbours are merged until at most this many remain
    uint64_t gap_ns = 100'000'000;  ///< an idle gap this long (100 ms) always ends a phase
};

/// The shortest phase of a trace of `n` data commands: max(opt.min_cmds, opt.min_share × n), rounded up.
size_t min_phase_len(size_t n, const PhaseOptions& opt);

/// For a trace too short for two phases (fewer than 2 × min_phase_len data commands, at least 2, and
/// opt.max_phases above 1): a one-line note that it becomes one section and loses its time order, with the read share
/// of its first and second half. "" otherwise.
std::string below_phase_minimum_note(const std::vector<DataCmd>& d, const PhaseOptions& opt);

/// One phase: data commands [begin, end) of the data_cmds() vector.
struct Phase {
    size_t begin = 0, end = 0;
    uint64_t idle_before_ns = 0;  ///< idle gap at the device before its first command (0 for the first phase)
    int kind = 0;                 ///< phases with the same kind have the same mix (0, 1, ... in order of appearance)
    size_t cmds() const { return end - begin; }
};

/// The mix of a run of data commands, as the detector compares it.
struct MixSummary {
    double read_share = 0;      ///< reads / commands
    double seq_share = 0;       ///< sequential commands / commands
    uint32_t depth_median = 0;  ///< median in-flight count at issue
    uint32_t dir_depth_median[2] = {
        0, 0};  ///< [read, write]: median of DataCmd::inflight_dir over that direction's commands (0: none)
    uint64_t bytes = 0;
    uint64_t reads = 0, writes = 0;
    std::vector<std::pair<uint64_t, uint64_t>> sizes;  ///< (bytes × 2 + is_write, commands), sorted by key
};
MixSummary summarize(const std::vector<DataCmd>& d, size_t begin, size_t end);

/// True when two mixes differ enough to be two phases: read share by more than 0.25, size TV (direction and
/// size jointly) above 0.5, sequential share by more than 0.5, or median depth by a factor >= 2 and at least 2.
bool mixes_differ(const MixSummary& a, const MixSummary& b);

/// The detector's window: max(32, n / 256) data commands of a trace of n.
size_t phase_window(size_t n);

/// Segments `d` into phases: long idle gaps cut first; inside each stretch, windows of
/// max(32, n/256) commands are compared with the running phase and a change confirmed by two windows is a
/// boundary, placed at the command that maximises the log-likelihood of the new mix (direction-size, depth
/// bucket, sequential flag) over the old one. Phases below the minimum length are merged into their more
/// similar neighbour and the most similar neighbours are merged until at most max_phases remain. Returns at
/// least one phase when `d` is not empty.
std::vector<Phase> detect_phases(const std::vector<DataCmd>& d, const PhaseOptions& opt = {});

/// The smallest period p (in phases) with kind[i] == kind[i + p] for every i, when the phases repeat it at
/// least twice; 0 when they do not.
size_t phase_period(const std::vector<Phase>& phases);

/// "write 64k seq QD1" style one-line description of a mix, for job comments and reports.
std::string describe(const MixSummary& m);

}  // namespace kvio::distiller
