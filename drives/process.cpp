#include "drives/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/exec_logged.h"
#include "common/stop_signal.h"
#include "trace/command_guard.h"

namespace kvio::drives {

namespace {

constexpr int kMaxChildren = 64;
std::atomic<pid_t> g_children[kMaxChildren];  // process groups to pass a stop signal to; 0 = free slot
std::unique_ptr<StopSignal> g_stop;

void forward(int sig) {
    for (auto& c : g_children) {
        pid_t p = c.load();
        if (p > 0) ::kill(-p, sig == SIGINT ? SIGINT : SIGTERM);
    }
}

// One guard per running child (trace/command_guard.h): should kvio drives be SIGKILLed, it kills the child and every
// process below it (fio's job processes), which a parent-death signal to the child alone would leave running.
std::mutex g_guards_mu;
std::map<pid_t, std::unique_ptr<trace::CommandGuard>> g_guards;

void remember(pid_t pid, bool on) {
    for (auto& c : g_children) {
        pid_t expect = on ? 0 : pid;
        if (c.compare_exchange_strong(expect, on ? pid : 0)) break;
    }
    std::unique_ptr<trace::CommandGuard> released;  // released (and reaped) outside the lock
    std::lock_guard lock(g_guards_mu);
    if (on)
        g_guards[pid] = std::make_unique<trace::CommandGuard>(pid);
    else if (auto it = g_guards.find(pid); it != g_guards.end())
        released = std::move(it->second), g_guards.erase(it);
}

}  // namespace

pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("kvio drives: fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::setpgid(0, 0);
        // No parent-death signal: it would kill fio before the guard walks the processes below it (fio's jobs, in
        // sessions of their own), leaving them to init. The guard ends the child and those (trace/command_guard.h).
        if (::getppid() != parent) _exit(127);
        default_stop_signals();
        exec_logged(argv, log, false, "kvio drives");
    }
    ::setpgid(pid, pid);
    remember(pid, true);
    return pid;
}

int wait_child(pid_t pid, double timeout_s, bool* timed_out) {
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    int st = 0;
    bool termed = false;
    if (timed_out) *timed_out = false;
    for (;;) {
        pid_t r = ::waitpid(pid, &st, timeout_s > 0 ? WNOHANG : 0);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) break;
        if (timeout_s > 0 && r == 0) {
            double el = std::chrono::duration<double>(clock::now() - start).count();
            if (!termed && el > timeout_s) ::kill(-pid, SIGTERM), termed = true, *timed_out = true;
            if (termed && el > timeout_s + 5) ::kill(-pid, SIGKILL);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    remember(pid, false);
    return st;
}

std::vector<ChildEnd> wait_children(const std::vector<pid_t>& pids, double timeout_s, double kill_after_s,
                                    double stop_grace_s) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    std::vector<ChildEnd> ends(pids.size());
    std::vector<bool> done(pids.size(), false), termed(pids.size(), false);
    clock::time_point stop_seen{};
    for (size_t left = pids.size(); left > 0;) {
        const int signo = g_stop ? g_stop->signo() : 0;
        if (signo && stop_seen == clock::time_point{}) stop_seen = clock::now();
        for (size_t i = 0; i < pids.size(); ++i) {
            if (done[i]) continue;
            int st = 0;
            pid_t r = ::waitpid(pids[i], &st, WNOHANG);
            if (r == pids[i] || (r < 0 && errno != EINTR)) {
                done[i] = true, --left;
                ends[i].status = st, ends[i].stop_signo = signo, ends[i].seconds = since(start);
                remember(pids[i], false);
                continue;
            }
            const double el = since(start);
            if (timeout_s > 0 && !termed[i] && el > timeout_s)
                ::kill(-pids[i], SIGTERM), termed[i] = true, ends[i].timed_out = true;
            if ((termed[i] && el > timeout_s + kill_after_s) ||
                (signo && stop_grace_s >= 0 && since(stop_seen) > stop_grace_s))
                ::kill(-pids[i], SIGKILL);
        }
        if (left) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ends;
}

bool child_ended(pid_t pid, int* status) {
    pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r != pid) return false;
    remember(pid, false);
    return true;
}

std::string describe_status(int st) {
    if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st));
    return "wait status " + std::to_string(st);
}

ChildStop::ChildStop() { g_stop = std::make_unique<StopSignal>(StopSignal::Options{.on_signal = forward}); }
ChildStop::~ChildStop() { g_stop.reset(); }
int ChildStop::signo() const { return g_stop ? g_stop->signo() : 0; }
int stop_signal_seen() { return g_stop ? g_stop->signo() : 0; }

int run_logged(const std::vector<std::string>& argv, const std::string& log, double timeout_s, double stop_grace_s) {
    return wait_children({spawn_logged(argv, log)}, timeout_s, kRemoteKillAfterS, stop_grace_s)[0].status;
}

std::string error_lines_of(const std::string& log, size_t max_lines) {
    std::ifstream in(log);
    std::string line, last, out;
    size_t n = 0;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        last = line;
        const bool names_error = line.rfind("fio:", 0) == 0 || line.rfind("kvio", 0) == 0 ||
                                 line.rfind("Bad option", 0) == 0 || line.rfind("Did you mean", 0) == 0 ||
                                 line.find("error") != std::string::npos;
        if (!names_error || n == max_lines) continue;
        out += (out.empty() ? "" : "; ") + line;
        ++n;
    }
    return out.empty() ? last : out;
}

std::string first_line_of(const std::vector<std::string>& argv) {
    std::string cmd;
    for (const auto& a : argv) cmd += "'" + a + "' ";
    std::FILE* p = ::popen((cmd + "2>/dev/null").c_str(), "r");
    if (!p) return "";
    char buf[256] = {};
    std::string line = std::fgets(buf, sizeof buf, p) ? buf : "";
    ::pclose(p);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return line;
}

}  // namespace kvio::drives
