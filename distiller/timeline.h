// Time-resolved fidelity: the original and the replay cut into windows and compared window by window, and their
// phase sequences compared. Whole-run distributions cannot see a job that destroys the time structure (a
// flattened randrw job of a write-then-read trace has the right totals); these scores can. docs/distill.md.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "distiller/phases.h"

namespace kvio::distiller {

/// One window's values on one side.
struct WindowStats {
    double read_pct = 0;        ///< reads / commands, percent
    double seq_pct = 0;         ///< sequential commands / commands, percent
    uint32_t depth_median = 0;  ///< median in-flight count at issue
    uint64_t cmds = 0, bytes = 0;
};

/// One window compared.
struct WindowScore {
    WindowStats orig, replay;
    double read_err = 0;  ///< |read share difference|, points
    double size_tv =
        0;  ///< the larger of the per-direction size TVs (a direction with < 5 commands on a side is skipped)
    double depth_tv = 0;  ///< TV of the in-flight-at-issue distributions
    double seq_err = 0;   ///< |sequential share difference|, points
};

/// The phase sequences compared (detect_phases on each side, adjacent phases of one kind counted as one; the replay's
/// boundaries judged against the trace by reconcile_phases).
struct PhaseComparison {
    size_t orig = 0, replay = 0;  ///< phase counts (replay: after reconcile_phases)
    size_t replay_detected = 0;   ///< the replay's phase count as its own detection found them, before reconcile_phases
    bool in_order = false;        ///< same count and phase i has the same mix on both sides (mixes_differ false)
    std::vector<double>
        volume_err_pct;  ///< per phase, |replay bytes − orig bytes| / orig bytes × 100 (same count only)
    std::vector<uint32_t> depth_orig, depth_replay;  ///< per phase, median in-flight at issue
    /// per phase, [read, write]: median in-flight of the command's own direction at its issue
    /// (MixSummary::dir_depth_median), what a concurrent stream's iodepth governs; 0 where the phase has no command of
    /// that direction
    std::vector<std::array<uint32_t, 2>> dir_depth_orig, dir_depth_replay;
    std::vector<std::string> mix_orig, mix_replay;  ///< describe() of each phase
};

/// Window-by-window fidelity. Windows hold equal shares of each side's data commands (window k: commands
/// [k·n/K, (k+1)·n/K)), so they are normalised to each run's own length whatever its speed.
struct TimeFidelity {
    size_t windows = 0;
    std::vector<WindowScore> per_window;
    double worst_read_err = 0, worst_size_tv = 0, worst_depth_tv = 0, worst_seq_err = 0;
    PhaseComparison phases;
    double worst_volume_err = 0;  ///< max of phases.volume_err_pct; 100 when the phase counts differ
};

/// The replay's phases `pr` (collapsed detect_phases of `r`) judged against the trace's `po` (of `o`), each replay
/// command x standing for the trace's command x·|o|/|r| (the same share of its run, as the score windows). A replay
/// boundary with no trace boundary within two detector windows (phase_window(|r|)) is dropped when the replay's phases
/// on both of its sides have the mix of the trace's commands at the same place (mixes_differ false): the replay
/// followed a change of the trace that the trace's own detector did not call a phase (a median depth 5 -> 3 is none, 5
/// -> 2 is one; a replay at 5 -> 2 where the trace went 5 -> 3 is faithful). A trace boundary the replay's detector
/// missed is placed in the replay when the replay's commands on its two sides have the mixes of the two trace phases.
/// Where the replay departs from the trace, its own boundaries stand. docs/distill.md "Time-resolved scores".
std::vector<Phase> reconcile_phases(const std::vector<DataCmd>& o, const std::vector<Phase>& po,
                                    const std::vector<DataCmd>& r, std::vector<Phase> pr);

/// The number of windows the scores cut a run into at most (docs/distill.md "Time-resolved scores").
constexpr size_t kScoreWindows = 20;

/// K = min(max_windows, max(1, n / 100)) over the shorter side's n, so a window holds at least 100 commands.
TimeFidelity score_over_time(const std::vector<DataCmd>& orig, const std::vector<DataCmd>& replay,
                             size_t max_windows = kScoreWindows, const PhaseOptions& popt = {});

struct Fidelity;
/// One line: the time-resolved worst values first (what a flattened job gets wrong), then the phase sequence,
/// then the whole-run numbers, e.g. "worst window: read share error 0.4 points, size TV 0.010, depth TV 0.08,
/// sequential error 1.0 points; phases 2 -> 2 in order, volume error <= 0.1 %; whole run: size TV 0.000/0.002, ...".
std::string summary_line(const Fidelity& whole, const TimeFidelity& t);

/// {"windows","by":"commands","worst":{...},"per_window":[...],"phases":{...}}
nlohmann::json to_json(const TimeFidelity& f);

}  // namespace kvio::distiller
