// Turning a measured Profile into a fio job file whose every value says where it came from.
// Derivation rules: docs/distill.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "distiller/profile.h"

namespace kvio::distiller {

/// How a section ends: after the trace's amount of I/O (`number_ios`, the default) or after its duration.
enum class JobMode { Count, Time };

/// What the caller decides (the trace cannot): the target and the run length.
struct JobOptions {
    std::string filename;  ///< fio target; empty: the job sets none and fio's command line must (--filename=DEV)
    bool target_is_block = false;  ///< the target is a block device node (a write job then carries a warning)
    JobMode mode = JobMode::Count;
    uint32_t runtime_s = 0;          ///< Time mode: the whole job's seconds; 0: the trace span (ms precision)
    uint32_t nr_requests = 0;        ///< device tags/queue depth limit; 0: unknown (read from sysfs by the caller)
    std::string nr_requests_source;  ///< where nr_requests came from, for the header ("sysfs
                                     ///< /sys/block/loop0/queue/nr_requests")
    std::string job_name = "kvio-distilled";
};

using Options = std::vector<std::pair<std::string, std::string>>;

/// One job section of a multi-section (phased) job.
struct FioSection {
    std::string name;              ///< [name]
    std::string comment;           ///< ';' lines written above it (what the section reproduces)
    Options options;               ///< key=value, in order
    std::vector<std::string> why;  ///< what each value came from
    /// Value of option `key`, "" when absent.
    std::string get(const std::string& key) const;
};

/// The generated job: its text and the options it sets, in order, for tests and --json.
struct FioJob {
    std::string text;  ///< the .ini file
    /// A one-section job: key=value of that section, in order. A phased job: its [global] options.
    Options options;
    std::vector<FioSection> sections;       ///< a phased job's sections in file order; empty otherwise
    std::vector<std::string> not_inferred;  ///< what the trace could not tell
    std::vector<std::string> why;           ///< a one-section job: what each of its options came from
    /// Value of option `key` in `options`, "" when absent.
    std::string get(const std::string& key) const;
    /// Bytes the target must have: the largest offset + size of any section; 0 when none sets a size.
    uint64_t needs_bytes() const;
};

/// How one section is written (fio_job.cpp derives its values from a Profile).
struct SectionSpec {
    bool target = true;       ///< ioengine, filename and direct in the section (false: they are in [global])
    bool stonewall = false;   ///< waits for every earlier section
    uint64_t runtime_ms = 0;  ///< Time mode: the section's runtime; 0: the profile's span
    uint32_t flow = 0;        ///< fio flow= weight against concurrent sections (0: none)
    uint32_t flow_id =
        0;  ///< their flow_id: each group of concurrent sections has its own (fio counts a flow's I/O for good)
    std::string rate_why;           ///< why flow was set, for the comment
    double flushes_per_write = -1;  ///< flush requests per write of the whole trace (flush_rate); -1: from the profile
    std::string flush_why;          ///< where that rate came from
    /// The profile's writes are the trace's discards (trims.h): rw becomes trim / randtrim, no flush options.
    bool trim = false;
};

/// Flush requests per write command, and where the number came from: the trace's flush commands, else its
/// completions without an issue (a device without FUA completes the requests of its flush machinery without
/// the issue the tracer sees; measured on a loop device: fio fdatasync=1 gave 299 for 300 writes, dd
/// oflag=direct,sync two per write; at least 16, fewer may be requests issued before the trace began). 0 when there
/// are no writes or neither.
double flush_rate(const Profile& p, std::string& why);

/// The fio options derive_section can set, in the order they are written: its table of derivers, one per option
/// (fio_job.cpp kRules; ioengine, cmd_type, filename and direct are target_options'). For tests and docs.
std::vector<std::string> derived_options();

/// The options of one section derived from `p` (a whole trace, one phase or one stream of a phase), with
/// the reason for each in `FioSection::why` and what could not be told appended to `not_inferred`. The profile is
/// measured once (depth, mix, sizes, region, timing, passes); then each option's deriver, in derived_options()
/// order, gives its value (or none) and its own header lines. Throws kvio::Error when a depth exceeds
/// `opt.nr_requests` or no command size is one fio can issue.
FioSection derive_section(const Profile& p, const JobOptions& opt, const SectionSpec& spec,
                          std::vector<std::string>& not_inferred);

/// Throws kvio::Error when the trace lost more than 5 % of its events (completions ≪ issues) or an in-flight
/// count exceeds the device's tags; returns the header notes (unmatched completions, a missing summary).
std::vector<std::string> check_trace_health(const Profile& p, const JobOptions& opt);

/// ioengine (from the trace's engine hints), filename (when given) and direct=1, appended to `s`.
void target_options(const Profile& p, const JobOptions& opt, std::vector<std::string>& not_inferred, FioSection& s);

/// The ';' header every job starts with: source, WARNING for a write job on a block device, the filename note.
std::string job_header(const Profile& p, const JobOptions& opt, bool writes);

/// A job's options as JSON: {key: value} of a one-section job; for a phased job its [global] options plus
/// "sections": [{"name", "options": {key: value}}] in file order.
nlohmann::json job_json(const FioJob& job);

/// `path` for fio's filename=: fio separates several files with ':', so a ':' in a path (e.g.
/// /dev/disk/by-path/pci-0000:00:04.0-nvme-1) is written '\:' (fio HOWTO, filename).
std::string fio_filename_escape(const std::string& path);

/// fio bssplit list of one direction: "SIZE/PCT:SIZE/PCT..." with sizes ascending, sizes as fio
/// suffixes (128k), percentages from largest_remainder() summing to exactly 100. At most 64 sizes
/// (fio's BSSPLIT_MAX): the most frequent are kept, the rest are reported in `dropped`; `kept`, when given,
/// receives the sizes written (size -> percent).
std::string bssplit_list(const Dist& sizes, uint64_t* dropped = nullptr, Dist* kept = nullptr);

/// Derives a one-section fio job from the whole trace's profile. Throws kvio::Error, naming the reason, for implausible
/// traces: an in-flight count (sweep, kernel `qd`, Little's law or the chosen iodepth × numjobs) above `nr_requests`,
/// or a trace that lost more than 5 % of its events (completions ≪ issues). `notes`: more lines for the header's
/// derivation, after the trace-health ones.
FioJob make_fio_job(const Profile& p, const JobOptions& opt, const std::vector<std::string>& notes = {});

}  // namespace kvio::distiller
