// One fio job for a whole trace: every device's phases (docs/distill.md "Several devices") and the trim phases
// between them ("Discards"), each device's sections on its own target.
#pragma once
#include <string>
#include <vector>

#include "common/event_trace.h"
#include "distiller/fio_job.h"
#include "distiller/phased_job.h"
#include "distiller/profile.h"
#include "distiller/trims.h"

namespace kvio::distiller {

/// One device of the trace and what its sections are derived with.
struct DeviceJobInput {
    const EventTrace* trace = nullptr;  ///< the device's commands, sorted by ts_issue
    const Profile* whole = nullptr;     ///< profile_events(*trace)
    JobOptions opt;                     ///< its target (`filename`; empty: left to fio's command line) and nr_requests
};

/// What one device's sections were built from, for --json, --verify and reports.
struct DevicePlan {
    std::string dev, disk, filename;  ///< "MAJ:MIN", name, its target ("" when unmapped)
    std::vector<PhasePlan> pieces;    ///< the phases of each stretch between trim runs, in order
    std::vector<TrimRun> trims;       ///< the trim runs, in order
    size_t group = 0;                 ///< devices of one group overlapped in time and run at the same time
    uint64_t needs_bytes = 0;         ///< its target's bytes: the largest offset + size of its sections
};

/// The job of a whole trace. One device without trim runs: make_phased_job(). Otherwise each device's commands
/// are cut at its trim runs (trim_runs()); each stretch between them is derived by make_phased_job and each run by
/// trim_section, in trace order, one after the other (stonewall; an idle section for a gap >= popt.gap_ns).
/// Devices are grouped by time: a device whose first issue comes before the last completion of the group so far
/// joins it. The devices of a group run at the same time, each keeping its own order with fio's wait_for (a
/// stonewall would wait for every device); groups run one after the other (stonewall). A device's sections carry
/// its `filename` (fio_filename_escape) when there are several devices; unmapped ones carry none and the header says
/// so. Throws what check_trace_health and derive_section throw, for any device.
FioJob make_job(const std::vector<DeviceJobInput>& devs, const JobOptions& base, const PhaseOptions& popt,
                std::vector<DevicePlan>* plans = nullptr);

/// [{"dev","disk","filename","group","trim_runs":[{begin,end,discards}],"phases":[...per stretch...]}]
nlohmann::json devices_json(const std::vector<DevicePlan>& plans);

}  // namespace kvio::distiller
