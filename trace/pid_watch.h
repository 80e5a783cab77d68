// `kvio trace -p PID`: the trace ends when the processes it was given have exited, as it does with `-- COMMAND`.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvio::trace {

/// Watches processes that are not our children: a pidfd each (pidfd_open, Linux 5.3; readable once the process has
/// exited, a zombie included), kill(pid, 0) where pidfds are missing (then a zombie still counts as running).
class PidWatch {
public:
    /// Throws kvio::Error "-p PID: no such process" for a pid that does not exist now.
    explicit PidWatch(const std::vector<uint32_t>& pids);
    ~PidWatch();
    PidWatch(const PidWatch&) = delete;
    PidWatch& operator=(const PidWatch&) = delete;

    /// True once every watched process has exited (false without any), without waiting.
    bool all_exited();
    /// "PID 1234 exited" or "every -p process exited (1234, 5678)": why the trace stopped.
    std::string exit_reason() const;
    /// "PID 1234 (fio)" or "PID 1234 (fio), PID 5678 (sh)": the names are those at construction.
    std::string names() const;

private:
    struct Watched {
        pid_t pid;
        int fd;  ///< pidfd, -1 when the kernel has none
        std::string comm;
        bool exited = false;
    };
    std::vector<Watched> procs_;
};

}  // namespace kvio::trace
