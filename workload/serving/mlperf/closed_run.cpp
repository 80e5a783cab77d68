#include "workload/serving/mlperf/closed_run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <ostream>
#include <thread>
#include <tuple>

#include "common/error.h"
#include "common/jsonl.h"
#include "common/stop_signal.h"
#include "workload/serving/cluster/mpi_client.h"
#include "workload/serving/cluster/multi_client.h"
#include "workload/serving/mlperf/closed_rules.h"
#include "workload/serving/mlperf/provenance.h"
#include "workload/serving/mlperf/sizing.h"
#include "workload/serving/results/json_need.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/results/report.h"

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

/// kvio.mlperf_closed, the marker every file of the run carries: `o.run_id` tells its files from another run's, and
/// `o.system_name` (--system-name, when given) names the system under test.
Json marker(int option, int trial, int rank, const std::string& reason, const ClosedRunOptions& o) {
    Json m;
    if (!o.run_id.empty()) m["run_id"] = o.run_id;
    if (!o.system_name.empty()) m["system_name"] = o.system_name;
    m["option"] = option;
    m["trial"] = trial;
    if (rank >= 0) m["rank"] = rank;
    m["closed_submission"] = reason.empty();
    if (!reason.empty()) m["not_a_closed_submission"] = reason;
    return m;
}

/// `mark` for the results document `doc`: a client a signal stopped (`kvio.stop.signal`, docs/simulate.md, "Stop
/// rules") measured part of its trial, so its file is no CLOSED result whatever the run's flags
/// (`closed_submission` false, `stopped_by_signal`, the stop named first in `not_a_closed_submission`).
Json mark_stop(Json mark, const Json& doc) {
    const Json& stop = field_or_null(field_or_null(doc, "kvio"), "stop");
    const Json& sig = field_or_null(stop, "signal");
    const Json& reason = field_or_null(stop, "reason");
    const bool own = sig.is_number_integer() && sig.get<int>() != 0;
    const bool other = reason.is_string() && reason.get<std::string>().rfind("signal ", 0) == 0;  // another rank's
    if (!own && !other) return mark;
    char at[64] = "";
    if (const Json& t = field_or_null(stop, "stop_requested_at_s"); t.is_number())
        std::snprintf(at, sizeof at, " %.1f s into the trial", t.get<double>());
    const std::string why =
        (own ? "stopped by signal " + std::to_string(sig.get<int>()) : "stopped (" + reason.get<std::string>() + ")") +
        at;
    mark["closed_submission"] = false;
    if (own) mark["stopped_by_signal"] = sig;
    mark["stopped"] = true;
    mark["not_a_closed_submission"] = mark.contains("not_a_closed_submission")
                                          ? why + "; " + mark["not_a_closed_submission"].get<std::string>()
                                          : why;
    return mark;
}

/// Removes `rel` (option_<O>/trial_<T>/rank_<N>) under `root` when it is empty (a client that wrote no results), and
/// its parents up to `root` when that leaves them empty: a failed trial leaves no empty directories behind.
void remove_empty_dirs(const std::string& root, const std::string& rel) {
    for (fs::path p = rel; !p.empty(); p = p.parent_path()) {
        std::error_code ec;
        const fs::path dir = fs::path(root) / p;
        if (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec) || ec) return;
        fs::remove(dir, ec);
    }
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

/// "trial_<T> (<T+1>/3)": the directory's name and the count, so the two agree.
std::string trial_label(int trial) {
    return "trial_" + std::to_string(trial) + " (" + std::to_string(trial + 1) + "/" + std::to_string(kClosedTrials) +
           ")";
}

void trial_progress(std::ostream& progress, const ClosedOption& opt, int trial, int clients, const SimConfig& c,
                    const char* what) {
    progress << "mlperf-closed: option " << opt.option << " (" << opt.name << ") " << trial_label(trial) << ": "
             << clients << " " << what << " x " << opt.num_users << " users of " << opt.model << ", " << c.duration
             << " s\n"
             << std::flush;
}

/// How a trial ended: the clients' exit code (run_clients', 1 when the launcher itself failed), how many rank files
/// are in place, and whether it failed entirely (the launcher failed, or no rank produced a file): then the protocol
/// stops rather than run the rest.
struct TrialOutcome {
    int code = 0;
    int placed = 0;
    bool failed_entirely = false;
    std::string why;  ///< what failed, for the console ("a client failed", "a rank file could not be written")
    /// Each client that failed in the trial, and why ({rank, why}; under MPI with its host; without a rank for what is
    /// no client's: the launcher, the trial's merged file): the summary's kvio.trial_failures.
    Json failures = Json::array();
};

/// Whether exit code `code` of a trial's clients is a failure (1), not a stop (128 + signal) or success (0).
bool failure_code(int code) { return code > 0 && code < 128; }

/// A failed trial's merged result goes (docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio"): its
/// failed_ranks name only clients that exited non-zero, not a rank file that could not be written, so it would claim
/// a trial the protocol counts as failed. Said on `progress`.
void remove_failed_merge(const std::string& merged, const ClosedOption& opt, int trial, const std::string& why,
                         std::ostream& progress) {
    std::error_code ec;
    if (!fs::remove(merged, ec)) return;
    progress << "mlperf-closed: option " << opt.option << " " << trial_label(trial) << ": " << merged
             << " removed: the trial failed (" << why << "), its merged result is no result\n"
             << std::flush;
}

/// A trial that placed no rank file: the launcher's merged result of no client (0 requests) is no result, so it goes,
/// and the trial's directories with it when that leaves them empty; the console already says "produced no rank file".
void drop_empty_merge(const ClosedRunOptions& o, int option, int trial, const std::string& merged) {
    std::error_code ec;
    fs::remove(merged, ec);
    remove_empty_dirs(o.results_dir, "option_" + std::to_string(option) + "/trial_" + std::to_string(trial));
}

/// Says on `progress` when a client of the trial had storage operations fail (`doc`, its results, kvio.cache:
/// capacity_refusals and write_io_errors, which make up failed_writes, and failed_reads): the client's own warning
/// goes to its results only, and the trial's figures count only the operations that completed.
void say_failed_ops(const Json& doc, const ClosedOption& opt, int trial, int client, std::ostream& progress) {
    const Json kc = doc.is_object() && doc.contains("kvio") && doc["kvio"].is_object()
                        ? doc["kvio"].value("cache", Json())
                        : Json();
    if (!kc.is_object()) return;
    const std::string who = "mlperf-closed: option " + std::to_string(opt.option) + " " + trial_label(trial) +
                            ": client " + std::to_string(client) + ": ";
    // Each line one string, one write: under MPI every rank writes to its own stderr at once, and mpirun forwards
    // what each write gave (a line written piecewise could be cut by another rank's).
    if (kc.value("failed_writes", uint64_t(0)))
        progress << (who + failed_writes_phrase(kc) + " (not counted as done)\n") << std::flush;
    if (const uint64_t n = kc.value("failed_reads", uint64_t(0)))
        progress << (who + std::to_string(n) + " storage reads failed (not counted as done; first: " +
                     kc.value("first_read_error", std::string("?")) + ")\n")
                 << std::flush;
}

/// Whether results `doc` record failed storage I/O (kvio.cache: write_io_errors or failed_reads,
/// rank_storage_failures): the device under test failed, and one that failed usually fails again, so the protocol stops
/// after that trial (docs/mlperf-benchmark.md, "A failed trial").
bool storage_io_failed(const Json& doc) {
    const RankStorageFailures f = rank_storage_failures(doc);
    return f.io_writes + f.io_reads > 0;
}

/// Why a client failed in its trial, "" when it did not: its launcher's `error`, or an exit status that is a failure
/// (failure_code: not a stop).
std::string client_failure(const std::string& error, int exit_code) {
    if (!error.empty()) return error;
    return failure_code(exit_code) ? "its client exited with status " + std::to_string(exit_code) : "";
}

/// One trial of one Option: the clients run, their results land in rank_<N>/. Whatever happened (a client or the
/// launcher failing, a full results disk), every client's cache is removed and every rank file that was written
/// whole is moved into its rank directory.
TrialOutcome run_trial(const SimConfig& base, const ClosedOption& opt, int trial, const ClosedRunOptions& o,
                       const std::string& reason, std::ostream& progress) {
    const int clients = int(base.num_clients);
    const SimConfig c = trial_config(base, opt, trial, o);
    TrialOutcome out;
    try {
        for (int n = 0; n < clients; ++n)
            fs::create_directories(o.results_dir + "/" + rank_dir_name(opt.option, trial, n));
        trial_progress(progress, opt, trial, clients, c, "client(s)");
        const SimResult r = run_clients(c, nullptr, c.progress_interval_s > 0 ? &progress : nullptr);
        out.code = r.exit_code;
        for (const Json& cl : field_or_null(field_or_null(r.results, "kvio"), "clients"))
            if (std::string why = client_failure(cl.value("error", std::string()), cl.value("exit_code", 0));
                !why.empty())
                out.failures.push_back({{"rank", cl.value("rank", -1)}, {"why", why}});
    } catch (const std::exception& e) {
        progress << "mlperf-closed: option " << opt.option << " " << trial_label(trial) << ": " << e.what() << "\n"
                 << std::flush;
        out.code = 1;
        out.failed_entirely = true;
        out.failures.push_back({{"why", std::string("the launcher failed: ") + e.what()}});
    }
    remove_rank_caches(c.cache_dir, clients);
    const std::string stamp = local_stamp();
    bool write_failed = false;
    std::string io_failed;  // the clients whose storage I/O failed ("client 0, client 1")
    for (int n = 0; n < clients; ++n) {
        std::string why;
        const Placement p = place_marked_file(
            client_output_path(c.output, n),
            o.results_dir + "/" + rank_dir_name(opt.option, trial, n) + "/kvcache_results_" + stamp + ".json",
            marker(opt.option, trial, n, reason, o), progress,
            [&](const Json& doc) {
                say_failed_ops(doc, opt, trial, n, progress);
                if (storage_io_failed(doc))
                    io_failed += (io_failed.empty() ? "client " : ", client ") + std::to_string(n);
            },
            &why);
        out.placed += p == Placement::Placed;
        write_failed = write_failed || p == Placement::Failed;
        if (p == Placement::Failed) out.failures.push_back({{"rank", n}, {"why", why}});
    }
    for (int n = 0; n < clients; ++n) remove_empty_dirs(o.results_dir, rank_dir_name(opt.option, trial, n));
    if (out.placed == 0) {
        out.failed_entirely = true;
        drop_empty_merge(o, opt.option, trial, c.output);
        return out;
    }
    if (write_failed || failure_code(out.code) || !io_failed.empty()) {  // a failed trial: the protocol stops after it
        out.code = std::max(out.code, 1);
        out.failed_entirely = true;
        out.why = write_failed                                  ? "a rank file could not be written"
                  : failure_code(out.code) && io_failed.empty() ? "a client failed"
                                                                : "storage I/O errors on " + io_failed;
        remove_failed_merge(c.output, opt, trial, out.why, progress);
        return out;
    }
    std::string why;
    if (place_marked_file(c.output, c.output, marker(opt.option, trial, -1, reason, o), progress, nullptr, &why) ==
        Placement::Failed) {
        out.code = std::max(out.code, 1);
        out.failed_entirely = true;
        out.why = "its merged result could not be written";
        out.failures.push_back({{"why", why}});
    }
    return out;
}

/// The rank file a rank writes the moment its trial sees a stop (docs/mlperf-benchmark.md, "Stopping an MPI run"):
/// mpirun forwards Ctrl-C to every rank as SIGTERM and kills them odls_base_sigkill_timeout seconds later (1 s by
/// default), often before the in-flight requests drained and the results were written. So the rank's place holds, from
/// the first moment, a file that says the trial was stopped and holds no figures (`results_pending`); the rank's full
/// results replace it (one rename) when the rank lives long enough. Written whole (temporary name, renamed); a failure
/// is named on `progress` and changes nothing else.
void write_stop_placeholder(const std::string& path, const ClosedOption& opt, int trial, int rank,
                            const std::string& reason, const ClosedRunOptions& o, const SimConfig& c, int base_clients,
                            int signo, bool own, std::ostream& progress) {
    Json doc;
    doc["seed"] = kClosedSeed + rank;
    Json stop;
    stop["signal"] = own ? signo : 0;
    stop["reason"] = std::string("signal ") + strsignal(signo) + (own ? "" : " to another client");
    doc["kvio"]["stop"] = stop;
    Json flags = closed_option_parameters(opt, c.duration);
    flags["cache_dir"] = (fs::path(c.cache_dir) / ("rank_" + std::to_string(rank))).string();
    flags["output"] = path;
    flags["num_clients"] = base_clients;
    flags["mpi"] = true;
    doc["kvio"]["config"]["flags"] = flags;
    doc["kvio"]["config"]["client"] = {{"rank", rank}, {"clients", base_clients}, {"launcher", "mpi"}};
    Json m = mark_stop(marker(opt.option, trial, rank, reason, o), doc);
    m["results_pending"] = true;
    m["written_at"] =
        "the stop signal, before the trial's requests drained: replaced by the rank's results when it "
        "outlives the launcher's kill (odls_base_sigkill_timeout)";
    doc["kvio"]["mlperf_closed"] = m;
    try {
        write_text_file(path, doc.dump(4) + "\n");
    } catch (const std::exception& e) {
        progress << "mlperf-closed: rank " << rank << ": " << e.what() << "\n" << std::flush;
    }
}

/// Rank 0's copy of each rank file its own results tree lacks (a rank on another host wrote its own there), from the
/// result that rank sent over MPI (`gathered`), marked like a placed rank file and naming itself in flags.output, with
/// kvio.mlperf_closed.written_by saying where it came from. False (said on `progress`, and in `why`) when a copy could
/// not be written.
bool write_gathered_copies(const std::vector<ClientResult>& gathered, const ClosedOption& opt, int trial,
                           const ClosedRunOptions& o, const std::string& reason, const std::string& stamp,
                           std::ostream& progress, std::string& why) {
    bool ok = true;
    for (const auto& g : gathered) {
        const std::string dir = o.results_dir + "/" + rank_dir_name(opt.option, trial, g.rank);
        if (g.doc.is_null() || !rank_result_files(dir).empty()) continue;
        try {
            fs::create_directories(dir);
            Json doc = g.doc;
            doc["kvio"]["mlperf_closed"] = mark_stop(marker(opt.option, trial, g.rank, reason, o), doc);
            doc["kvio"]["mlperf_closed"]["written_by"] = "rank 0, from the result rank " + std::to_string(g.rank) +
                                                         " sent over MPI (its own copy is on " + g.host + ")";
            const std::string copy = dir + "/kvcache_results_" + stamp + ".json";
            if (doc["kvio"].contains("config") && doc["kvio"]["config"].contains("flags"))
                doc["kvio"]["config"]["flags"]["output"] = copy;  // the file itself, as every placed rank file names
            write_text_file(copy, doc.dump(4) + "\n");
        } catch (const std::exception& e) {
            progress << "mlperf-closed: " << e.what() << "\n" << std::flush;
            if (why.empty()) why = "rank 0's copy of rank " + std::to_string(g.rank) + "'s file: " + e.what();
            remove_empty_dirs(o.results_dir, rank_dir_name(opt.option, trial, g.rank));
            ok = false;
        }
    }
    return ok;
}

/// One trial as one rank of an MPI job: run_mpi_client (a barrier before the clock starts, every rank's result
/// gathered on rank 0), this rank's results moved into its own rank_<rank>/ and its cache <cache-dir>/rank_<rank>/
/// removed; then every rank agrees on the worst exit code (mpi_max_over_ranks: also the barrier after which every rank
/// file is in place) and on whether any rank placed a file. Rank 0 then writes the copy of any rank's file its own
/// results tree lacks (ranks on other hosts write theirs on their host) from the gathered documents, so that it
/// aggregates every rank.
TrialOutcome run_trial_mpi(const SimConfig& base, const ClosedOption& opt, int trial, const ClosedRunOptions& o,
                           const std::string& reason, Topology& top, const StopSignal& stop, std::ostream& progress) {
    const std::string own_dir = o.results_dir + "/" + rank_dir_name(opt.option, trial, top.rank);
    SimConfig c = trial_config(base, opt, trial, o);
    c.num_clients = 1;
    c.mpi = true;  // run_mpi_client's clients record it (client_config)
    if (top.leader()) trial_progress(progress, opt, trial, top.clients, c, "rank(s)");
    std::vector<ClientResult> gathered;
    TrialOutcome out;
    std::string own_why;  // what failed of this rank, for the summary
    const std::string stamp = local_stamp();
    const std::string own_file = own_dir + "/kvcache_results_" + stamp + ".json";
    auto on_stop = [&](int signo, bool own) {
        write_stop_placeholder(own_file, opt, trial, top.rank, reason, o, c, top.clients, signo, own, progress);
    };
    try {
        fs::create_directories(own_dir);
        const SimResult r =
            run_mpi_client(c, nullptr, c.progress_interval_s > 0 ? &progress : nullptr, &gathered, on_stop);
        out.code = r.exit_code;
    } catch (const std::exception& e) {  // this rank failed (and said so); the others still agree below
        progress << "mlperf-closed: rank " << top.rank << ": " << e.what() << "\n" << std::flush;
        out.code = 1;
        own_why = e.what();
    }
    for (const auto& g : gathered)  // this rank's own client (rank 0's exit code is the merged one)
        if (g.rank == top.rank && own_why.empty()) own_why = client_failure(g.error, g.exit_code);
    std::error_code ec;
    fs::remove_all(fs::path(c.cache_dir) / ("rank_" + std::to_string(top.rank)), ec);
    std::string not_written;
    bool own_io_failed = false;
    const Placement placement = place_marked_file(
        client_output_path(c.output, top.rank), own_file, marker(opt.option, trial, top.rank, reason, o), progress,
        [&](const Json& doc) {
            say_failed_ops(doc, opt, trial, top.rank, progress);
            own_io_failed = storage_io_failed(doc);
        },
        &not_written);
    if (placement == Placement::Failed) {
        out.code = std::max(out.code, 1);
        own_why += (own_why.empty() ? "" : "; ") + not_written;
    }
    // Every rank says rank 0 what failed of it (a collective): the summary names each failed rank and why.
    const std::vector<std::string> whys = mpi_gather_strings(own_why);
    const bool placed = placement == Placement::Placed || fs::exists(own_file, ec);
    if (!placed) fs::remove(own_dir, ec);  // only when empty; its parents may be other ranks' (a shared directory)
    if (stop.stopped()) out.code = std::max(out.code, 128 + stop.signo());  // a signal between the trials
    out.code = mpi_max_over_ranks(out.code);
    out.placed = mpi_max_over_ranks(placed ? 1 : 0);
    const bool io_failed = mpi_max_over_ranks(own_io_failed ? 1 : 0) != 0;  // a rank's storage I/O failed
    if (io_failed) out.code = std::max(out.code, 1);
    // A failed trial (a rank's file not written, a rank failed) is not filled in from the results sent over MPI: the
    // rank that failed said so, and a copy would contradict it.
    const bool failed = out.placed == 0 || failure_code(out.code);
    bool wrote = true;  // rank 0's copies and the trial's merged file
    if (top.leader()) {
        for (const auto& g : gathered) top.hosts.insert(g.host);
        for (size_t r = 0; r < whys.size(); ++r) {
            if (whys[r].empty()) continue;
            Json f = {{"rank", int(r)}, {"why", whys[r]}};
            for (const auto& g : gathered)
                if (g.rank == int(r)) f["host"] = g.host;
            out.failures.push_back(f);
        }
        std::string why;
        if (!failed)
            wrote = write_gathered_copies(gathered, opt, trial, o, reason, stamp, progress, why) &&
                    place_marked_file(c.output, c.output, marker(opt.option, trial, -1, reason, o), progress, nullptr,
                                      &why) != Placement::Failed;
        if (!wrote) out.failures.push_back({{"rank", 0}, {"why", why}});
    }
    if (mpi_max_over_ranks(wrote ? 0 : 1)) out.code = std::max(out.code, 1);  // every rank stops together
    out.failed_entirely = out.placed == 0 || failure_code(out.code);
    if (out.failed_entirely && out.placed > 0)
        out.why = io_failed ? "storage I/O errors on a rank"
                  : failed  ? "a rank failed or its file was not written"
                            : "rank 0 could not write a results file";
    if (!top.leader()) return out;
    if (out.placed == 0)
        drop_empty_merge(o, opt.option, trial, c.output);
    else if (out.failed_entirely)
        remove_failed_merge(c.output, opt, trial, out.why, progress);
    return out;
}

/// Sleeps `seconds` in 100 ms steps; false when the run's stop signal came (its number in `signo`). Every
/// kConsoleCountdownS seconds of it "mlperf-closed: pause: N s left" goes to `console` (when set): at most one line
/// per 10 s.
bool pause_between_options(double seconds, const StopSignal& stop, int& signo, std::ostream* console) {
    constexpr double kConsoleCountdownS = 10;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    double next = kConsoleCountdownS;
    while (std::chrono::steady_clock::now() < end) {
        if (stop.stopped()) {
            signo = stop.signo();
            return false;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (console && waited >= next) {
            *console << "mlperf-closed: pause: " << std::llround(seconds - next) << " s left\n" << std::flush;
            next += kConsoleCountdownS;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
}

/// An Option's aggregated figures as both the console's headline and the progress line print them, from its entry
/// in the summary's `options` (`a`): read and write bandwidth (GB/s, 4 decimals), device read and write P95 (ms,
/// 2 decimals) and storage tokens/s (1 decimal); a figure absent or not a number prints as 0.
std::string option_figures(const Json& a) {
    auto num = [&](const char* k) { return a.contains(k) && a[k].is_number() ? a[k].get<double>() : 0.0; };
    char line[256];
    std::snprintf(line, sizeof line,
                  "read %.4f GB/s, write %.4f GB/s, device read P95 %.2f ms, write P95 %.2f ms, %.1f storage tokens/s",
                  num("aggregated_read_bandwidth_gbps"), num("aggregated_write_bandwidth_gbps"),
                  num("aggregated_device_read_p95_ms"), num("aggregated_device_write_p95_ms"),
                  num("aggregated_storage_throughput_tokens_per_sec"));
    return line;
}

/// The console's (stdout's) line for an Option at the run's end: its headline figures and how many trials they
/// cover, or why it has none.
void print_option_headline(std::ostream& console, const ClosedOption& opt, const Json& a) {
    console << "mlperf-closed: option " << opt.option << " (" << opt.name << "): ";
    const int scored = a.value("scored_trial_count", 0);
    if (scored == 0) {
        console << "no scored trial (the summary's options." << opt.option << " says why)\n";
        return;
    }
    console << option_figures(a) << " (" << scored << " of " << a.value("trial_count", 0) << " trial(s) scored"
            << (a.value("valid", true) ? "" : "; INVALID") << ")\n";
}

Json metadata_json(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& options,
                   const std::string& reason, const Topology& top) {
    Json m;
    m["mode"] = "closed";
    m["run_id"] = o.run_id;
    if (!o.system_name.empty()) m["system_name"] = o.system_name;
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
    // ENOTDIR when a component is a regular file: say so, as the kernel would
    struct stat st {};
    const bool not_dir = ::stat(parent.c_str(), &st) == 0 || errno == ENOTDIR;
    errors.push_back(flag + " " + dir + (not_dir ? ": Not a directory" : ": No such file or directory"));
    return "";
}

/// Whether the run can create files in `place` (the directory, or the parent it will be made in): a probe file is
/// created and removed. Adds "FLAG DIR: not writable: REASON" to `errors` when not: a read-only or unwritable
/// directory is refused before anything starts, not found by the first trial.
void check_writable(const std::string& flag, const std::string& dir, const std::string& place,
                    std::vector<std::string>& errors) {
    const std::string probe = place + "/.kvio-closed-probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        errors.push_back(flag + " " + dir + ": not writable: " + std::strerror(errno) +
                         (place == dir ? "" : " (its parent " + place + ")"));
        return;
    }
    ::close(fd);
    ::unlink(probe.c_str());
}

/// The two directories' checks before anything is created (docs/mlperf-benchmark.md, "Running a CLOSED submission
/// with kvio"): each exists or its parent does (a CLOSED cache directory is on the storage under test, so a missing
/// tree of parents is a mistake, not something to create on the root filesystem), the results directory holds no
/// earlier CLOSED run (option_<O>/ or kvcache_run_summary_*.json: mlperf-check reads one run per directory), and the
/// two are on different filesystems (rule kvcachePosixCacheDir: their st_dev differ). Each must be writable (a probe
/// file created and removed in it, or in the parent it will be made in). The cache must not be backed by memory
/// (memory_backing: tmpfs, ramfs, zram, brd, or a loop device over a file on one; rule kvioCacheOnMemory) unless
/// `memory_cache_ok` (--test-memory-cache).
void check_closed_dirs(const std::string& cache_dir, const std::string& results_dir, bool memory_cache_ok,
                       std::vector<std::string>& errors) {
    const std::string cache_at = existing_place("--cache-dir", cache_dir, errors);
    const std::string results_at = existing_place("--results-dir", results_dir, errors);
    if (cache_at.empty() || results_at.empty()) return;
    check_writable("--cache-dir", cache_dir, cache_at, errors);
    check_writable("--results-dir", results_dir, results_at, errors);
    if (!errors.empty()) return;
    std::error_code ec;
    if (results_at == results_dir && fs::is_directory(results_dir, ec))
        for (const auto& e : fs::directory_iterator(results_dir, ec)) {
            const std::string name = e.path().filename().string();
            if ((name.rfind("option_", 0) == 0 && e.is_directory(ec)) || name.rfind("kvcache_run_summary_", 0) == 0) {
                errors.push_back("--results-dir " + results_dir + " already holds a CLOSED run (" + name +
                                 "): give each run its own results directory (rule kvcachePerClientIsolation: one "
                                 "output per client, "
                                 "trial and Option)");
                return;
            }
        }
    const std::string cd = path_st_dev(cache_at), rd = path_st_dev(results_at);
    if (cd == rd)
        errors.push_back("--cache-dir " + cache_dir + " and --results-dir " + results_dir +
                         " are on one filesystem (device " + cd +
                         "): CLOSED needs them on different filesystems (rule kvcachePosixCacheDir)");
    if (const std::string mem = memory_backing(filesystem_provenance(cache_at)); !mem.empty() && !memory_cache_ok)
        errors.push_back("--cache-dir " + cache_dir + " is backed by memory (" + mem +
                         "): a CLOSED run measures storage (rule kvioCacheOnMemory)");
}

/// The run's hold on its cache directory (docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio"): an
/// exclusive flock(2) on <cache-dir>/rank_<N>.lock for every rank this process runs (all of them with --num-clients,
/// its own under MPI), so two runs that would share a <cache-dir>/rank_<N>/ cannot both run (rule
/// kvcachePerClientIsolation). The lock file holds the holder's pid; it is removed at destruction while still locked.
class CacheLocks {
public:
    CacheLocks() = default;
    CacheLocks(const CacheLocks&) = delete;
    CacheLocks& operator=(const CacheLocks&) = delete;
    ~CacheLocks() {
        for (const auto& [path, fd] : held_) {
            ::unlink(path.c_str());  // while locked: a run waiting on this file sees it gone and makes a new one
            ::close(fd);
        }
    }

    /// Locks rank `rank`'s file in `cache_dir`; "" or the refusal.
    std::string lock(const std::string& cache_dir, int rank) {
        const std::string path = cache_dir + "/rank_" + std::to_string(rank) + ".lock";
        for (;;) {
            const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0) return "--cache-dir " + cache_dir + ": cannot create " + path + ": " + std::strerror(errno);
            if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
                const int err = errno;
                char pid[32] = {};
                const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
                ::close(fd);
                if (err != EWOULDBLOCK)
                    return "--cache-dir " + cache_dir + ": flock " + path + ": " + std::strerror(err);
                std::string holder = n > 0 ? std::string(pid, size_t(n)) : "?";
                while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
                return "--cache-dir " + cache_dir + " is in use by another CLOSED run (pid " + holder + " holds " +
                       path + "): each client needs a cache directory no other run uses (rule " +
                       "kvcachePerClientIsolation)";
            }
            struct stat held {
            }, named{};
            if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0 || held.st_ino != named.st_ino ||
                held.st_dev != named.st_dev) {
                ::close(fd);  // its holder removed it between our open and flock: lock the one there now
                continue;
            }
            const std::string me = std::to_string(::getpid()) + "\n";
            if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {}  // the pid is only a hint
            held_.emplace_back(path, fd);
            return "";
        }
    }

private:
    std::vector<std::pair<std::string, int>> held_;
};

}  // namespace

std::string system_name_error(const std::string& name, bool given) {
    if (!given) return "";
    if (name.empty()) return "--system-name: must not be empty";
    const size_t chars = size_t(std::count_if(name.begin(), name.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) & 0xc0) != 0x80;  // a UTF-8 continuation byte is no character
    }));
    if (chars > kMaxSystemNameChars)
        return "--system-name: " + std::to_string(chars) + " characters, at most " +
               std::to_string(kMaxSystemNameChars);
    for (const unsigned char ch : name) {
        if (ch == '/') return "--system-name: must not contain '/' (it may name a file or directory)";
        if (ch < 0x20 || ch == 0x7f) {
            char b[96];
            std::snprintf(b, sizeof b, "--system-name: must not contain control character 0x%02x", ch);
            return b;
        }
    }
    // "..", " ", "-": a name a reader cannot tell from none (ASCII letters and digits, or any non-ASCII character).
    if (std::none_of(name.begin(), name.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || (ch & 0x80) != 0; }))
        return "--system-name: '" + name + "' names no system: give at least one letter or digit";
    return "";
}

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
    if (o.test_memory_cache) add("a cache backed by memory allowed (--test-memory-cache)");
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
    if (std::string e = system_name_error(o.system_name, o.system_name_given); !e.empty()) errors.push_back(e);
    if (base.num_clients < 1) errors.push_back("--num-clients must be >= 1");
    if (base.mpi && std::find(o.given_flags.begin(), o.given_flags.end(), "--num-clients") != o.given_flags.end())
        errors.push_back(
            "--num-clients with --mpi: the MPI job's ranks are the clients, one per rank (rule "
            "kvcacheClientDefinition)");
    if (errors.empty()) check_closed_dirs(base.cache_dir, o.results_dir, o.test_memory_cache, errors);
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

/// Once nothing is refused: the cache directory created (one level), its rank locks taken (CacheLocks), then the
/// results directory created. Returns the refusal when another run holds a lock (the cache directory removed again
/// when this call made it: a refused run leaves no trace), else "".
std::string create_and_lock(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& ranks,
                            CacheLocks& locks) {
    const bool made = fs::create_directory(base.cache_dir);
    for (int r : ranks)
        if (std::string e = locks.lock(base.cache_dir, r); !e.empty()) {
            std::error_code ec;
            if (made) fs::remove(base.cache_dir, ec);
            return e;
        }
    fs::create_directory(o.results_dir);
    return "";
}

/// 0 .. n-1.
std::vector<int> all_ranks(int n) {
    std::vector<int> v;
    for (int r = 0; r < n; ++r) v.push_back(r);
    return v;
}

/// Removes a <cache-dir>/rank_<N>/ an earlier run left behind (killed before its trial ended: a plain run removes it
/// after each trial), once this run holds rank N's lock: the storage tier is sized from the free space, so a left-over
/// cache would shrink the first trial's tier (and fill its disk) without a word. Says what it removed on `progress`.
void remove_stale_rank_caches(const std::string& cache_dir, const std::vector<int>& ranks, std::ostream& progress) {
    for (int r : ranks) {
        const fs::path dir = fs::path(cache_dir) / ("rank_" + std::to_string(r));
        std::error_code ec;
        if (!fs::exists(dir, ec)) continue;
        uintmax_t bytes = 0, files = 0;
        for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            if (it->is_regular_file(ec)) bytes += it->file_size(ec), ++files;
        fs::remove_all(dir, ec);
        progress << "mlperf-closed: removed " << dir.string() << " (" << files << " file(s), " << bytes
                 << " bytes) left by an earlier run that did not end its trial"
                 << (ec ? ": " + ec.message() : std::string()) << "\n"
                 << std::flush;
    }
}

/// check_closed_run with the cache locks held in `locks` for the run.
std::vector<int> check_and_lock(const SimConfig& base, const ClosedRunOptions& o, CacheLocks& locks) {
    std::vector<int> options;
    const std::vector<std::string> errors = closed_run_errors(base, o, options);
    if (!errors.empty()) refuse(errors);
    std::vector<int> ranks;
    for (int n = 0; n < int(base.num_clients); ++n) ranks.push_back(n);
    if (std::string e = create_and_lock(base, o, ranks, locks); !e.empty()) refuse({e});
    return options;
}

/// Under MPI every rank checks its own host's directories, and a refusal on any rank refuses the run on every rank
/// before any directory is created (mpi_max_over_ranks): no rank starts a trial the others will not join. Each rank
/// then locks its own rank's file in its cache directory, and the ranks agree again.
std::vector<int> check_closed_run_mpi(const SimConfig& base, const ClosedRunOptions& o, const Topology& top,
                                      CacheLocks& locks) {
    std::vector<int> options;
    const std::vector<std::string> errors = closed_run_errors(base, o, options);
    const int refused = mpi_max_over_ranks(errors.empty() ? 0 : 1);
    if (!errors.empty()) refuse(errors);
    const std::string others = "mlperf-closed: rank " + std::to_string(top.rank) +
                               ": refused because another rank was (its reasons are printed by that rank)";
    if (refused) throw Error(others);
    const std::string lock_error = create_and_lock(base, o, {top.rank}, locks);
    if (mpi_max_over_ranks(lock_error.empty() ? 0 : 1)) {
        if (!lock_error.empty()) refuse({lock_error});
        throw Error(others);
    }
    return options;
}

/// The per-Option line of the console. An Option without any rank file says so instead of figures (its aggregate is
/// all zeros); one with some rank files missing says how many, as the summary's partial_failure does.
void print_option_line(std::ostream& progress, int option, const Json& a) {
    for (const auto& n : a.value("notes", Json::array()))
        progress << "mlperf-closed: option " << option << ": note: " << n.get<std::string>() << "\n";
    const size_t missing = a.value("missing_files", Json::array()).size();
    const size_t expected = size_t(std::max(0, a.value("rank_count", 0) * a.value("trial_count", 0)));
    if (missing && missing >= expected) {
        progress << "mlperf-closed: option " << option << ": no result: none of its " << expected
                 << " rank file(s) was written (first missing: " << a["missing_files"][0].get<std::string>() << ")\n"
                 << std::flush;
        return;
    }
    const Json excluded = a.value("stopped_trials_excluded", Json::array());
    std::string trials;
    for (const auto& t : excluded) trials += (trials.empty() ? "trial_" : ", trial_") + t.dump();
    if (a.value("scored_trial_count", 1) == 0) {
        if (!excluded.empty())
            progress << "mlperf-closed: option " << option << ": no scored trial: a stop signal ended " << trials
                     << " (not averaged; their figures are in per_trial)\n";
        if (a.value("valid", true) == false)
            progress << "mlperf-closed: option " << option
                     << ": no scored trial: INVALID: " << a.value("invalid_reason", std::string()) << "\n";
        progress << std::flush;
        return;
    }
    progress << "mlperf-closed: option " << option << ": " << option_figures(a) << "\n";
    if (!excluded.empty())
        progress << "mlperf-closed: option " << option << ": excluded from these figures: " << trials
                 << ", stopped by a signal (part of a trial; in per_trial)\n";
    if (missing)
        progress << "mlperf-closed: option " << option << ": PARTIAL: " << missing << " of " << expected
                 << " rank files missing (first: " << a["missing_files"][0].get<std::string>() << ")\n";
    if (a.value("valid", true) == false)
        progress << "mlperf-closed: option " << option << ": INVALID: " << a.value("invalid_reason", std::string())
                 << "\n";
    progress << std::flush;
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
    // A failed trial makes its Option's figures those of the complete trials alone: no valid submission.
    std::string invalid;
    for (const auto& [key, v] : opts.items())
        if (v.value("valid", true) == false)
            invalid += (invalid.empty() ? "" : "; ") + std::string("option ") + key + ": " +
                       v.value("invalid_reason", std::string());
    std::string why_not = signo ? "stopped by signal " + std::to_string(signo) : "";
    for (const std::string& w : {invalid, reason})
        if (!w.empty()) why_not += (why_not.empty() ? "" : "; ") + w;
    s["closed_submission"] = why_not.empty();
    if (!why_not.empty()) s["not_a_closed_submission"] = why_not;
    Json k;
    k["metadata"] = metadata_json(base, o, options, reason, top);
    // What ran, not what was asked: a run stopped after Option 1 ran [1] of [1, 2, 3] (options_planned).
    std::vector<int> ran;
    for (const auto& [key, v] : opts.items()) ran.push_back(std::stoi(key));
    k["metadata"]["options_run"] = ran;
    k["metadata"]["options_planned"] = options;
    k["metadata"]["started"] = started;
    k["metadata"]["finished"] = utc_iso();
    if (signo) k["metadata"]["stopped_by_signal"] = signo;
    if (signo || !invalid.empty()) {  // the metadata says what the summary says: a stopped or failed run is none
        k["metadata"]["closed_submission"] = false;
        k["metadata"]["not_a_closed_submission"] = s["not_a_closed_submission"];
    }
    prov["cache_dir"] = filesystem_provenance(base.cache_dir);
    prov["results_dir"] = filesystem_provenance(o.results_dir);
    k["provenance"] = prov;
    s["kvio"] = k;
    return s;
}

}  // namespace

Placement place_marked_file(const std::string& from, const std::string& to, const nlohmann::ordered_json& mark,
                            std::ostream& progress, const std::function<void(const nlohmann::ordered_json&)>& on_read,
                            std::string* why) {
    std::error_code ec;
    if (!fs::exists(from, ec)) return Placement::Absent;
    try {
        Json doc;
        {
            std::ifstream f(from);
            doc = Json::parse(f);
        }
        if (on_read) on_read(doc);
        doc["kvio"]["mlperf_closed"] = mark_stop(mark, doc);
        if (doc["kvio"].contains("config") && doc["kvio"]["config"].contains("flags"))
            doc["kvio"]["config"]["flags"]["output"] = to;
        write_text_file(to, doc.dump(4) + "\n");  // whole or absent (a temporary name, renamed)
        if (from != to) fs::remove(from, ec);
        return Placement::Placed;
    } catch (const std::exception& e) {
        // An unmarked file under either name would look like a result of the run (without the marks that say what
        // it is, naming the client's temporary name as its output): it goes, and the run fails naming it.
        fs::remove(from, ec);
        if (why) *why = to + ": not written: " + e.what();
        progress << "mlperf-closed: " << to << ": not written: " << e.what() << " (" << from
                 << " removed: results that cannot carry the run's marks are no result of it)\n"
                 << std::flush;
    }
    return Placement::Failed;
}

std::vector<int> check_closed_run(const SimConfig& base, const ClosedRunOptions& o) {
    CacheLocks locks;  // released at return: the run itself holds its own for its whole length
    return check_and_lock(base, o, locks);
}

namespace {

/// `dir` absolute and normalised ("./cache/" -> "/work/cache"): what metadata, provenance and rank files record.
std::string absolute_normal(const std::string& dir) {
    fs::path p = fs::absolute(dir).lexically_normal();
    if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();
    return p.string();
}

/// What the rank files of the Options in `opts` (the summary's options, with each trial_count) record of failed
/// storage operations (rank_storage_failures): how many are no valid trial, the first of them with why, and the
/// capacity refusals of the others.
struct RankFilesVerdict {
    int files = 0, invalid = 0;
    std::string first_invalid;           ///< "PATH: why"
    Json invalid_files = Json::array();  ///< each invalid one: {option, trial, rank, path, why}: the summary's
    uint64_t refusals = 0, refused_bytes = 0;
    double max_share = 0;  ///< the largest refused share of a trial's write bytes, 0..1
};

/// Why rank file `doc` (whose failures are `r`, invalid) is no valid trial: "E storage I/O error(s), first: ERROR",
/// the first error as kvio.cache records it (first_write_error, else first_read_error), or "X % of its write bytes
/// refused (more than 1 %)".
std::string invalid_why(const RankStorageFailures& r, const Json& doc) {
    char b[160];
    if (!(r.io_writes + r.io_reads)) {
        std::snprintf(b, sizeof b, "%.1f %% of its write bytes refused (more than 1 %%)", 100 * r.refused_share);
        return b;
    }
    std::snprintf(b, sizeof b, "%llu storage I/O error(s)", static_cast<unsigned long long>(r.io_writes + r.io_reads));
    const Json& kc = field_or_null(field_or_null(doc, "kvio"), "cache");
    const Json& first = field_or_null(kc, r.io_writes ? "first_write_error" : "first_read_error");
    return first.is_string() ? std::string(b) + ", first: " + first.get<std::string>() : std::string(b);
}

RankFilesVerdict judge_rank_files(const std::string& results_dir, const Json& opts, int ranks) {
    RankFilesVerdict v;
    for (const auto& [key, a] : opts.items())
        for (int t = 0; t < a.value("trial_count", 0); ++t)
            for (int n = 0; n < ranks; ++n)
                for (const auto& f : rank_result_files(results_dir + "/" + rank_dir_name(std::stoi(key), t, n))) {
                    Json doc;
                    try {
                        std::ifstream in(f);
                        doc = Json::parse(in);
                    } catch (const std::exception&) {
                        continue;  // not read: the Option's aggregate counts it missing
                    }
                    ++v.files;
                    const RankStorageFailures r = rank_storage_failures(doc);
                    if (r.invalid()) {
                        const std::string why = invalid_why(r, doc);
                        if (!v.invalid++) v.first_invalid = f + ": " + why;
                        v.invalid_files.push_back(
                            {{"option", std::stoi(key)}, {"trial", t}, {"rank", n}, {"path", f}, {"why", why}});
                    } else if (r.refusals) {
                        v.refusals += r.refusals;
                        v.refused_bytes += r.refused_bytes;
                        v.max_share = std::max(v.max_share, r.refused_share);
                    }
                }
    return v;
}

/// The run's last console line (docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio"): "mlperf-closed:
/// end: complete ...", "complete with N capacity refusals ...", "failed: ..." or "stopped by signal ...". Returns
/// whether the run is complete: not stopped, no `failure`, and every rank file a valid trial (rank_storage_failures).
bool print_end_line(std::ostream& progress, const RankFilesVerdict& v, int signo, const std::string& failure) {
    progress << "mlperf-closed: end: ";
    bool valid = false;
    if (signo) {
        progress << "stopped by signal " << signo << " (" << strsignal(signo) << "): not a complete run";
    } else if (!failure.empty()) {
        progress << "failed: " << failure << "; not a valid submission (failed trials are left out of the figures)";
    } else if (v.invalid) {
        progress << "failed: " << v.invalid << " of " << v.files
                 << " rank file(s) are not valid trials (first: " << v.first_invalid
                 << "); kvio mlperf-check names each";
    } else if (v.refusals) {
        char b[256];
        std::snprintf(b, sizeof b,
                      "complete with %llu capacity refusal(s) (%llu bytes in all; at most %.2f %% of a trial's write "
                      "bytes, within the 1 %% kvio mlperf-check allows)",
                      static_cast<unsigned long long>(v.refusals), static_cast<unsigned long long>(v.refused_bytes),
                      100 * v.max_share);
        progress << b;
        valid = true;
    } else {
        progress << "complete: " << v.files << " rank file(s), no failed storage operation";
        valid = true;
    }
    progress << "\n" << std::flush;
    return valid;
}

/// The run's id: its start time and 62 random bits (under MPI each rank draws and the ranks agree on the maximum, so
/// every rank marks its files with the same id).
std::string make_run_id(const std::string& stamp, bool mpi) {
    std::random_device rd;
    int hi = int(rd() & 0x7fffffff), lo = int(rd() & 0x7fffffff);
    if (mpi) hi = mpi_max_over_ranks(hi), lo = mpi_max_over_ranks(lo);
    char b[64];
    std::snprintf(b, sizeof b, "%s-%08x%08x", stamp.c_str(), unsigned(hi), unsigned(lo));
    return b;
}

/// Says on `progress`, per Option, when each rank's share of the cache filesystem is below the largest entry the
/// Option's ranks can write (sizing_warning): the run goes on (docs/mlperf-benchmark.md, "Sizing the cache filesystem
/// per rank": refusals are a problem only past 1 % of a trial's write bytes, which no check before the run can
/// know). `ranks` are the clients that share the filesystem: every client of --num-clients, or under MPI the ranks of
/// one host (warn_sizing_mpi).
void warn_sizing(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& options,
                 const std::vector<int>& ranks, std::ostream& progress) {
    std::vector<ClosedOption> rows;
    for (int n : options) rows.push_back(effective_option(n, o));
    const int clients = int(ranks.size());
    try {
        for (const OptionSizing& s : closed_sizing(base, rows, base.cache_dir, clients, ranks))
            progress << sizing_warning(s, clients);
    } catch (const std::exception& e) {
        progress << "mlperf-closed: WARNING: the cache filesystem's size per rank was not checked: " << e.what()
                 << "\n";
    }
    progress << std::flush;
}

/// warn_sizing under MPI: the ranks whose --cache-dir is one filesystem of one host share it (every rank's "HOST
/// ST_DEV" gathered, ranks_sharing; on one host that is run_mpi_client's count of the ranks its storage share is split
/// over), and the lowest of them says it once for all of them. Every rank calls it (a collective).
void warn_sizing_mpi(const SimConfig& base, const ClosedRunOptions& o, const std::vector<int>& options,
                     const Topology& top, std::ostream& progress) {
    const std::vector<std::string> keys = mpi_gather_strings(mpi_host_name() + " " + path_st_dev(base.cache_dir));
    const std::vector<int> sharing = ranks_sharing(keys, top.rank);
    if (sharing.front() == top.rank) warn_sizing(base, o, options, sharing, progress);
}

/// Writes the summary; a failure (a full results disk) is named on `progress` and gives "".
std::string write_summary(const std::string& results_dir, const std::string& stamp, const Json& s,
                          std::ostream& progress) {
    const std::string path = results_dir + "/kvcache_run_summary_" + stamp + ".json";
    try {
        write_text_file(path, s.dump(2) + "\n");
    } catch (const std::exception& e) {
        progress << "mlperf-closed: summary not written: " << e.what() << "\n" << std::flush;
        return "";
    }
    progress << "mlperf-closed: summary written to " << path << "\n" << std::flush;
    return path;
}

}  // namespace

ClosedRunResult run_mlperf_closed(const SimConfig& base_in, const ClosedRunOptions& o_in, std::ostream& progress,
                                  std::ostream* console_in) {
    // Before anything that takes a while (MPI's start-up, the binary's SHA-256) and before any client is forked: a
    // stop signal from the first moment stops the run cleanly. Its handler replaces SIG_IGN too (a shell starts a
    // background job `cmd &` with SIGINT ignored): a CLOSED run started from a script still stops on SIGINT.
    StopSignal stop;
    // Absolute and normalised from here on: the refusals, the metadata, provenance and rank files name them so.
    SimConfig base = base_in;
    ClosedRunOptions o = o_in;
    if (!base.cache_dir.empty()) base.cache_dir = absolute_normal(base.cache_dir);
    if (!o.results_dir.empty()) o.results_dir = absolute_normal(o.results_dir);
    std::optional<MpiScope> mpi;
    Topology top;
    std::vector<int> options;
    CacheLocks locks;
    if (base.mpi) {
        mpi.emplace();
        top.mpi = true;
        top.rank = mpi->rank();
        top.clients = mpi->size();
        options = check_closed_run_mpi(base, o, top, locks);
    } else {
        options = check_and_lock(base, o, locks);
        top.clients = int(base.num_clients);
    }
    base.num_clients = top.clients;
    std::ostream* console = top.leader() ? console_in : nullptr;  // rank 0 alone reports
    remove_stale_rank_caches(base.cache_dir, top.mpi ? std::vector<int>{top.rank} : all_ranks(top.clients), progress);
    const std::string reason = not_a_submission_reason(o);
    if (!reason.empty() && top.leader()) progress << "mlperf-closed: " << reason << "\n";
    const std::string started = utc_iso(), stamp = local_stamp();
    o.run_id = make_run_id(stamp, top.mpi);
    if (top.mpi)
        warn_sizing_mpi(base, o, options, top, progress);
    else
        warn_sizing(base, o, options, all_ranks(top.clients), progress);
    // Before the first trial: the binary's SHA-256 takes a second or more, and after a stop signal mpirun kills the
    // ranks soon after forwarding it: the summary must be quick to write by then.
    const Json prov = top.leader() ? Json(host_provenance(o.kvio_version)) : Json();
    ClosedRunResult res;
    Json opts = Json::object();
    int signo = stop.signo();
    if (top.mpi) signo = mpi_max_over_ranks(signo);
    bool failed = false, ended = false;
    Json trial_failures = Json::array();                 // each client that failed, for the summary
    std::string failure;                                 // the first trial that failed, for the end line
    std::string stopped_in = signo ? "the set-up" : "";  // where a stop signal ended the protocol, for the console
    for (size_t i = 0; i < options.size() && !signo && !ended; ++i) {
        const ClosedOption opt = effective_option(options[i], o);
        int trials_run = 0;
        for (int t = 0; t < kClosedTrials && !signo && !ended; ++t) {
            if (console)
                *console << "mlperf-closed: option " << opt.option << " (" << opt.name << ") trial " << t + 1 << "/"
                         << kClosedTrials << ": " << top.clients << " client(s), " << trial_seconds_of(o) << " s\n"
                         << std::flush;
            const TrialOutcome out = top.mpi ? run_trial_mpi(base, opt, t, o, reason, top, stop, progress)
                                             : run_trial(base, opt, t, o, reason, progress);
            ++trials_run;
            for (const Json& f : out.failures) {  // rank 0's list under MPI (the others' is empty)
                Json e = {{"option", opt.option}, {"trial", t}};
                e.update(f);
                trial_failures.push_back(e);
            }
            const int code = top.mpi ? out.code : std::max(out.code, stop.stopped() ? 128 + stop.signo() : 0);
            if (code == 130 || code == 143 || code == 129) signo = code - 128;
            if (signo && stopped_in.empty()) stopped_in = "option " + std::to_string(opt.option) + " " + trial_label(t);
            if (code != 0 && !signo) failed = true;
            if (out.failed_entirely && !signo) {
                std::string what = " produced no rank file";
                if (out.placed)
                    what = " failed (" + out.why +
                           (top.mpi ? std::string()
                                    : "; " + std::to_string(out.placed) + " of " + std::to_string(top.clients) +
                                          " rank files placed") +
                           ")";
                if (top.leader())
                    progress << "mlperf-closed: option " << opt.option << " " << trial_label(t) << what
                             << ": the protocol stops here\n"
                             << std::flush;
                if (failure.empty()) failure = "option " + std::to_string(opt.option) + " " + trial_label(t) + what;
                ended = true;
                failed = true;
            }
        }
        if (top.leader()) {
            opts[std::to_string(opt.option)] = aggregate_option(o.results_dir, opt.option, trials_run, top.clients);
            print_option_line(progress, opt.option, opts[std::to_string(opt.option)]);
        }
        if (i + 1 < options.size() && !signo && !ended) {
            if (top.leader())
                progress << "mlperf-closed: pausing " << pause_seconds_of(o) << " s before option " << options[i + 1]
                         << "\n"
                         << std::flush;
            if (console)
                *console << "mlperf-closed: pausing " << pause_seconds_of(o) << " s before option " << options[i + 1]
                         << "\n"
                         << std::flush;
            pause_between_options(pause_seconds_of(o), stop, signo, console);
            if (top.mpi) signo = mpi_max_over_ranks(signo);  // the pause ends together; a signal on one stops all
            if (signo && stopped_in.empty()) stopped_in = "the pause before option " + std::to_string(options[i + 1]);
        }
    }
    if (signo && top.leader())
        progress << "mlperf-closed: stopped by signal " << signo << " (" << strsignal(signo) << ") in " << stopped_in
                 << ": the summary holds what ran, closed_submission false"
                 << (stopped_in.rfind("option", 0) == 0 ? "; that trial's rank files say it was stopped" : "") << "\n"
                 << std::flush;
    if (!top.leader()) {        // rank 0 aggregates and writes the summary; the others wait for it before they exit
        mpi_max_over_ranks(0);  // (mpirun ends the whole job when one rank exits non-zero, e.g. 130 after a stop)
        res.exit_code = signo ? 128 + signo : failed ? 1 : 0;
        return res;
    }
    const RankFilesVerdict verdict = judge_rank_files(o.results_dir, opts, top.clients);
    Json s = summary_json(base, o, options, reason, top, opts, signo, stamp, started, prov);
    s["kvio"]["trial_failures"] = trial_failures;
    s["kvio"]["invalid_rank_files"] = verdict.invalid_files;
    const bool partial = s["partial_failure"].get<bool>();
    res.summary_path = write_summary(o.results_dir, stamp, s, progress);
    if (top.mpi) mpi_max_over_ranks(0);  // the summary is whole: the other ranks may exit
    if (failure.empty() && res.summary_path.empty()) failure = "the summary was not written";
    if (failure.empty() && partial) failure = "rank files are missing (partial_failure)";
    if (failure.empty() && failed) failure = "a trial failed (above)";
    for (const auto& [key, v] : opts.items())  // a trial left out that no client's exit said failed (0 requests)
        if (failure.empty() && v.value("valid", true) == false)
            failure = "option " + key + ": " + v.value("invalid_reason", std::string());
    const bool valid = print_end_line(progress, verdict, signo, failure);
    if (console) {
        for (int n : options)
            if (opts.contains(std::to_string(n)))
                print_option_headline(*console, effective_option(n, o), opts[std::to_string(n)]);
        *console << "mlperf-closed: "
                 << (res.summary_path.empty() ? "no summary written (stderr says why)" : "summary: " + res.summary_path)
                 << (valid ? "" : " (the run did not complete: stderr's end line says why)") << "\n"
                 << std::flush;
    }
    res.summary = std::move(s);
    res.exit_code = signo ? 128 + signo : valid ? 0 : 1;
    return res;
}

}  // namespace kvio::serving
