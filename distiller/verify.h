// `kvio distill --verify`: run a distilled job under `kvio trace` and score the replay against the original.
#pragma once
#include <string>
#include <vector>

#include "common/queue_settings.h"
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
    bool force = false;                       ///< --force: a writing job may overwrite data in a target's first MiB
    uint64_t huge_pages = 0;  ///< huge pages the job's iomem=shmhuge sections need: reserved for the run, then freed
};

/// One device of a multi-device job: the original's profile and the target its sections ran on.
struct VerifyTarget {
    const Profile* orig = nullptr;
    std::string target;        ///< block device
    uint64_t needs_bytes = 0;  ///< its sections' largest offset + size (0: unchecked)
    QueueSettings queue;       ///< the traced device's queue settings, written onto the target for the run
};

/// The traced replay: its commands and their profile.
struct Replay {
    EventTrace trace;
    Profile profile;
    std::vector<QueueSettingResult> queue;  ///< each traced queue setting on the target (QueueSettingsOverride)
};

/// Runs `KVIO trace --events EVENTS -d DISK -- fio --output-format=json --output=FILE JOB` and profiles
/// the replay trace on the target's whole disk. Throws kvio::Error when the target is not a block
/// device, is mounted, is the original trace's device, is smaller than `needs_bytes` (fio would quietly
/// shrink the job's region), or when trace/fio fail (exit status named). SIGINT, SIGTERM and SIGHUP during
/// the run are passed on to the traced run (which ends fio and flushes its trace), then rethrown as an Error.
Replay run_replay(const Profile& orig, const VerifyOptions& opt);

/// run_replay() for a job on several devices: every target is checked as above (and no two name one disk), the
/// run is traced on every target disk (`-d A -d B ...`), and each target's commands are profiled on their own.
/// `opt.target` and `opt.needs_bytes` are not used. Each target runs with its `queue` written onto its queue (as near
/// as it takes it, never an error) and gets its own settings back at return, on an error or a stop signal
/// (QueueSettingsOverride). Returns one Replay per target, in order.
std::vector<Replay> run_replays(const std::vector<VerifyTarget>& targets, const VerifyOptions& opt);

/// The command that starts the replay's fio: `nice -n -10 fio`, 10 below the caller's niceness (at most -20). A replay
/// is closed-loop, so a fio starved of CPU keeps fewer commands in flight than the trace did and every depth score
/// reads the host's load, not the job (docs/distill.md, "A replay under load"). CFS niceness, never a real-time class:
/// a SCHED_FIFO fio livelocked the loop device's worker (an ordinary kernel thread) when a `flow` job spun; at -10 that
/// worker still gets about a tenth of a contended core (CFS weights 9548 : 1024).
std::vector<std::string> replay_fio_command();

/// Runs argv (stdout and stderr to `log`, created or truncated) and waits for it; SIGINT, SIGTERM and SIGHUP meanwhile
/// are passed on to it (SIGINT as SIGINT, the others as SIGTERM) instead of ending us. Returns the wait status and sets
/// `*stop_signo` to the first stop signal that came (0: none). Throws kvio::Error when fork fails.
int run_passing_stops(const std::vector<std::string>& argv, const std::string& log, int* stop_signo);

}  // namespace kvio::distiller
