#include "workload/serving/cluster/multi_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <streambuf>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/jsonl.h"
#include "common/stop_signal.h"
#include "workload/serving/results/output_path.h"
#include "workload/serving/line_prefix.h"
#include "workload/serving/results/report.h"
#include "workload/serving/tiers/remote_tier.h"
#include "workload/serving/tiers/storage_common.h"

namespace kvio::serving {

namespace {

int exit_code_of_signal(int sig) { return sig == SIGINT ? 130 : sig == SIGTERM ? 143 : sig == SIGHUP ? 129 : 1; }

std::string host_name() {
    char h[256] = {};
    if (::gethostname(h, sizeof h - 1) != 0) return "?";
    return h;
}

/// One of `clients` clients' share of the storage tier's automatic limit on the filesystem that holds `dir` (or its
/// nearest existing parent), in GiB (shared_auto_capacity: 95 % of f_bavail, whole blocks per client).
double auto_capacity_gib(std::string dir, int clients) {
    namespace fs = std::filesystem;
    if (dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        dir = tmp && *tmp ? tmp : "/tmp";
    }
    fs::path p = fs::absolute(dir);
    std::error_code ec;
    while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
    const std::optional<FsRoom> room = dir_room(p.string());
    if (!room) throw Error("simulate: statvfs " + p.string() + ": " + std::strerror(errno));
    return double(shared_auto_capacity(*room, clients)) / (1024.0 * 1024.0 * 1024.0);
}

void write_byte(int fd) {
    char b = 'r';
    while (::write(fd, &b, 1) < 0 && errno == EINTR) {}
}

/// A client process: runs its simulation and returns its exit code. `ready` and `go` are the barrier's pipe ends.
/// `early` is the handler that held the stop signals from the fork until run_simulation installed its own: a signal
/// it caught is raised again once run_simulation's handler is in place, so the client stops at once instead of
/// waiting for the launcher's next forward.
int client_main(const SimConfig& c, int rank, int ready, int go, std::ostream* progress, const StopSignal& early) {
    LinePrefixStream prog(progress ? *progress : std::cerr, "client " + std::to_string(rank) + ": ");
    SimHooks hooks;
    hooks.keep_merge_state = true;
    hooks.before_start = [&] {
        if (early.stopped()) ::raise(early.signo());  // run_simulation's handler is installed by now
        write_byte(ready);
        ::close(ready);
        ready = -1;
        char b;
        ssize_t n;
        while ((n = ::read(go, &b, 1)) < 0 && errno == EINTR) {}
        ::close(go);
        go = -1;
    };
    try {
        SimResult r =
            run_simulation(client_config(c, rank, int(c.num_clients)), nullptr, progress ? &prog : nullptr, hooks);
        prog.flush();
        return r.exit_code;
    } catch (const std::exception& e) {
        std::cerr << "kvio simulate: client " << rank << ": " << e.what() << "\n";
        return 1;
    }
}

ClientResult collect(const SimConfig& c, int rank, int status) {
    ClientResult r;
    r.rank = rank;
    r.host = host_name();
    r.output_path = client_output_path(c.output, rank);
    if (WIFEXITED(status))
        r.exit_code = WEXITSTATUS(status);
    else
        r.exit_code = 1;
    if (WIFSIGNALED(status)) {
        r.error = std::string("killed by signal ") + strsignal(WTERMSIG(status));
        return r;
    }
    std::ifstream f(r.output_path);
    if (!f) {
        r.error = "no results file " + r.output_path + " (exit code " + std::to_string(r.exit_code) + ")";
        return r;
    }
    try {
        r.doc = nlohmann::ordered_json::parse(f);
    } catch (const std::exception& e) {
        r.error = r.output_path + ": " + e.what();
    }
    return r;
}

}  // namespace

SimConfig client_config(const SimConfig& c, int rank, int clients) {
    SimConfig r = c;
    if (!c.cache_dir.empty())
        r.cache_dir = (std::filesystem::path(c.cache_dir) / ("rank_" + std::to_string(rank))).string();
    if (c.seed) r.seed = *c.seed + rank;
    r.output = client_output_path(c.output, rank);
    r.client_index = rank;
    r.client_count = clients;
    r.client_of_mpi = c.mpi;
    r.quiet = true;
    r.num_clients = 1;
    r.mpi = false;
    return r;
}

void check_multi_client(const SimConfig& c, const char* flag) {
    struct stat st {};
    if (!c.cache_dir.empty() && ::stat(c.cache_dir.c_str(), &st) == 0 && S_ISBLK(st.st_mode))
        throw Error(std::string("simulate: ") + flag + " gives each client its own subdirectory of --cache-dir; " +
                    c.cache_dir + " is a block device (use a filesystem on it)");
    if (c.enable_latency_tracing)
        throw Error(std::string("simulate: ") + flag +
                    " with --enable-latency-tracing: each client's tracer would see every client's I/O; trace a "
                    "single client");
    if (!c.io_trace_log.empty())
        throw Error(std::string("simulate: ") + flag + " with --io-trace-log: the trace is one CSV of one run");
    check_output_writable("--output", c.output.empty() ? default_results_name() : c.output);
}

namespace {
const char* const kMpiSizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
const char* const kMpiRanks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};

/// The numeric value of variable `name`, -1 when unset or not a number.
long env_number(const std::function<const char*(const char*)>& env, const char* name) {
    const char* v = env(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    return *end ? -1 : n;
}
}  // namespace

long mpi_rank_from_env(const std::function<const char*(const char*)>& env) {
    for (const char* n : kMpiRanks)
        if (const long r = env_number(env, n); r >= 0) return r;
    return -1;
}

std::string mpi_launch_without_mpi(const std::function<const char*(const char*)>& env) {
    auto number = [&](const char* name) { return env_number(env, name); };
    const auto& kSizes = kMpiSizes;
    const auto& kRanks = kMpiRanks;
    std::string seen;
    for (const char* n : kSizes)
        if (number(n) > 1) seen = std::string(n) + "=" + env(n);
    for (const char* n : kRanks)
        if (seen.empty() && number(n) > 0) seen = std::string(n) + "=" + env(n);
    if (seen.empty()) return {};
    return "started by an MPI launcher (" + seen +
           ") without --mpi: every rank would run its own simulation on the same cache directory and results file "
           "and delete the others' entries. Add --mpi (mpirun -np N kvio simulate --mpi ...: one client per rank, "
           "rank 0 writes the merged result), or use --num-clients N without mpirun";
}

std::string mpi_flag_without_launcher(const std::function<const char*(const char*)>& env) {
    for (const char* n : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"})
        if (const char* v = env(n); v && *v) return {};
    return "--mpi: not started by an MPI launcher (none of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK is set), so this "
           "would run as one rank; start it as mpirun -np N kvio simulate --mpi ..., or use --num-clients N";
}

void share_storage_capacity(SimConfig& c, int clients_on_host) {
    if (c.storage_capacity_gb <= 0 && c.io_trace_log.empty() && clients_on_host > 1)
        c.storage_capacity_gb = auto_capacity_gib(c.cache_dir, clients_on_host);
}

std::string write_merged_result(const SimConfig& c, const nlohmann::ordered_json& merged, std::ostream* console) {
    const std::string path = c.output.empty() ? default_results_name() : c.output;
    write_text_file(path, merged.dump(4) + "\n");  // whole or absent: "PATH: write failed: REASON"
    if (!console) return path;
    if (merged.contains("summary"))
        print_report(*console, merged);
    else
        *console << "No requests completed by any client.\n";
    const auto& k = merged["kvio"];
    const auto& a = k["mlcommons_aggregation"];
    *console << "MERGED FROM " << k["merged"]["clients"] << " CLIENTS (" << k["merged"]["launcher"].get<std::string>()
             << ")\n";
    for (const auto& s : k["clients"]) {
        *console << "  rank " << s["rank"] << " on " << s["host"].get<std::string>() << ": ";
        if (s.contains("error")) {
            *console << "FAILED: " << s["error"].get<std::string>() << "\n";
            continue;
        }
        const auto& cs = s["summary"]["cache_stats"];
        char line[256];
        std::snprintf(line, sizeof line, "%llu requests, storage read %.3f GiB/s, storage I/O P95 %.2f ms\n",
                      static_cast<unsigned long long>(s["summary"].value("total_requests", uint64_t(0))),
                      cs.value("tier_storage_read_bandwidth_gbps", 0.0),
                      s["summary"]["storage_io_latency_ms"].value("p95", 0.0));
        *console << line;
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "MLCommons aggregation: storage read bandwidth %.3f GiB/s (sum over ranks), storage I/O P95 %.2f ms "
                  "(max over ranks)%s\n",
                  a.value("aggregated_bandwidth_gbps", 0.0), a.value("aggregated_p95_latency_ms", 0.0),
                  a.value("partial_failure", false) ? ", PARTIAL FAILURE" : "");
    *console << line << std::flush;
    return path;
}

SimResult run_clients(const SimConfig& config, std::ostream* console, std::ostream* progress) {
    check_multi_client(config, "--num-clients");
    SimConfig c = config;
    const int n = int(c.num_clients);
    share_storage_capacity(c, n);
    // One remote namespace for the run, chosen here and handed to every client (docs/simulate.md, "Remote tier").
    if (!c.remote_tier.empty() && c.remote_run_id.empty()) c.remote_run_id = make_remote_run_id();

    int ready[2], go[2];
    if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(go, O_CLOEXEC) != 0)
        throw Error(std::string("simulate: pipe: ") + std::strerror(errno));
    // Signals stay blocked from before the first fork until each side's handlers are in place.
    const sigset_t stops = stop_signal_set();
    sigset_t old_mask;
    sigprocmask(SIG_BLOCK, &stops, &old_mask);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::vector<pid_t> pids;
    const pid_t launcher = ::getpid();
    for (int rank = 0; rank < n; ++rank) {
        pid_t pid = ::fork();
        if (pid < 0) {
            const int err = errno;
            for (pid_t p : pids) ::kill(p, SIGTERM);
            for (pid_t p : pids) ::waitpid(p, nullptr, 0);
            sigprocmask(SIG_SETMASK, &old_mask, nullptr);
            throw Error(std::string("simulate: fork: ") + std::strerror(err));
        }
        if (pid == 0) {
            ::close(ready[0]);
            ::close(go[1]);
            int code;
            {
                StopSignal early;  // a signal before the client's own handlers must not kill it: it comes again
                // A launcher killed outright (SIGKILL, OOM) forwards nothing: the kernel stops the client as a stop
                // signal would (its results written, flagged stopped). A launcher gone before this line: raised now.
                ::prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (::getppid() != launcher) ::raise(SIGTERM);
                sigprocmask(SIG_SETMASK, &old_mask, nullptr);
                code = client_main(c, rank, ready[1], go[0], progress, early);
            }
            std::cout.flush();
            std::cerr.flush();
            ::_exit(code);
        }
        pids.push_back(pid);
    }
    ::close(ready[1]);
    ::close(go[0]);

    std::vector<int> status(size_t(n), 0);
    std::vector<bool> done(size_t(n), false);
    int stop_signo = 0;  // the launcher's first stop signal
    {
        StopSignal forward;
        sigprocmask(SIG_SETMASK, &old_mask, nullptr);
        int ready_count = 0, alive = n;
        bool released = false;
        auto last_forward = std::chrono::steady_clock::now() - std::chrono::seconds(1);
        while (alive > 0) {
            if (!released) {
                struct pollfd p {
                    ready[0], POLLIN, 0
                };
                if (::poll(&p, 1, 50) > 0) {
                    char buf[64];
                    ssize_t got = ::read(ready[0], buf, sizeof buf);
                    if (got > 0) ready_count += int(got);
                }
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            for (int i = 0; i < n; ++i) {
                if (done[size_t(i)]) continue;
                if (::waitpid(pids[size_t(i)], &status[size_t(i)], WNOHANG) == pids[size_t(i)]) {
                    done[size_t(i)] = true;
                    --alive;
                }
            }
            // Release the clients once every one is ready or gone (one that failed at start-up never comes).
            if (!released && ready_count + (n - alive) >= n) {
                ::close(go[1]);
                released = true;
            }
            const int sig = forward.signo();
            auto now = std::chrono::steady_clock::now();
            if (sig && now - last_forward >= std::chrono::milliseconds(200)) {
                for (int i = 0; i < n; ++i)
                    if (!done[size_t(i)]) ::kill(pids[size_t(i)], sig);
                last_forward = now;
            }
        }
        if (!released) ::close(go[1]);
        ::close(ready[0]);
        stop_signo = forward.signo();
    }

    std::vector<ClientResult> results;
    bool failed = false;
    for (int rank = 0; rank < n; ++rank) {
        results.push_back(collect(c, rank, status[size_t(rank)]));
        const ClientResult& r = results.back();
        if (!r.error.empty()) {
            failed = true;
            std::cerr << "kvio simulate: client " << rank << " failed: " << r.error << "\n";
        }
    }
    SimResult res;
    res.results = merge_client_results(results, "processes");
    res.output_path = write_merged_result(c, res.results, c.quiet ? nullptr : console);
    int worst = 0;
    for (const auto& r : results) worst = std::max(worst, r.exit_code);
    res.exit_code = stop_signo ? exit_code_of_signal(stop_signo) : failed ? std::max(worst, 1) : worst;
    return res;
}

}  // namespace kvio::serving
