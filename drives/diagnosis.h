// The diagnosis section of `kvio drives`: per drive and load mode, what the trace of its median round says
// (diagnose::diagnose on the run's kvio.trace/1 summary) and whether the job left the drive's own headroom unused
// (the job's figure against the drive's ceiling probe at the device's measured queue depth). docs/drives.md,
// "Diagnosis".
#pragma once
#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "drives/target_run.h"

namespace kvio::drives {

/// Below this share of the probe's ceiling, at a mean device queue depth below kHeadroomQd, a direction is reported
/// as "job_below_ceiling": the probe ran at QD 32 (target_run.cpp probe_ceiling), a quarter of that is where a
/// queue-depth-bound job starts to show; half the ceiling is the LMCache study's shape (a QD-1 loader at 11 % of
/// its drive, docs/diagnose.md "low_queue_depth").
inline constexpr double kHeadroomShare = 0.5;
inline constexpr double kHeadroomQd = 8;

/// The round of `mode` whose verdict figure is the median among the rounds that completed and were traced; null when
/// none was.
const RunResult* median_traced_round(const Target& t, const std::string& mode);

/// The job_below_ceiling findings of one closed-loop round: per direction whose busiest phase reached less than
/// kHeadroomShare of every ceiling the probe measured for it (sequential MB/s; for reads also random 4 KiB IOPS: a
/// small-block job is judged by the closer of the two) at a known mean dispatch queue depth below kHeadroomQd (0: the
/// tracer sampled none of that direction's dispatches, target_run.h kQdSample; no finding). Figures:
/// job_mb_s, job_iops, ceiling_mb_s, ceiling_iops (null: not probed), share_pct (the larger share), device_qd_mean.
/// None without a ceiling or a trace.
std::vector<diagnose::Finding> headroom_findings(const Target& t, const RunResult& r);

/// Every finding for `t` in `mode`: diagnose::diagnose on the median traced round's trace summary (no events: the
/// rules that need per-command records are skipped) and, for a closed loop, headroom_findings. Empty when no round
/// was traced; throws nothing (a trace that cannot be read gives one "trace_unreadable" finding).
std::vector<diagnose::Finding> drive_findings(const Target& t, const std::string& mode);

}  // namespace kvio::drives
