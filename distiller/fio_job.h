// Turning a measured Profile into a fio job file whose every value says where it came from.
// Derivation rules: docs/distill.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distiller/profile.h"

namespace kvio::distiller {

/// What the caller decides (the trace cannot): the target and the run length.
struct JobOptions {
    std::string filename;        ///< fio target; required (never a default device)
    bool target_is_block = false;///< the target is a block device node (a write job then carries a warning)
    uint32_t runtime_s = 0;      ///< 0: the trace span rounded up to whole seconds (at least 1)
    uint32_t nr_requests = 0;    ///< device tags/queue depth limit; 0: unknown (read from sysfs by the caller)
    std::string nr_requests_source;  ///< where nr_requests came from, for the header ("sysfs /sys/block/loop0/queue/nr_requests")
    std::string job_name = "kvio-distilled";
};

/// The generated job: its text and the options it sets, in order, for tests and --json.
struct FioJob {
    std::string text;                                         ///< the .ini file
    std::vector<std::pair<std::string, std::string>> options; ///< key=value of the job section, in order
    std::vector<std::string> not_inferred;                    ///< what the trace could not tell
    /// Value of option `key`, "" when absent.
    std::string get(const std::string& key) const;
    /// Bytes the target must have: offset + size; 0 when the job sets no size (fio uses the whole target).
    uint64_t needs_bytes() const;
};

/// `path` for fio's filename=: fio separates several files with ':', so a ':' in a path (e.g.
/// /dev/disk/by-path/pci-0000:00:04.0-nvme-1) is written '\:' (fio HOWTO, filename).
std::string fio_filename_escape(const std::string& path);

/// fio bssplit list of one direction: "SIZE/PCT:SIZE/PCT..." with sizes ascending, sizes as fio
/// suffixes (128k), percentages from largest_remainder() summing to exactly 100. At most 64 sizes
/// (fio's BSSPLIT_MAX): the most frequent are kept, the rest are reported in `dropped`.
std::string bssplit_list(const Dist& sizes, uint64_t* dropped = nullptr);

/// Derives the fio job. Throws kvio::Error, naming the reason, for implausible traces: an in-flight
/// count (sweep, kernel `qd`, Little's law or the chosen iodepth × numjobs) above `nr_requests`, or a
/// trace that lost more than 5 % of its events (completions ≪ issues). `opt.filename` must be set.
FioJob make_fio_job(const Profile& p, const JobOptions& opt);

}  // namespace kvio::distiller
