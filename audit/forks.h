// Every fork and exec while a command runs, from the kernel's process events connector: which processes belong to the
// command's tree, however short their lives (kvio audit counts the syscalls of exactly those), and which programs
// they ran (the preload check must have inspected each). docs/audit.md.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kvio::audit {

/// One exec of a process: its pid (tgid), when (the kernel's event time, CLOCK_MONOTONIC ns) and its comm then (the
/// program's file name, at most 15 characters, read from /proc/PID/comm on the event; "" when it had ended).
struct ExecImage {
    pid_t pid = 0;
    uint64_t ns = 0;
    std::string comm;
};

/// Listens to the proc connector (NETLINK_CONNECTOR, CN_IDX_PROC; needs CAP_NET_ADMIN) from construction to stop(),
/// recording each fork's (parent tgid, child tgid) in the kernel's order, and each exec (ExecImage). Thread creation
/// (same tgid) is skipped.
class ForkLog {
public:
    /// Subscribes; throws kvio::Error naming the reason when the connector cannot be used.
    ForkLog();
    ~ForkLog();
    ForkLog(const ForkLog&) = delete;
    ForkLog& operator=(const ForkLog&) = delete;
    /// Stops listening (after the command was reaped: its forks were all delivered before its exit).
    void stop();
    /// `root` and every process forked below it while listening (replayed in order, so a reused pid joins only
    /// after its fork).
    std::set<pid_t> tree(pid_t root) const;
    /// The execs of the processes in `tree`, in the kernel's order (call after stop()).
    std::vector<ExecImage> execs(const std::set<pid_t>& tree) const;
    /// Event messages the kernel dropped (the socket's buffer overflowed: ENOBUFS); 0 means the tree is complete.
    uint64_t lost() const { return lost_; }

private:
    void loop();
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> lost_{0};
    mutable std::mutex mu_;
    std::vector<std::pair<pid_t, pid_t>> forks_;
    std::vector<ExecImage> execs_;
    std::thread thread_;
};

}  // namespace kvio::audit
