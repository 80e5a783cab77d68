// Watching a process tree for preloaded libraries while it runs (kvio audit's "preload" check).
#pragma once
#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "audit/audit.h"

namespace kvio::audit {

/// Collects the LD_PRELOAD entries of `root` and every process below it, and the shared objects mapped into each
/// that its executable does not need (outside the DT_NEEDED closure and interpreter) and that define an I/O
/// function, each time sample() is called (the audit samples every 100 ms while the command runs); preloads() adds
/// /etc/ld.so.preload and reads what each defines. docs/audit.md, "Preloaded libraries".
class PreloadWatch {
public:
    /// Reads /proc for the processes below `root` (parents from /proc/PID/stat), their LD_PRELOAD and their maps.
    void sample(pid_t root);
    /// Every library seen (first sighting names its source), plus /etc/ld.so.preload's, with interposed functions.
    std::vector<Preload> preloads() const;
    /// Every pid seen in the tree so far (the root included): whose syscall records the audit counts.
    const std::set<pid_t>& pids() const { return pids_; }
    /// The pids whose /proc/PID/maps was read at least once (a process that ended before a sample is not in it).
    const std::set<pid_t>& maps_read() const { return maps_read_; }

private:
    /// What the loader reads from one ELF object's dynamic section: its DT_SONAME (else file name), DT_NEEDED,
    /// PT_INTERP, and the I/O functions it defines.
    struct Dynamic {
        std::string soname, interp;
        std::vector<std::string> needed, interposes;
    };
    const Dynamic& dynamic_of(const std::string& path);  ///< cached per path
    void sample_maps(pid_t pid);
    std::map<std::string, Dynamic> dyn_;
    std::set<pid_t> maps_read_;
    std::map<std::string, std::string> seen_;  ///< path -> where it was first seen
    std::set<pid_t> pids_;
};

}  // namespace kvio::audit
