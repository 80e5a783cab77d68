// `kvio drives`: one workload (a fio job, or kvio simulate's serving workload) on many targets (this host's block
// devices, files and directories; hosts running `fio --server`), in interleaved rounds, traced at the device, side by
// side with a verdict that says whether a difference is larger than the rounds' spread. docs/drives.md.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "drives/kv_line.h"

namespace kvio::drives {

/// What `kvio drives` runs. Sizes in bytes, times in seconds.
struct DrivesOptions {
    std::string job_path;                     ///< the fio job (distilled or any); "" with events_path
    std::string events_path;                  ///< a kvio trace (kvio.events/1 or .bin/1), distilled on the fly
    std::string simulate;                     ///< `kvio simulate` flags: the serving workload on each drive
    std::vector<std::string> drives;          ///< `NAME=PATH` / `NAME=HOST[:PORT]:PATH` (job_text.h DriveSpec)
    int rounds = 3;                           ///< runs per target and load mode, interleaved across targets
    std::string load = "closed";              ///< "closed" | "trace" | "both"
    bool keep_thinktime = false;              ///< the closed loop keeps the job's thinktime lines (Pacing)
    bool trace_every_command = false;         ///< --trace-every-command: no duty cycle (target_run.h kTraceDuty)
    std::string out_dir;                      ///< results; default kvio-drives-YYYYMMDD-HHMMSS
    double probe_seconds = 1;                 ///< length of each of the three ceiling probes; 0 skips the probe
    uint64_t probe_bytes = 64ull << 20;       ///< region each probe covers (capped at the target's size)
    bool force = false;                       ///< write a block device whose first MiB holds data
    std::string fio = "fio";                  ///< the fio binary (or a wrapper that execs fio)
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio that traces each local run
    std::string kvio_version;                 ///< written into drives.json
    double remote_timeout_s = 0;              ///< a remote run longer than this is ended and failed; 0: none
    bool html = true;                         ///< also write drives.html
    bool parallel = false;                    ///< local targets at once in each round (default one after another)
    std::vector<std::string> metrics;         ///< `NAME=HOST:PORT`: remote drive NAME's `kvio trace --listen`
    KvObject kv;                              ///< the KV line's object; bytes 0: no KV line (no --model)
    /// kvio simulate's own parser over the --simulate words (the CLI gives cli::check_simulate_args); throws
    /// kvio::Error naming the bad flag or value. Empty: not checked.
    std::function<void(const std::vector<std::string>&)> check_simulate_args;
};

/// Runs everything, prints the table and verdicts to `out`, writes DIR/drives.json (kvio.drives/1) and
/// DIR/drives.html. Returns 0 when every target was measured in every round, 1 when a target failed (the others'
/// results are written and the failed one is named with its reason). Throws kvio::UsageError for bad options,
/// kvio::Error when a target is refused (mounted, read-only, data in its first MiB without `force`: nothing has
/// been written then) and kvio::Stopped on SIGINT/SIGTERM/SIGHUP (after writing what was measured).
int run_drives(const DrivesOptions& opt, std::ostream& out);

}  // namespace kvio::drives
