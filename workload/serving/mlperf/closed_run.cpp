#include "workload/serving/mlperf/closed_run.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <ostream>
#include <thread>

#include "common/error.h"
#include "common/jsonl.h"
#include "common/stop_signal.h"
#include "workload/serving/cluster/mpi_client.h"
#include "workload/serving/cluster/multi_client.h"
#include "workload/serving/mlperf/closed_rules.h"
#include "workload/serving/mlperf/provenance.h"
#include "workload/serving/results/merge_results.h"

namespace kvio::serving {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string local_stamp() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y%m%d_%H%M%S", &tm);
    return b;
}

std::string utc_iso() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return b;
}

int64_t trial_seconds_of(const ClosedRunOptions& o) { return o.trial_seconds.value_or(closed_options()[0].duration_s); }
double pause_seconds_of(const ClosedRunOptions& o) { return o.pause_seconds.value_or(kClosedPauseS); }

/// Option `n` as this run runs it: the table's row, with --test-cpu-mem-gb for an Option that has a CPU tier.
ClosedOption effective_option(int n, const ClosedRunOptions& o) {
    ClosedOption r = closed_option(n);
    if (o.test_cpu_mem_gb && r.cpu_mem_gb > 0) r.cpu_mem_gb = *o.test_cpu_mem_gb;
    return r;
}

/// kvio.mlperf_closed, the marker every file of the run carries.
Json marker(int option, int trial, int rank, const std::string& reason) {
    Json m;
    m["option"] = option;
    m["trial"] = trial;
    if (rank >= 0) m["rank"] = rank;
    m["closed_submission"] = reason.empty();
    if (!reason.empty()) m["not_a_closed_submission"] = reason;
    return m;
}

/// Reads a client's results file, adds the marker, writes it whole at `to` and removes the original.
void move_marked(const std::string& from, const std::string& to, const Json& mark) {
    Json doc;
    {
        std::ifstream f(from);
        if (!f) return;
        doc = Json::parse(f);
    }
    doc["kvio"]["mlperf_closed"] = mark;
    write_text_file(to, doc.dump(4) + "\n");
    if (from != to) fs::remove(from);
}

/// Removes each client's <cache-dir>/rank_<N>/ after its trial, as a plain run removes its entries: the next trial
/// starts from an empty cache like the first, and the storage under test is left as it was found.
void remove_rank_caches(const std::string& cache_dir, int clients) {
    for (int n = 0; n < clients; ++n) {
        std::error_code ec;
        fs::remove_all(fs::path(cache_dir) / ("rank_" + std::to_string(n)), ec);
    }
}

/// Who runs the clients: N processes of this one (--num-clients), or this process as one rank of an MPI job (--mpi:
/// every rank runs this same protocol, rank 0 aggregates and writes the summary).
struct Topology {
    bool mpi = false;
    int rank = 0;                 ///< this process's rank (0 without MPI)
    int clients = 1;              ///< --num-clients, or the MPI job's size
    std::set<std::string> hosts;  ///< MPI: the ranks' hosts (MPI_Get_processor_name), as rank 0 gathered them
    bool leader() const { return rank == 0; }
};

std::string trial_dir_of(const ClosedRunOptions& o, int option, int trial) {
    return o.results_dir + "/option_" + std::to_string(option) + "/trial_" + std::to_string(trial);
}

/// The trial's config: the Option's, its merged result in the trial directory, no console.
SimConfig trial_config(const SimConfig& base, const ClosedOption& opt, int trial, const ClosedRunOptions& o) {
    SimConfig c = closed_option_config(base, opt, trial_seconds_of(o));
    c.output = trial_dir_of(o, opt.option, trial) + "/kvio_merged_results.json";
    c.quiet = true;
    c.mpi = false;
    c.num_clients = base.num_clients;
    return c;
}

void trial_progress(std::ostream& progress, const ClosedOption& opt, int trial, int clients, const SimConfig& c,
                    const char* what) {
    progress << "mlperf-closed: option " << opt.option << " (" << opt.name << ") trial " << trial + 1 << "/"
             << kClosedTrials << ": " << clients << " " << what << " x " << opt.num_users << " users of " << opt.model
             << ", " << c.duration << " s\n"
             << std::flush;
}

/// One trial of one Option: the clients run, their results land in rank_<N>/. Returns run_clients' exit code.
int run_trial(const SimConfig& base, const ClosedOption& opt, int trial, const ClosedRunOptions& o,
              const std::string& reason, std::ostream& progress) {
    const int clients = int(base.num_clients);
    for (int n = 0; n < clients; ++n) fs::create_directories(o.results_dir + "/" + rank_dir_name(opt.option, trial, n));
    const SimConfig c = trial_config(base, opt, trial, o);
    trial_progress(progress, opt, trial, clients, c, "client(s)");
    const SimResult r = run_clients(c, nullptr, c.progress_interval_s > 0 ? &progress : nullptr);
    const std::string stamp = local_stamp();
    for (int n = 0; n < clients; ++n)
        move_marked(client_output_path(c.output, n),
                    o.results_dir + "/" + rank_dir_name(opt.option, trial, n) + "/kvcache_results_" + stamp + ".json",
                    marker(opt.option, trial, n, reason));
    if (fs::exists(c.output)) move_marked(c.output, c.output, marker(opt.option, trial, -1, reason));
    remove_rank_caches(c.cache_dir, clients);
    return r.exit_code;
}

/// One trial as one rank of an MPI job: run_mpi_client (a barrier before the clock starts, every rank's result
/// gathered on rank 0), this rank's results moved into its own rank_<rank>/ and its cache <cache-dir>/rank_<rank>/
/// removed; then every rank agrees on the worst exit code (mpi_max_over_ranks: also the barrier after which every rank
/// file is in place). Rank 0 then writes the copy of any rank's file its own results tree lacks (ranks on other hosts
/// write theirs on their host) from the gathered documents, so that it aggregates every rank. Returns the agreed
/// exit code.
int run_trial_mpi(const SimConfig& base, const ClosedOption& opt, int trial, const ClosedRunOptions& o,
                  const std::string& reason, Topology& top, std::ostream& progress) {
    const std::string own_dir = o.results_dir + "/" + rank_dir_name(opt.option, trial, top.rank);
    fs::create_directories(own_dir);
    SimConfig c = trial_config(base, opt, trial, o);
    c.num_clients = 1;
    if (top.leader()) trial_progress(progress, opt, trial, top.clients, c, "rank(s)");
    std::vector<ClientResult> gathered;
    int code = 0;
    try {
        const SimResult r = run_mpi_client(c, nullptr, c.progress_interval_s > 0 ? &progress : nullptr, &gathered);
        code = r.exit_code;
    } catch (const std::exception& e) {  // this rank failed (and said so); the others still agree below
        progress << "mlperf-closed: rank " << top.rank << ": " << e.what() << "\n" << std::flush;
        code = 1;
    }
    const std::string stamp = local_stamp();
    move_marked(client_output_path(c.output, top.rank), own_dir + "/kvcache_results_" + stamp + ".json",
                marker(opt.option, trial, top.rank, reason));
    std::error_code ec;
    fs::remove_all(fs::path(c.cache_dir) / ("rank_" + std::to_string(top.rank)), ec);
    code = mpi_max_over_ranks(code);
    if (!top.leader()) return code;
    for (const auto& g : gathered) {
        top.hosts.insert(g.host);
        const std::string dir = o.results_dir + "/" + rank_dir_name(opt.option, trial, g.rank);
        if (g.doc.is_null() || !rank_result_files(dir).empty()) continue;
        fs::create_directories(dir);
        Json doc = g.doc;
        doc["kvio"]["mlperf_closed"] = marker(opt.option, trial, g.rank, reason);
        doc["kvio"]["mlperf_closed"]["written_by"] = "rank 0, from the result rank " + std::to_string(g.rank) +
                                                     " sent over MPI (its own copy is on " + g.host + ")";
        write_text_file(dir + "/kvcache_results_" + stamp + ".json", doc.dump(4) + "\n");
    }
    if (fs::exists(c.output)) move_marked(c.output, c.output, marker(opt.option, trial, -1, reason));
    return code;
}

/// Sleeps `seconds` in 100 ms steps; false when a stop signal came (its number in `signo`).
bool pause_between_options(double seconds, int& signo) {
    StopSignal stop;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        if (stop.stopped()) {
            signo = stop.signo();
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
}

Json metadata_json(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& options,
                   const std::string& reason, const Topology& top) {
    Json m;
    m["mode"] = "closed";
    m["closed_submission"] = reason.empty();
    if (!reason.empty()) m["not_a_closed_submission"] = reason;
    m["options_run"] = options;
    m["seed_base"] = kClosedSeed;
    m["rank_seed"] = "seed_base + rank";
    m["trials_per_option"] = kClosedTrials;
    m["trial_seconds"] = trial_seconds_of(o);
    m["pause_between_options_seconds"] = pause_seconds_of(o);
    m["clients"] = top.clients;
    m["launcher"] = top.mpi ? "mpi" : "processes";
    if (top.mpi) m["hosts"] = top.hosts;
    m["cache_dir"] = fs::absolute(base.cache_dir).string();
    m["results_dir"] = fs::absolute(o.results_dir).string();
    Json params = Json::object();
    for (int opt : options)
        params[std::to_string(opt)] = closed_option_parameters(effective_option(opt, o), trial_seconds_of(o));
    m["option_parameters"] = params;
    return m;
}

/// Where `dir` will be: itself when it is a directory, else its parent when that exists (the run creates one level),
/// else "" with "FLAG DIR: No such file or directory" (or "Not a directory") added to `errors`.
std::string existing_place(const std::string& flag, const std::string& dir, std::vector<std::string>& errors) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return dir;
    if (fs::exists(dir, ec)) {
        errors.push_back(flag + " " + dir + ": Not a directory");
        return "";
    }
    const fs::path parent = fs::absolute(dir, ec).parent_path();
    if (fs::is_directory(parent, ec)) return parent.string();
    errors.push_back(flag + " " + dir + ": No such file or directory");
    return "";
}

/// The two directories' checks before anything is created (docs/mlperf-benchmark.md, "Running a CLOSED submission
/// with kvio"): each exists or its parent does (a CLOSED cache directory is on the storage under test, so a missing
/// tree of parents is a mistake, not something to create on the root filesystem), the results directory holds no
/// earlier CLOSED run (option_<O>/ or kvcache_run_summary_*.json: mlperf-check reads one run per directory), and the
/// two are on different filesystems (rule kvcachePosixCacheDir: their st_dev differ).
void check_closed_dirs(const std::string& cache_dir, const std::string& results_dir, std::vector<std::string>& errors) {
    const std::string cache_at = existing_place("--cache-dir", cache_dir, errors);
    const std::string results_at = existing_place("--results-dir", results_dir, errors);
    if (cache_at.empty() || results_at.empty()) return;
    std::error_code ec;
    if (results_at == results_dir && fs::is_directory(results_dir, ec))
        for (const auto& e : fs::directory_iterator(results_dir, ec)) {
            const std::string name = e.path().filename().string();
            if ((name.rfind("option_", 0) == 0 && e.is_directory(ec)) || name.rfind("kvcache_run_summary_", 0) == 0) {
                errors.push_back("--results-dir " + results_dir + " already holds a CLOSED run (" + name +
                                 "): give each run its own results directory");
                return;
            }
        }
    const std::string cd = path_st_dev(cache_at), rd = path_st_dev(results_at);
    if (cd == rd)
        errors.push_back("--cache-dir " + cache_dir + " and --results-dir " + results_dir +
                         " are on one filesystem (device " + cd +
                         "): CLOSED needs them on different filesystems (rule kvcachePosixCacheDir)");
}

}  // namespace

std::string not_a_submission_reason(const ClosedRunOptions& o) {
    std::string r;
    auto add = [&](const std::string& s) { r += (r.empty() ? "" : "; ") + s; };
    if (trial_seconds_of(o) != closed_options()[0].duration_s)
        add("trials of " + std::to_string(trial_seconds_of(o)) + " s instead of 300 s (--trial-seconds)");
    if (pause_seconds_of(o) != kClosedPauseS) {
        char b[128];
        std::snprintf(b, sizeof b, "%g s between Options instead of 90 s (--pause-seconds)", pause_seconds_of(o));
        add(b);
    }
    if (o.test_cpu_mem_gb && *o.test_cpu_mem_gb != closed_option(2).cpu_mem_gb) {
        char b[128];
        std::snprintf(b, sizeof b, "Option 2 with a %g GiB CPU tier instead of 4 GiB (--test-cpu-mem-gb)",
                      *o.test_cpu_mem_gb);
        add(b);
    }
    if (o.option != "all") add("only Option " + o.option + " (--mlperf-option)");
    return r.empty() ? r : "not a CLOSED submission: " + r;
}

namespace {

/// Every refusal of check_closed_run; nothing is created. `options` gets the Options to run.
std::vector<std::string> closed_run_errors(const SimConfig& base, const ClosedRunOptions& o,
                                           std::vector<int>& options) {
    std::vector<std::string> errors = closed_refusals(o.given_flags, base.seed);
    if (base.cache_dir.empty())
        errors.push_back("--cache-dir is required: the storage under test (rule kvcachePosixCacheDir)");
    if (o.results_dir.empty())
        errors.push_back(
            "--results-dir is required, on another filesystem than --cache-dir (rule kvcachePosixCacheDir)");
    if (o.option == "all")
        options = {1, 2, 3};
    else if (o.option == "1" || o.option == "2" || o.option == "3")
        options = {std::stoi(o.option)};
    else
        errors.push_back("--mlperf-option " + o.option + ": one of 1, 2, 3, all");
    if (o.trial_seconds && *o.trial_seconds < 1) errors.push_back("--trial-seconds must be >= 1");
    if (o.pause_seconds && !(*o.pause_seconds >= 0)) errors.push_back("--pause-seconds must be >= 0");
    if (o.test_cpu_mem_gb && !(*o.test_cpu_mem_gb > 0)) errors.push_back("--test-cpu-mem-gb must be > 0");
    if (base.num_clients < 1) errors.push_back("--num-clients must be >= 1");
    if (base.mpi && std::find(o.given_flags.begin(), o.given_flags.end(), "--num-clients") != o.given_flags.end())
        errors.push_back(
            "--num-clients with --mpi: the MPI job's ranks are the clients, one per rank (rule "
            "kvcacheClientDefinition)");
    if (errors.empty()) check_closed_dirs(base.cache_dir, o.results_dir, errors);
    if (errors.empty()) try {
            check_multi_client(base, base.mpi ? "--mpi" : "--mlperf-closed");
        } catch (const Error& e) {
            errors.push_back(e.what());
        }
    return errors;
}

[[noreturn]] void refuse(const std::vector<std::string>& errors) {
    std::string msg = "mlperf-closed: refused:";
    for (const auto& e : errors) msg += "\n  " + e;
    throw Error(msg);
}

/// Under MPI every rank checks its own host's directories, and a refusal on any rank refuses the run on every rank
/// before any directory is created (mpi_max_over_ranks): no rank starts a trial the others will not join.
std::vector<int> check_closed_run_mpi(const SimConfig& base, const ClosedRunOptions& o, const Topology& top) {
    std::vector<int> options;
    const std::vector<std::string> errors = closed_run_errors(base, o, options);
    const int refused = mpi_max_over_ranks(errors.empty() ? 0 : 1);
    if (!errors.empty()) refuse(errors);
    if (refused)
        throw Error("mlperf-closed: rank " + std::to_string(top.rank) +
                    ": refused because another rank was (its reasons are printed by that rank)");
    fs::create_directory(base.cache_dir);
    fs::create_directory(o.results_dir);
    mpi_max_over_ranks(0);  // every rank's directories exist before any trial starts
    return options;
}

/// The per-Option line of the console.
void print_option_line(std::ostream& progress, int option, const Json& a) {
    auto p95 = [&](const char* k) { return a[k].is_number() ? a[k].get<double>() : 0.0; };
    char line[256];
    std::snprintf(line, sizeof line,
                  "mlperf-closed: option %d: read %.4f GB/s, write %.4f GB/s, device read P95 %.2f ms, write P95 "
                  "%.2f ms, %.1f storage tokens/s\n",
                  option, a["aggregated_read_bandwidth_gbps"].get<double>(),
                  a["aggregated_write_bandwidth_gbps"].get<double>(), p95("aggregated_device_read_p95_ms"),
                  p95("aggregated_device_write_p95_ms"),
                  a["aggregated_storage_throughput_tokens_per_sec"].get<double>());
    progress << line << std::flush;
}

/// The summary shaped as mlpstorage's kvcache_run_summary.json, with kvio's metadata and provenance.
Json summary_json(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& options,
                  const std::string& reason, const Topology& top, const Json& opts, int signo, const std::string& stamp,
                  const std::string& started, Json prov) {
    Json s;
    s["schema_version"] = "1.0";
    s["run_datetime"] = stamp;
    const int hosts = top.mpi ? std::max(1, int(top.hosts.size())) : 1;
    s["npernode"] = top.clients % hosts == 0 ? Json(top.clients / hosts) : Json(nullptr);  // uneven: none
    s["host_count"] = hosts;
    s["total_ranks"] = top.clients;
    s["trials_per_option"] = kClosedTrials;
    s["options"] = opts;
    bool partial = false;
    for (const auto& [k, v] : opts.items()) partial = partial || v.value("partial_failure", false);
    s["partial_failure"] = partial;
    s["closed_submission"] = reason.empty() && !signo;
    if (!reason.empty() || signo)
        s["not_a_closed_submission"] =
            signo ? "stopped by signal " + std::to_string(signo) + (reason.empty() ? "" : "; " + reason) : reason;
    Json k;
    k["metadata"] = metadata_json(base, o, options, reason, top);
    k["metadata"]["started"] = started;
    k["metadata"]["finished"] = utc_iso();
    if (signo) k["metadata"]["stopped_by_signal"] = signo;
    prov["cache_dir"] = filesystem_provenance(base.cache_dir);
    prov["results_dir"] = filesystem_provenance(o.results_dir);
    k["provenance"] = prov;
    s["kvio"] = k;
    return s;
}

}  // namespace

std::vector<int> check_closed_run(const SimConfig& base, const ClosedRunOptions& o) {
    std::vector<int> options;
    const std::vector<std::string> errors = closed_run_errors(base, o, options);
    if (!errors.empty()) refuse(errors);
    // created only once nothing is refused: a refused run leaves no trace
    fs::create_directory(base.cache_dir);
    fs::create_directory(o.results_dir);
    return options;
}

ClosedRunResult run_mlperf_closed(const SimConfig& base_in, const ClosedRunOptions& o, std::ostream& progress) {
    std::optional<MpiScope> mpi;
    Topology top;
    std::vector<int> options;
    if (base_in.mpi) {
        mpi.emplace();
        top.mpi = true;
        top.rank = mpi->rank();
        top.clients = mpi->size();
        options = check_closed_run_mpi(base_in, o, top);
    } else {
        options = check_closed_run(base_in, o);
        top.clients = int(base_in.num_clients);
    }
    SimConfig base = base_in;
    base.num_clients = top.clients;
    const std::string reason = not_a_submission_reason(o);
    if (!reason.empty() && top.leader()) progress << "mlperf-closed: " << reason << "\n";
    const std::string started = utc_iso(), stamp = local_stamp();
    // Before the first trial: the binary's SHA-256 takes a second or more, and after a stop signal mpirun kills the
    // ranks soon after forwarding it: the summary must be quick to write by then.
    const Json prov = top.leader() ? Json(host_provenance(o.kvio_version)) : Json();
    ClosedRunResult res;
    Json opts = Json::object();
    int signo = 0;
    bool failed = false;
    for (size_t i = 0; i < options.size() && !signo; ++i) {
        const ClosedOption opt = effective_option(options[i], o);
        int trials_run = 0;
        for (int t = 0; t < kClosedTrials && !signo; ++t) {
            const int code = top.mpi ? run_trial_mpi(base, opt, t, o, reason, top, progress)
                                     : run_trial(base, opt, t, o, reason, progress);
            ++trials_run;
            if (code == 130 || code == 143 || code == 129) signo = code - 128;
            if (code != 0 && !signo) failed = true;
        }
        if (top.leader()) {
            opts[std::to_string(opt.option)] = aggregate_option(o.results_dir, opt.option, trials_run, top.clients);
            print_option_line(progress, opt.option, opts[std::to_string(opt.option)]);
        }
        if (i + 1 < options.size() && !signo) {
            if (top.leader())
                progress << "mlperf-closed: pausing " << pause_seconds_of(o) << " s before option " << options[i + 1]
                         << "\n"
                         << std::flush;
            pause_between_options(pause_seconds_of(o), signo);
            if (top.mpi) signo = mpi_max_over_ranks(signo);  // the pause ends together; a signal on one stops all
        }
    }
    if (!top.leader()) {        // rank 0 aggregates and writes the summary; the others wait for it before they exit
        mpi_max_over_ranks(0);  // (mpirun ends the whole job when one rank exits non-zero, e.g. 130 after a stop)
        res.exit_code = signo ? 128 + signo : failed ? 1 : 0;
        return res;
    }
    Json s = summary_json(base, o, options, reason, top, opts, signo, stamp, started, prov);
    const bool partial = s["partial_failure"].get<bool>();
    res.summary_path = o.results_dir + "/kvcache_run_summary_" + stamp + ".json";
    write_text_file(res.summary_path, s.dump(2) + "\n");
    progress << "mlperf-closed: summary written to " << res.summary_path << "\n" << std::flush;
    if (top.mpi) mpi_max_over_ranks(0);  // the summary is whole: the other ranks may exit
    res.summary = std::move(s);
    res.exit_code = signo ? 128 + signo : failed || partial ? 1 : 0;
    return res;
}

}  // namespace kvio::serving
