#include "run/stage_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/exec_logged.h"
#include "common/stop_signal.h"
#include "run/run_pipeline.h"

namespace kvio::run {

namespace {

// ---- signals: remembered, forwarded to the process groups of the forwarding stages ----
constexpr int kMaxForwarded = 4;  // trace and gen run at once; one slot per started forwarding stage
volatile pid_t g_pgid[kMaxForwarded] = {};
const StopSignal* g_stop = nullptr;  // the SignalGuard's, while one is alive
int g_last_signal = 0;               // the last SignalGuard's first signal, once it is gone

/// StopSignal's callback (in the handler): every stop signal goes on to the forwarding stages' process groups.
void forward_to_stages(int sig) {
    for (int i = 0; i < kMaxForwarded; ++i) {
        pid_t pg = g_pgid[i];
        if (pg > 0) ::kill(-pg, sig);
    }
}

void set_forwarded(pid_t from, pid_t to) {
    for (int i = 0; i < kMaxForwarded; ++i)
        if (g_pgid[i] == from) {
            g_pgid[i] = to;
            return;
        }
    if (from == 0) throw Error("kvio run: more than " + std::to_string(kMaxForwarded) + " stages at once");
}

constexpr size_t kKeepBytes = 1 << 20;

std::function<void(pid_t, bool)>& stage_observer() {
    static std::function<void(pid_t, bool)> f;
    return f;
}

}  // namespace

SignalGuard::SignalGuard() {
    g_last_signal = 0;
    for (auto& p : g_pgid) p = 0;
    stop_.emplace(StopSignal::Options{.on_signal = forward_to_stages});
    g_stop = &*stop_;
}

SignalGuard::~SignalGuard() {
    g_last_signal = stop_->signo();
    g_stop = nullptr;
}

int signal_received() { return g_stop ? g_stop->signo() : g_last_signal; }

void set_stage_observer(std::function<void(pid_t, bool)> observer) { stage_observer() = std::move(observer); }

/// Copies the child's output from the pipe to the log file and keeps the last kKeepBytes of it.
struct StageProcess::Pump {
    int rd = -1, log_fd = -1;
    std::string log;
    std::thread thread;
    mutable std::mutex mu;
    std::string text;
    int log_errno = 0;

    void run() {
        char buf[65536];
        while (true) {
            ssize_t n = ::read(rd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            if (log_fd >= 0) {
                for (ssize_t off = 0; off < n;) {
                    ssize_t w = ::write(log_fd, buf + off, size_t(n - off));
                    if (w < 0 && errno == EINTR) continue;
                    if (w <= 0) {
                        std::lock_guard<std::mutex> g(mu);
                        if (!log_errno) log_errno = w < 0 ? errno : EIO;
                        break;
                    }
                    off += w;
                }
            }
            std::lock_guard<std::mutex> g(mu);
            text.append(buf, size_t(n));
            if (text.size() > 2 * kKeepBytes) text.erase(0, text.size() - kKeepBytes);
        }
        ::close(rd);
        if (log_fd >= 0) ::close(log_fd);
    }
};

StageProcess::StageProcess(const std::vector<std::string>& argv, const std::string& log, bool forward)
    : forward_(forward), pump_(std::make_unique<Pump>()) {
    if (const int sig = signal_received(); forward && sig) throw Interrupted(sig);
    pump_->log = log;
    if (!log.empty()) {
        pump_->log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (pump_->log_fd < 0) pump_->log_errno = errno;  // the output is still kept in memory
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
        int e = errno;
        if (pump_->log_fd >= 0) ::close(pump_->log_fd);
        throw Error(std::string("pipe: ") + std::strerror(e));
    }
    const sigset_t block = stop_signal_set();
    sigset_t old;
    sigprocmask(SIG_BLOCK, &block, &old);  // the pump thread inherits the mask: signals go to the main thread
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old, nullptr);
        ::close(p[0]), ::close(p[1]);
        if (pump_->log_fd >= 0) ::close(pump_->log_fd);
        throw Error(std::string("fork: ") + std::strerror(e));
    }
    if (pid_ == 0) {
        default_stop_signals();
        if (forward) setpgid(0, 0);
        // A SIGKILLed `kvio run` leaves no stage running (SIGTERM: it stops as on Ctrl-C), nor a helper such as
        // mkfs.ext4 holding the loop device (SIGKILL: the run's guard redoes the cleanup it was part of).
        prctl(PR_SET_PDEATHSIG, forward ? SIGTERM : SIGKILL);
        if (getppid() != parent) _exit(128 + (forward ? SIGTERM : SIGKILL));
        sigprocmask(SIG_SETMASK, &old, nullptr);
        exec_with_output(argv, p[1], "kvio run");
    }
    ::close(p[1]);
    pump_->rd = p[0];
    pump_->thread = std::thread([pump = pump_.get()] { pump->run(); });
    if (forward) {
        setpgid(pid_, pid_);
        if (stage_observer()) stage_observer()(pid_, true);
        try {
            set_forwarded(0, pid_);
        } catch (...) {
            sigprocmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (const int sig = signal_received(); forward && sig)
        ::kill(-pid_, sig);  // arrived while blocked: handled above, forward it now
}

StageProcess::~StageProcess() {
    if (!reaped_ && pid_ > 0) {
        if (forward_)
            ::kill(-pid_, SIGKILL);
        else
            ::kill(pid_, SIGKILL);
        wait();
    }
    if (pump_->thread.joinable()) pump_->thread.join();
}

int StageProcess::wait() {
    if (!reaped_) {
        int st = 0;
        while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
        reaped_ = true;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        stop_forwarding();
        if (forward_ && stage_observer()) stage_observer()(pid_, false);
        if (pump_->thread.joinable()) pump_->thread.join();  // EOF once the child and what it started are gone
    }
    return status_;
}

bool StageProcess::exited() {
    if (reaped_) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) != pid_) return false;
    reaped_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    stop_forwarding();
    if (forward_ && stage_observer()) stage_observer()(pid_, false);
    if (pump_->thread.joinable()) pump_->thread.join();
    return true;
}

void StageProcess::signal(int sig) const {
    if (reaped_) return;
    ::kill(forward_ ? -pid_ : pid_, sig);
}

void StageProcess::stop_forwarding() {
    if (forward_) set_forwarded(pid_, 0);
}

std::string StageProcess::output() const {
    std::lock_guard<std::mutex> g(pump_->mu);
    return pump_->text.size() > kKeepBytes ? pump_->text.substr(pump_->text.size() - kKeepBytes) : pump_->text;
}

std::string StageProcess::log_error() const {
    std::lock_guard<std::mutex> g(pump_->mu);
    return pump_->log_errno ? "cannot write " + pump_->log + ": " + std::strerror(pump_->log_errno) : "";
}

std::pair<int, std::string> run_helper(const std::vector<std::string>& argv) {
    StageProcess p(argv, "", false);
    int st = p.wait();
    return {st, p.output()};
}

std::string last_error_line(const std::string& output) {
    std::istringstream in(output);
    std::string line, last;
    while (std::getline(in, line))
        if (line.rfind("kvio: ", 0) == 0) last = line.substr(6);
    return last.empty() ? "" : ": " + last;
}

}  // namespace kvio::run
