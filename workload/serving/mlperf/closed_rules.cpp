#include "workload/serving/mlperf/closed_rules.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/error.h"
#include "workload/serving/results/json_need.h"

namespace kvio::serving {

namespace {

using Json = nlohmann::ordered_json;

/// Which rule forbids a flag in CLOSED (docs/mlperf-benchmark.md, "The CLOSED rules").
std::string refusal_of(const std::string& flag) {
    static const std::map<std::string, std::string> option_param = {
        {"--model", "model"},
        {"--num-users", "num-users"},
        {"--duration", "duration"},
        {"--gpu-mem-gb", "gpu-mem-gb"},
        {"--cpu-mem-gb", "cpu-mem-gb"},
        {"--max-concurrent-allocs", "max-concurrent-allocs"},
        {"--generation-mode", "generation-mode"},
    };
    if (flag == "--config")
        return "--config is not permitted in a CLOSED run (rule kvcacheClosedSequenceLocks: seed 42, 3 trials, "
               "90 s between Options, no --config)";
    if (flag == "--enable-autoscaling" || flag == "--autoscaler-mode" || flag == "--target-saturation" ||
        flag == "--autoscaler-interval")
        return flag +
               " is not permitted in a CLOSED run (rule kvcacheAutoscalingProhibited: autoscaling must not be "
               "set)";
    if (option_param.count(flag))
        return flag +
               " is fixed by each Option in a CLOSED run (rule kvcacheFixedWorkloadPerOption: model, num-users, "
               "duration, gpu-mem-gb, cpu-mem-gb, max-concurrent-allocs and generation-mode are immutable)";
    if (flag == "--output")
        return "--output is not used in a CLOSED run: each rank writes option_<O>/trial_<T>/rank_<N>/ under "
               "--results-dir (rule kvcachePerClientIsolation)";
    return flag +
           " is not permitted in a CLOSED run (rule kvcacheClosedImmutable: only the cache directory, the "
           "results directory and the client topology may vary)";
}

double num(const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_number() ? it->get<double>() : 0.0;
}

double fmean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / double(v.size());
}

/// A rank file whose trial a stop signal ended: kvio.mlperf_closed.stopped, or kvio.stop with a signal (its own, or
/// "signal NAME to another client").
bool rank_file_stopped(const Json& doc) {
    const Json& k = field_or_null(doc, "kvio");
    if (field_or_null(field_or_null(k, "mlperf_closed"), "stopped") == true) return true;
    const Json& stop = field_or_null(k, "stop");
    const Json& sig = field_or_null(stop, "signal");
    const Json& why = field_or_null(stop, "reason");
    return (sig.is_number_integer() && sig.get<int64_t>() != 0) ||
           (why.is_string() && why.get<std::string>().rfind("signal ", 0) == 0);
}

/// The maximum of `v`, null when empty.
Json max_or_null(const std::vector<double>& v) {
    return v.empty() ? Json(nullptr) : Json(*std::max_element(v.begin(), v.end()));
}

/// The mean of `v`, null when empty.
Json mean_or_null(const std::vector<double>& v) { return v.empty() ? Json(nullptr) : Json(fmean(v)); }

}  // namespace

const std::vector<ClosedOption>& closed_options() {
    static const std::vector<ClosedOption> t = {
        {1, "Max Storage Stress", "llama3.1-8b", 200, 300, 0, 0, 16, "none"},
        {2, "Storage Throughput", "llama3.1-8b", 100, 300, 0, 4, 16, "none"},
        {3, "Large Model (70B)", "llama3.1-70b-instruct", 70, 300, 0, 0, 4, "none"},
    };
    return t;
}

const ClosedOption& closed_option(int o) {
    for (const auto& r : closed_options())
        if (r.option == o) return r;
    throw Error("mlperf-closed: no Option " + std::to_string(o) + " (Options are 1, 2 and 3)");
}

SimConfig closed_option_config(const SimConfig& base, const ClosedOption& o, int64_t duration_s) {
    SimConfig c = base;
    c.model = o.model;
    c.num_users = o.num_users;
    c.duration = duration_s;
    c.gpu_mem_gb = o.gpu_mem_gb;
    c.cpu_mem_gb = o.cpu_mem_gb;
    c.max_concurrent_allocs = o.max_concurrent_allocs;
    c.generation_mode = o.generation_mode;
    c.seed = kClosedSeed;
    c.config.clear();
    c.enable_autoscaling = false;
    return c;
}

namespace {
/// The flags a CLOSED run accepts besides --seed 42 (closed_refusals).
const std::vector<std::string>& closed_allowed_flags() {
    static const std::vector<std::string> allowed = {"--cache-dir", "--num-clients",       "--mpi",
                                                     "--quiet",     "--progress-interval", "--log-level"};
    return allowed;
}
}  // namespace

std::string closed_protocol_help() {
    char b[320];
    std::snprintf(b, sizeof b,
                  "MLPerf CLOSED protocol (--mlperf-closed; docs/mlperf-benchmark.md, \"Running a CLOSED submission "
                  "with kvio\"):\n  the Options in order, %d trials each, client N seeded %lld + N, %g s between "
                  "Options; one client per --num-clients N\n  (default 1), or per rank under mpirun -np N kvio "
                  "simulate --mpi; each client runs:\n",
                  kClosedTrials, static_cast<long long>(kClosedSeed), kClosedPauseS);
    std::string h = b;
    for (const ClosedOption& o : closed_options()) {
        std::snprintf(b, sizeof b,
                      "    Option %d (%s): --model %s --num-users %lld --duration %lld --gpu-mem-gb %g\n"
                      "      --cpu-mem-gb %g --max-concurrent-allocs %lld --generation-mode %s\n",
                      o.option, o.name, o.model, static_cast<long long>(o.num_users),
                      static_cast<long long>(o.duration_s), o.gpu_mem_gb, o.cpu_mem_gb,
                      static_cast<long long>(o.max_concurrent_allocs), o.generation_mode);
        h += b;
    }
    h +=
        "  Needs --cache-dir (the storage under test) and --results-dir (another filesystem, holding no earlier run).\n"
        "  Allowed besides:";
    for (const auto& f : closed_allowed_flags())
        if (f != "--cache-dir") h += " " + f;
    h += " --system-name NAME --seed " + std::to_string(kClosedSeed) +
         ".\n  Refused before anything runs, naming its rule (exit 1): any other flag (--config, another seed, an "
         "Option\n  parameter, --output, ...).\n"
         "  For tests, making the results say they are no CLOSED submission: --mlperf-option, --trial-seconds,\n"
         "  --pause-seconds, --test-cpu-mem-gb, --test-memory-cache (a cache backed by memory, refused otherwise).\n"
         "  Warns at its start when the cache filesystem is too small for an Option.\n"
         "  Ends with \"mlperf-closed: end: ...\": exit 0 complete, 1 failed or refused, 128 + signal when stopped\n"
         "  (SIGINT/SIGTERM: the summary of what ran is still written). kvio mlperf-check DIR checks the results.";
    return h;
}

std::vector<std::string> closed_refusals(const std::vector<std::string>& given, std::optional<int64_t> seed) {
    const std::vector<std::string>& allowed = closed_allowed_flags();
    std::vector<std::string> out;
    for (const auto& f : given) {
        if (std::find(allowed.begin(), allowed.end(), f) != allowed.end()) continue;
        if (f == "--seed") {
            if (seed && *seed != kClosedSeed)
                out.push_back("--seed " + std::to_string(*seed) +
                              ": a CLOSED run uses seed 42 (rule kvcacheClosedSequenceLocks)");
            continue;
        }
        out.push_back(refusal_of(f));
    }
    return out;
}

Json closed_option_parameters(const ClosedOption& o, int64_t duration_s) {
    Json j;
    j["model"] = o.model;
    j["num_users"] = o.num_users;
    j["duration"] = duration_s;
    j["gpu_mem_gb"] = o.gpu_mem_gb;
    j["cpu_mem_gb"] = o.cpu_mem_gb;
    j["max_concurrent_allocs"] = o.max_concurrent_allocs;
    j["generation_mode"] = o.generation_mode;
    return j;
}

std::string rank_dir_name(int option, int trial, int rank) {
    return "option_" + std::to_string(option) + "/trial_" + std::to_string(trial) + "/rank_" + std::to_string(rank);
}

std::vector<std::string> rank_result_files(const std::string& rank_dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(rank_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.rfind("kvcache_results_", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0)
            out.push_back(it->path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {
/// A count of `cache`, 0 when absent or not a non-negative integer.
uint64_t cache_count(const Json& cache, const char* key) {
    const Json& v = field_or_null(cache, key);
    return v.is_number_unsigned() ? v.get<uint64_t>() : 0;
}
}  // namespace

RankStorageFailures rank_storage_failures(const Json& doc) {
    RankStorageFailures f;
    const Json& cache = field_or_null(field_or_null(doc, "kvio"), "cache");
    if (!cache.is_object()) return f;
    f.recorded = true;
    f.split = cache.contains("capacity_refusals");
    f.io_writes = f.split ? cache_count(cache, "write_io_errors") : cache_count(cache, "failed_writes");
    f.io_reads = cache_count(cache, "failed_reads");
    f.refusals = cache_count(cache, "capacity_refusals");
    f.refused_bytes = cache_count(cache, "capacity_refused_bytes");
    const Json& written =
        field_or_null(field_or_null(field_or_null(doc, "summary"), "cache_stats"), "total_write_bytes");
    const double total = double(f.refused_bytes) + (written.is_number() ? written.get<double>() : 0.0);
    f.refused_share = total > 0 ? double(f.refused_bytes) / total : 1.0;
    return f;
}

const std::vector<const char*>& aggregated_keys() {
    static const std::vector<const char*> k = {
        "aggregated_read_bandwidth_gbps",
        "aggregated_write_bandwidth_gbps",
        "aggregated_avg_throughput_tokens_per_sec",
        "aggregated_storage_throughput_tokens_per_sec",
        "aggregated_device_read_p95_ms",
        "aggregated_device_write_p95_ms",
    };
    return k;
}

namespace {
/// One trial's rank files as aggregate_option reads them.
struct TrialFigures {
    double r = 0, w = 0, a = 0, s = 0, rp = 0, wp = 0;
    bool stopped = false;
    int read_files = 0;
    std::vector<std::string> failed;  ///< why the trial is no complete trial: "rank_1: no rank file", ...
    std::vector<int> no_requests;     ///< the ranks that completed 0 requests in a shortened trial (a note)
    int64_t seconds = 0;              ///< the trial's length (kvio.config.flags.duration), for the note
};

/// Whether rank file `doc` completed no request (`requests_completed` 0): its figures measure nothing. Files without
/// the key (not kvio's simulate) are not judged here.
bool completed_no_request(const Json& doc) {
    const Json& done = field_or_null(doc, "requests_completed");
    return done.is_number() && done.get<double>() == 0;
}

/// The trial length rank file `doc` ran (kvio.config.flags.duration, s), 0 when it does not say.
int64_t trial_seconds_of(const Json& doc) {
    const Json& d =
        field_or_null(field_or_null(field_or_null(field_or_null(doc, "kvio"), "config"), "flags"), "duration");
    return d.is_number_integer() ? d.get<int64_t>() : 0;
}

/// Reads trial `t`'s rank files into `f`, adding to the Option's lists (`missing`, `cpu_tier`, `unread`).
void read_trial(const std::string& results_dir, int option, int t, int ranks, TrialFigures& f, Json& missing,
                Json& cpu_tier, Json& unread) {
    for (int n = 0; n < ranks; ++n) {
        const std::string dir = results_dir + "/" + rank_dir_name(option, t, n);
        const std::string rank = "rank_" + std::to_string(n);
        const auto files = rank_result_files(dir);
        if (files.empty()) {
            missing.push_back(dir);
            f.failed.push_back(rank + ": no rank file");
            continue;
        }
        Json doc;
        try {
            std::ifstream in(files.front());
            doc = Json::parse(in);
        } catch (const std::exception&) {
            missing.push_back(files.front());
            f.failed.push_back(rank + ": its rank file is not JSON");
            continue;
        }
        f.stopped = f.stopped || rank_file_stopped(doc);
        ++f.read_files;
        if (const RankStorageFailures sf = rank_storage_failures(doc); sf.io_writes + sf.io_reads > 0)
            f.failed.push_back(rank + ": " + std::to_string(sf.io_writes + sf.io_reads) + " storage I/O error(s)");
        // A rank that completed no request measured nothing (docs/mlperf-benchmark.md, "A trial that measured
        // nothing"): in a trial of the rules' length a failed trial; in a shortened test trial a note.
        if (completed_no_request(doc)) {
            f.seconds = trial_seconds_of(doc);
            if (f.seconds > 0 && f.seconds < closed_options()[0].duration_s)
                f.no_requests.push_back(n);
            else
                f.failed.push_back(rank + ": 0 requests completed");
        }
        const Json& summary = field_or_null(doc, "summary");
        const Json& cs = field_or_null(summary, "cache_stats");
        auto zero = [&cs](const char* k) {
            auto e = cs.find(k);
            return e != cs.end() && e->is_number() && e->get<double>() == 0;
        };
        if (zero("storage_entries"))
            cpu_tier.push_back(files.front());
        else if (zero("tier_storage_kv_bytes_read_gb"))  // on storage, never read back (docs/mlperf-benchmark.md)
            unread.push_back(files.front());
        f.r += num(cs, "tier_storage_read_bandwidth_gbps");
        f.w += num(cs, "tier_storage_write_bandwidth_gbps");
        f.a += num(summary, "avg_throughput_tokens_per_sec");
        f.s += num(summary, "storage_throughput_tokens_per_sec");
        f.rp = std::max(f.rp, num(cs, "storage_read_device_p95_ms"));
        f.wp = std::max(f.wp, num(cs, "storage_write_device_p95_ms"));
    }
}
/// The summary's note for trial `t` whose ranks `f.no_requests` completed no request in a shortened trial.
std::string no_request_note(int t, const TrialFigures& f) {
    std::string ranks;
    for (int n : f.no_requests) ranks += (ranks.empty() ? "rank_" : ", rank_") + std::to_string(n);
    return "trial_" + std::to_string(t) + ": " + ranks + " completed 0 requests in its " + std::to_string(f.seconds) +
           " s trial (--trial-seconds): its figures measure no request; in a trial of " +
           std::to_string(closed_options()[0].duration_s) + " s that is a failed trial";
}
}  // namespace

Json aggregate_option(const std::string& results_dir, int option, int trials, int ranks) {
    std::vector<double> read_bw, write_bw, avg_tp, storage_tp, read_p95, write_p95;
    Json missing = Json::array(), cpu_tier = Json::array(), per_trial = Json::array(), stopped_trials = Json::array(),
         unread = Json::array(), failed_trials = Json::array(), notes = Json::array();
    for (int t = 0; t < trials; ++t) {
        TrialFigures f;
        read_trial(results_dir, option, t, ranks, f, missing, cpu_tier, unread);
        if (!f.no_requests.empty()) notes.push_back(no_request_note(t, f));
        per_trial.push_back({{"trial", t},
                             {"stopped", f.stopped},
                             {"rank_files", f.read_files},
                             {"read_bandwidth_gbps_sum", f.r},
                             {"write_bandwidth_gbps_sum", f.w},
                             {"storage_throughput_tokens_per_sec_sum", f.s},
                             {"device_read_p95_ms_max", f.rp},
                             {"device_write_p95_ms_max", f.wp}});
        if (f.stopped) {  // part of a trial: not a scored trial, kept out of the headline (per_trial still shows it)
            stopped_trials.push_back(t);
            continue;
        }
        if (!f.failed.empty()) {  // a failed trial: its sums would count a failed rank as zero, so none is scored
            std::string why;
            for (const auto& w : f.failed) why += (why.empty() ? "" : "; ") + w;
            failed_trials.push_back({{"trial", t}, {"why", why}});
            continue;
        }
        read_bw.push_back(f.r);
        write_bw.push_back(f.w);
        avg_tp.push_back(f.a);
        storage_tp.push_back(f.s);
        read_p95.push_back(f.rp);
        write_p95.push_back(f.wp);
    }
    Json j;
    j["option"] = option;
    j["aggregated_read_bandwidth_gbps"] = mean_or_null(read_bw);
    j["aggregated_write_bandwidth_gbps"] = mean_or_null(write_bw);
    j["aggregated_avg_throughput_tokens_per_sec"] = mean_or_null(avg_tp);
    j["aggregated_storage_throughput_tokens_per_sec"] = mean_or_null(storage_tp);
    j["aggregated_device_read_p95_ms"] = max_or_null(read_p95);
    j["aggregated_device_write_p95_ms"] = max_or_null(write_p95);
    j["rank_count"] = ranks;
    j["trial_count"] = trials;
    j["scored_trial_count"] = int(read_bw.size());
    j["stopped_trials_excluded"] = stopped_trials;
    j["failed_trials_excluded"] = failed_trials;
    j["valid"] = failed_trials.empty();
    if (!failed_trials.empty()) {
        const Json& first = failed_trials[0];
        j["invalid_reason"] =
            "trial_" + first["trial"].dump() + " failed (" + first["why"].get<std::string>() + ")" +
            (failed_trials.size() > 1 ? " and " + std::to_string(failed_trials.size() - 1) + " more trial(s)"
                                      : std::string()) +
            ": the figures cover only the " + std::to_string(read_bw.size()) +
            " complete trial(s); not a valid submission";
    }
    j["partial_failure"] = !missing.empty();
    j["missing_files"] = missing;
    j["cpu_tier_ranks"] = cpu_tier;
    j["storage_unread_ranks"] = unread;
    j["per_trial"] = per_trial;
    j["notes"] = notes;
    return j;
}

}  // namespace kvio::serving
