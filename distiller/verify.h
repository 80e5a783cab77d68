// `kvio distill --verify`: run a distilled job under `kvio trace` and score the replay against the original.
#pragma once
#include <string>

#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/profile.h"

namespace kvio::distiller {

/// How to run the closed loop.
struct VerifyOptions {
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio binary that provides `trace`
    std::string job_path;                     ///< where the generated job file is (already written)
    std::string target;                       ///< block device the job runs on (the job's filename)
    std::string events_out;                   ///< where the replay trace goes
    uint64_t needs_bytes = 0;                 ///< the job's offset + size; a smaller target is refused (0: unchecked)
};

/// The traced replay: its commands and their profile.
struct Replay {
    EventTrace trace;
    Profile profile;
};

/// Runs `KVIO trace --events EVENTS -d DISK -- fio --output-format=json --output=FILE JOB` and profiles
/// the replay trace on the target's whole disk. Throws kvio::Error when the target is not a block
/// device, is mounted, is the original trace's device, is smaller than `needs_bytes` (fio would quietly
/// shrink the job's region), or when trace/fio fail (exit status named). SIGINT, SIGTERM and SIGHUP during
/// the run are passed on to the traced run (which ends fio and flushes its trace), then rethrown as an Error.
Replay run_replay(const Profile& orig, const VerifyOptions& opt);

}  // namespace kvio::distiller
