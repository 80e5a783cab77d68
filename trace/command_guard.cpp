#include "trace/command_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"

namespace kvio::trace {

namespace {

/// Every process's (pid, ppid), from /proc/PID/stat.
std::vector<std::pair<pid_t, pid_t>> proc_parents() {
    std::vector<std::pair<pid_t, pid_t>> procs;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream st(e.path() / "stat");
        std::string line;
        if (!std::getline(st, line)) continue;
        size_t close = line.rfind(')');  // comm may hold spaces and parentheses
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        char state;
        pid_t ppid = 0;
        if (rest >> state >> ppid) procs.emplace_back(pid_t(std::stol(name)), ppid);
    }
    return procs;
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& [pid, ppid] : proc_parents())
        if (ppid == parent) out.push_back(pid);
    return out;
}

void reap_adopted(pid_t command, pid_t guard) {
    for (;;) {
        siginfo_t si{};
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
        if (si.si_pid == command || si.si_pid == guard) return;
        waitpid(si.si_pid, nullptr, WNOHANG);
    }
}

size_t kill_adopted(pid_t guard) {
    size_t n = 0;
    for (int round = 0; round < 64; ++round) {
        std::vector<pid_t> kids = children_of(getpid());
        std::erase(kids, guard);
        if (kids.empty()) break;
        for (pid_t k : kids) kill(k, SIGSTOP);  // our children: their pids stay theirs until we reap them
        for (pid_t k : kids) {
            siginfo_t si{};
            const bool exited = waitid(P_PID, id_t(k), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == k;
            if (!exited && kill(k, SIGKILL) == 0) n++;
            waitpid(k, nullptr, 0);
        }
    }
    return n;
}

std::vector<pid_t> descendants(pid_t root) {
    const std::vector<std::pair<pid_t, pid_t>> procs = proc_parents();
    std::vector<pid_t> out{root};
    for (size_t i = 0; i < out.size(); ++i)
        for (const auto& [pid, ppid] : procs)
            if (ppid == out[i]) out.push_back(pid);
    out.erase(out.begin());
    return out;
}

namespace {

int pidfd_of(pid_t pid) { return int(syscall(SYS_pidfd_open, pid, 0)); }
bool pidfd_signal(int fd, int sig) { return syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0; }

}  // namespace

StoppedTree::StoppedTree(pid_t root, const std::vector<pid_t>& adopted) {
    auto hold = [this](pid_t d) {
        if (std::find(pids_.begin(), pids_.end(), d) != pids_.end()) return;
        const int fd = pidfd_of(d);
        if (fd < 0) return;  // gone already
        pidfd_signal(fd, SIGSTOP);
        fds_.push_back(fd);
        pids_.push_back(d);
    };
    for (int round = 0; round < 2; ++round) {
        kill(root, SIGSTOP);
        for (pid_t a : adopted) hold(a);
        for (pid_t d : descendants(root)) hold(d);
        for (pid_t a : adopted)
            for (pid_t d : descendants(a)) hold(d);
    }
}

StoppedTree::~StoppedTree() {
    for (int fd : fds_) close(fd);
}

size_t StoppedTree::signal(int sig) const {
    size_t n = 0;
    for (int fd : fds_) n += pidfd_signal(fd, sig);
    return n;
}

size_t StoppedTree::kill_all() const {
    size_t n = 0;
    for (size_t i = 0; i < fds_.size(); ++i) {
        if (!pidfd_signal(fds_[i], 0)) continue;  // exited (a zombie still answers: SIGKILL does it no harm)
        pidfd_signal(fds_[i], SIGSTOP);
        for (pid_t d : descendants(pids_[i]))
            if (const int fd = pidfd_of(d); fd >= 0) pidfd_signal(fd, SIGKILL), close(fd);
        n += pidfd_signal(fds_[i], SIGKILL);
    }
    return n;
}

CommandGuard::CommandGuard(pid_t child) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
    const pid_t tracer = getpid();
    guard_ = fork();
    if (guard_ < 0) {
        close(p[0]);
        close(p[1]);
        throw Error(std::string("fork: ") + std::strerror(errno));
    }
    if (guard_ == 0) {
        // Only the pipe stays open: inherited BPF link and map fds would keep the trace attached as long as we live.
        if (p[0] != 3) {
            dup2(p[0], 3);
            p[0] = 3;
        }
        close_range(4, ~0u, 0);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        prctl(PR_SET_NAME, "kvio-guard");
        char c;
        ssize_t n;
        do n = read(p[0], &c, 1);
        while (n < 0 && errno == EINTR);
        if (n == 1) _exit(0);  // released: the tracer ended and reaped the command itself
        // The pipe closes before the kernel reparents the tracer's children and checks their process groups: a child
        // we stopped before that check sits in a newly orphaned group and gets SIGHUP, dying before we walk the
        // processes below it (which go to init). Wait until we are reparented ourselves (at most 1 s).
        for (int i = 0; i < 1000 && getppid() == tracer; ++i) usleep(1000);
        // The tracer is gone. Its command and every process below it go too; twice, for a fork in between.
        for (int round = 0; round < 2; ++round) {
            kill(child, SIGSTOP);  // no new children while we look
            for (pid_t d : descendants(child)) kill(d, SIGKILL);
        }
        kill(child, SIGKILL);
        _exit(0);
    }
    close(p[0]);
    fd_ = p[1];
}

CommandGuard::~CommandGuard() {
    if (fd_ < 0) return;
    ssize_t ignored = write(fd_, "x", 1);
    (void)ignored;
    close(fd_);
    waitpid(guard_, nullptr, 0);
}

}  // namespace kvio::trace
