#include "trace/pid_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "common/error.h"

namespace kvio::trace {

namespace {
/// The command name of `pid` (/proc/PID/comm), "" when it is gone.
std::string process_comm(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    std::getline(f, comm);
    return comm;
}
}  // namespace

PidWatch::PidWatch(const std::vector<uint32_t>& pids) {
    for (uint32_t p : pids) {
        const pid_t pid = pid_t(p);
        int fd = int(::syscall(SYS_pidfd_open, pid, 0));
        // No pidfds on this kernel (ENOSYS): kill(pid, 0) tells whether it exists (EPERM: it does).
        if (fd < 0 && (errno == ESRCH || (kill(pid, 0) != 0 && errno == ESRCH))) {
            for (auto& w : procs_)
                if (w.fd >= 0) close(w.fd);
            throw Error("-p " + std::to_string(p) + ": no such process");
        }
        procs_.push_back({pid, fd, process_comm(pid)});
    }
}

PidWatch::~PidWatch() {
    for (auto& w : procs_)
        if (w.fd >= 0) close(w.fd);
}

bool PidWatch::all_exited() {
    bool all = !procs_.empty();
    for (auto& w : procs_) {
        if (!w.exited) {
            if (w.fd >= 0) {
                pollfd p{w.fd, POLLIN, 0};
                w.exited = poll(&p, 1, 0) == 1;
            } else {
                w.exited = kill(w.pid, 0) != 0 && errno == ESRCH;
            }
        }
        all = all && w.exited;
    }
    return all;
}

std::string PidWatch::exit_reason() const {
    if (procs_.size() == 1) return "PID " + std::to_string(procs_[0].pid) + " exited";
    std::string list;
    for (const auto& w : procs_) list += (list.empty() ? "" : ", ") + std::to_string(w.pid);
    return "every -p process exited (" + list + ")";
}

std::string PidWatch::names() const {
    std::string out;
    for (const auto& w : procs_)
        out += (out.empty() ? "PID " : ", PID ") + std::to_string(w.pid) + (w.comm.empty() ? "" : " (" + w.comm + ")");
    return out;
}

}  // namespace kvio::trace
