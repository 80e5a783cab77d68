// Which level `kvio distill` writes: the rule that picks the file level for page-cache workloads, and the
// cross-check of the application's bytes against the device's (docs/distill.md, "Two levels").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distiller/distill.h"
#include "distiller/file_job.h"
#include "distiller/profile.h"

namespace kvio::distiller {

/// What the level rule found.
struct LevelChoice {
    bool device = true, file = false;
    std::string reason;         ///< one line: why this level
    size_t dev_index = 0;       ///< the traced device whose filesystem the file level replays (index into the profiles)
    FilePattern pattern;        ///< the calls on that filesystem (empty when none were read)
    uint64_t syscalls = 0;      ///< syscall records read (0: the level was given as device, or the trace has none)
    uint64_t device_bytes = 0;  ///< that device's read + write command bytes
    /// Of device_bytes, the share not explained by direct calls (device bytes - direct call bytes, clamped): what
    /// the page cache (writeback, readahead) and the filesystem's metadata made.
    double page_cache_share = 0;
    std::string level_name() const { return device && file ? "both" : file ? "file" : "device"; }
    nlohmann::json to_json() const;
    /// Header lines of the file job: the level, why, and the app's bytes against the device's.
    std::vector<std::string> header_lines(const Profile& dev) const;
};

/// Applies the level rule to the trace `o.events` and its device profiles: Device reads no syscall record (the
/// device level exactly as before); File, Both and Auto read the syscall records (load_syscalls, with --pid/--comm)
/// and derive the pattern on the busiest traced filesystem among the traced devices. Auto is File when that
/// pattern's buffered calls moved bytes and more than half of the device's bytes are not explained by direct
/// calls; otherwise Device, with the reason (no syscall records, no file identity, no calls on a traced device's
/// filesystem, mostly direct). File or Both without a pattern throws kvio::Error saying why.
LevelChoice choose_level(const DistillOptions& o, const std::vector<Profile>& devs);

}  // namespace kvio::distiller
