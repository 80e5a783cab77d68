// `kvio run` killed by SIGKILL (or the OOM killer) cannot undo what it set up: a guard process does it. The same
// idea as `kvio trace`'s CommandGuard (trace/command_guard.h), for the embedded devices instead of a command.
#pragma once
#include <sys/types.h>

#include <string>

namespace kvio::run {

/// A guard process forked from `kvio run`, told over a socket what the run sets up before it does so: stage process
/// groups, mount points, loop images. When the run ends normally it releases the guard (destructor) after its own
/// cleanup. When the socket closes without that release (the run died), the guard, in this order, SIGKILLs the
/// process group of every stage not yet reaped (PR_SET_PDEATHSIG already sent SIGTERM to each leader; what a stage
/// had not flushed is lost), unmounts each mount point (unmount_dir: retried while busy, then lazily), detaches every
/// loop device of each image (detach_image) and removes the image unless it was kept (--keep), removes the partial
/// outputs (NAME.tmp-PID) in the run directory, then prints one line to stderr naming what it removed. The guard
/// ignores SIGINT/SIGTERM/SIGHUP (a Ctrl-C to the terminal's process group is the run's to handle) and keeps only the
/// socket and stdin/stdout/stderr open.
class RunGuard {
public:
    /// Forks the guard. Call it while the process has one thread: the guard's copy runs losetup and umount after
    /// the fork. Throws kvio::Error when socketpair or fork fail.
    RunGuard();
    /// Releases the guard (everything was cleaned up by the run) and reaps it.
    ~RunGuard();
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;

    /// A loop image about to be created at `path`: detached and (unless `keep`) removed if the run dies.
    void image(const std::string& path, bool keep) noexcept;
    /// A mount point about to be mounted: unmounted and removed if the run dies.
    void mount(const std::string& dir) noexcept;
    /// The run directory: if the run dies, the partial outputs its processes left there (NAME.tmp-PID, see
    /// common/output_file.h) are removed and named.
    void outputs(const std::string& dir) noexcept;
    /// A stage's process group (its leader's pid) runs (`running`): SIGKILLed if the run dies; or it was reaped
    /// (its id may be reused by another process: no longer killed).
    void stage(pid_t pgid, bool running) noexcept;

private:
    void send(char tag, const std::string& value) noexcept;
    pid_t pid_ = -1;
    int fd_ = -1;
};

}  // namespace kvio::run
