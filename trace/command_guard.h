// The command `kvio trace -- COMMAND` runs must not outlive the trace, even when the trace is SIGKILLed.
#pragma once
#include <sys/types.h>

#include <vector>

namespace kvio::trace {

/// Processes below `root` (children, grandchildren, ...), from the PPid field of /proc/PID/stat.
std::vector<pid_t> descendants(pid_t root);

/// The processes whose parent is `parent` now (the PPid field of /proc/PID/stat).
std::vector<pid_t> children_of(pid_t parent);

/// Reaps the exited children of the calling process (a child subreaper: processes of a traced command it adopted)
/// other than `command` and `guard`, so that adopted processes that end do not stay zombies while the trace runs.
/// Stops at the first of those two found exited (their status is the trace's to collect).
void reap_adopted(pid_t command, pid_t guard);

/// SIGKILLs and reaps every child of the calling process but `guard` (the processes of a stopped command the trace
/// adopted as their subreaper: also those adopted while the stop let the tree run on, such as a process that forks
/// its successor and exits), each SIGSTOPped first so it forks no more; their orphans, adopted in turn, go in the
/// next round (at most 64). Returns how many were still alive.
size_t kill_adopted(pid_t guard);

/// The processes below a traced command, held while the trace stops it (docs/trace.md, "Stopping"): each is stopped
/// (SIGSTOP, so none forks while they are collected; two rounds, for a fork between a look and a stop) and held by a
/// pidfd, so a signal never reaches a process that later took a pid of the tree.
class StoppedTree {
public:
    /// Stops `root` and every process below it and collects the ones below (not `root`); also each of `adopted`
    /// (processes of the command that the tracer, a child subreaper, adopted when their parent exited) and every
    /// process below them.
    explicit StoppedTree(pid_t root, const std::vector<pid_t>& adopted = {});
    ~StoppedTree();
    StoppedTree(const StoppedTree&) = delete;
    StoppedTree& operator=(const StoppedTree&) = delete;
    /// Sends `sig` to every process of the tree that still exists; returns how many it reached.
    size_t signal(int sig) const;
    /// Sends SIGKILL to every process of the tree still alive and to the processes below them now (forked after
    /// the stop, before the SIGKILL); returns how many were still alive.
    size_t kill_all() const;

private:
    std::vector<int> fds_;
    std::vector<pid_t> pids_;
};

/// A guard process forked from the tracer for the traced command `child`: it waits on a pipe to the tracer, and
/// when the tracer dies without releasing it (SIGKILL, OOM kill, crash), SIGKILLs every process below `child`
/// and `child` itself. (PR_SET_PDEATHSIG on the command alone would leave its children running: fio's jobs are
/// processes below it.) The guard ignores SIGINT/SIGTERM/SIGHUP: a Ctrl-C to the terminal's process group must
/// not remove it.
class CommandGuard {
public:
    /// Forks the guard. Throws kvio::Error when pipe or fork fail.
    explicit CommandGuard(pid_t child);
    /// Releases the guard (the command was ended and reaped by the tracer) and reaps it.
    ~CommandGuard();
    /// The guard process (a child of the tracer that is not the command's).
    pid_t pid() const { return guard_; }
    CommandGuard(const CommandGuard&) = delete;
    CommandGuard& operator=(const CommandGuard&) = delete;

private:
    pid_t guard_ = -1;
    int fd_ = -1;
};

}  // namespace kvio::trace
