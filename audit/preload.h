// Watching a process tree for preloaded libraries while it runs (kvio audit's "preload" check).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/forks.h"

namespace kvio::audit {

/// Collects the LD_PRELOAD entries of `root` and every process below it, and the shared objects mapped into each
/// that its executable does not need (outside the DT_NEEDED closure and interpreter) and that define an I/O
/// function, each time sample() is called (the audit samples every 100 ms while the command runs); preloads() adds
/// /etc/ld.so.preload and reads what each defines. docs/audit.md, "Preloaded libraries".
class PreloadWatch {
public:
    /// Reads /proc for the processes below `root` (parents from /proc/PID/stat), their LD_PRELOAD and their maps.
    /// A process's inspection is complete when its maps were read after its loader had mapped every DT_NEEDED
    /// object of its executable (the preloads are mapped before them) or it runs a static executable; each complete
    /// one is remembered with the CLOCK_MONOTONIC instant it began.
    void sample(pid_t root);
    /// The execs in `execs` (a ForkLog's, in order) whose program no complete inspection saw: none began between
    /// the exec and the same process's next exec. A program that ran shorter than the 100 ms between samples is
    /// among them; what it had preloaded is not known.
    std::vector<ExecImage> not_inspected(const std::vector<ExecImage>& execs) const;
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
        bool elf = false;  ///< the file was read as ELF
        std::string soname, interp;
        std::vector<std::string> needed, interposes;
    };
    const Dynamic& dynamic_of(const std::string& path);  ///< cached per path
    bool sample_maps(pid_t pid);                         ///< true: the inspection was complete (sample())
    std::map<std::string, Dynamic> dyn_;
    std::map<pid_t, std::vector<uint64_t>> inspected_;  ///< pid -> instants its complete inspections began
    std::set<pid_t> maps_read_;
    std::map<std::string, std::string> seen_;  ///< path -> where it was first seen
    std::set<pid_t> pids_;
};

}  // namespace kvio::audit
