#include "distiller/verify.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/stop_signal.h"
#include "distiller/target_limits.h"
#include "workload/target.h"

namespace kvio::distiller {

namespace {

int g_verify_signal = 0;  // the first stop signal during the last run_forwarding_signals, 0 for none
volatile pid_t g_verify_child = 0;

void forward_signal(int sig) {
    if (g_verify_child > 0) ::kill(g_verify_child, sig == SIGINT ? SIGINT : SIGTERM);
}

/// Runs argv with stdout/stderr to `log` and waits. SIGINT/SIGTERM/SIGHUP meanwhile go to the child (kvio trace
/// ends fio and flushes) instead of ending us with fio still running. Returns the wait status.
int run_forwarding_signals(const std::vector<std::string>& argv, const std::string& log) {
    StopSignal stop(StopSignal::Options{.on_signal = forward_signal});
    pid_t pid = ::fork();
    if (pid == 0) {
        default_stop_signals();
        int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
        std::vector<char*> a;
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execv(a[0], a.data());
        _exit(127);
    }
    int st = 0;
    if (pid > 0) {
        g_verify_child = pid;
        while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        g_verify_child = 0;
    }
    int err = errno;
    g_verify_signal = stop.signo();
    if (pid < 0) throw Error(std::string("distill --verify: fork: ") + std::strerror(err));
    return st;
}

}  // namespace

namespace {
// The whole disk `t.target` is on, after the refusals: not a block device, the original's device, too small, mounted;
// for a job that writes, also read-only, in use, or data in its first MiB unless `force` (workload::check_device_safe,
// the rule gen and replay follow).
BlockDevInfo checked_target(const VerifyTarget& t, bool force) {
    if (!is_block_device(t.target))
        throw Error("distill --verify: target " + t.target +
                    " is not a block device (the replay is traced at the device)");
    BlockDevInfo info = block_dev_info_for_path(t.target);
    std::string disk_dev = dev_string(info.whole_disk);
    if (disk_dev == t.orig->dev)
        throw Error("distill --verify: target " + t.target + " is the device of the original trace (" + t.orig->dev +
                    "); use another device so the replay does not overwrite what was traced");
    const uint64_t have = block_dev_info(info.dev).size_bytes;
    if (t.needs_bytes && have < t.needs_bytes)
        throw Error("distill --verify: target " + t.target + " has " + std::to_string(have) +
                    " bytes but the job needs " + std::to_string(t.needs_bytes) +
                    " (offset + size); fio would quietly shrink the region and the "
                    "fidelity would describe another workload: give a larger device");
    std::string mp = mount_point_of(info.dev);
    if (!mp.empty())
        throw Error("distill --verify: target " + t.target + " is mounted on " + mp +
                    "; refusing to run a raw job on it");
    if (t.orig->write.cmds || t.orig->discard_cmds) {  // the job writes or discards there
        try {
            workload::check_device_safe(workload::inspect_target(t.target), force);
        } catch (const Error& e) {
            throw Error(std::string("distill --verify: the job writes to its target: ") + e.what());
        }
    }
    return info;
}
}  // namespace

std::vector<std::string> replay_fio_command() { return {"nice", "-n", "-10", "fio"}; }

int run_passing_stops(const std::vector<std::string>& argv, const std::string& log, int* stop_signo) {
    const int st = run_forwarding_signals(argv, log);
    *stop_signo = g_verify_signal;
    return st;
}

Replay run_replay(const Profile& orig, const VerifyOptions& opt) {
    return std::move(run_replays({VerifyTarget{&orig, opt.target, opt.needs_bytes}}, opt).front());
}

std::vector<Replay> run_replays(const std::vector<VerifyTarget>& targets, const VerifyOptions& opt) {
    std::vector<BlockDevInfo> infos;
    for (const auto& t : targets) {
        infos.push_back(checked_target(t, opt.force));
        for (const auto& o : targets)
            if (&o != &t && o.orig->dev == dev_string(infos.back().whole_disk))
                throw Error("distill --verify: target " + t.target + " is the device of the original trace (" +
                            o.orig->dev + "); use another device so the replay does not overwrite what was traced");
        for (size_t k = 0; k + 1 < infos.size(); ++k)
            if (infos[k].whole_disk == infos.back().whole_disk)
                throw Error(
                    "distill --verify: targets " + targets[k].target + " and " + t.target +
                    " are on one disk: each device of the trace needs its own, or their replays cannot be told apart");
    }
    // /proc/self/exe must be resolved here: inside the shell below it would name the shell.
    std::string exe = opt.kvio_exe;
    if (exe == "/proc/self/exe") {
        std::error_code ec;
        auto p = std::filesystem::read_symlink(exe, ec);
        if (ec) throw Error("distill --verify: cannot resolve /proc/self/exe: " + ec.message());
        exe = p.string();
    }
    std::vector<std::string> argv = {exe, "trace", "--events", opt.events_out};
    for (const auto& info : infos) argv.insert(argv.end(), {"-d", info.whole_disk_name});
    argv.push_back("--");
    for (const auto& s : replay_fio_command()) argv.push_back(s);
    argv.insert(argv.end(), {"--output-format=json", "--output=" + opt.events_out + ".fio.json", opt.job_path});
    HugePageReserve huge(opt.huge_pages);  // target_limits.h: the added pages are given back after the run
    // The traced queue settings on each target (docs/distill.md, "Queue settings the file level copies"), restored
    // when these go, also on an error or a stop.
    std::vector<std::unique_ptr<QueueSettingsOverride>> queues;
    for (size_t i = 0; i < infos.size(); ++i)
        queues.push_back(std::make_unique<QueueSettingsOverride>(infos[i].whole_disk_name, targets[i].queue));
    int st = run_forwarding_signals(argv, opt.events_out + ".log");
    for (auto& q : queues) q->check_held();
    if (g_verify_signal)
        throw Stopped(g_verify_signal, "distill --verify: stopped by signal " + std::to_string(g_verify_signal) +
                                           " (the traced fio run was ended; see " + opt.events_out + ".log)");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        throw Error("distill --verify: the traced fio run failed (exit status " +
                    std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) + "); see " + opt.events_out +
                    ".log");
    std::vector<Replay> out;
    for (size_t i = 0; i < infos.size(); ++i) {
        EventFilter f;
        f.dev = dev_string(infos[i].whole_disk);
        Replay r;
        r.queue = queues[i]->results();
        r.trace = load_events(opt.events_out, f);
        r.profile = profile_events(r.trace);
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace kvio::distiller
