// Watching a process tree for preloaded libraries while it runs (kvio audit's "preload" check).
#pragma once
#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "audit/audit.h"

namespace kvio::audit {

/// Collects the LD_PRELOAD entries of `root` and every process below it, each time sample() is called (the audit
/// samples every 100 ms while the command runs); preloads() adds /etc/ld.so.preload and reads what each defines.
class PreloadWatch {
public:
    /// Reads /proc for the processes below `root` (parents from /proc/PID/stat) and their LD_PRELOAD.
    void sample(pid_t root);
    /// Every library seen (first sighting names its source), plus /etc/ld.so.preload's, with interposed functions.
    std::vector<Preload> preloads() const;
    /// Every pid seen in the tree so far (the root included): whose syscall records the audit counts.
    const std::set<pid_t>& pids() const { return pids_; }

private:
    std::map<std::string, std::string> seen_;  ///< path -> where it was first seen
    std::set<pid_t> pids_;
};

}  // namespace kvio::audit
