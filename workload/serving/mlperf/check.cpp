#include "workload/serving/mlperf/check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "workload/serving/mlperf/closed_rules.h"
#include "workload/serving/mlperf/provenance.h"

namespace kvio::serving {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

/// What the summary says the run was (mlpstorage's keys, kvio's metadata where present).
struct RunShape {
    std::string summary_path;
    Json summary = Json::object();
    std::vector<int> options;
    int trials = kClosedTrials;
    int ranks = 0;
    int64_t trial_seconds = 300;
    bool shortened = false;
    /// With CheckOptions::allow_shortened, the parameters kvio recorded per Option (kvio.metadata.option_parameters).
    Json recorded_parameters = Json::object();
};

std::string fmt(const Json& v) {
    if (v.is_number_float()) {
        char b[64];
        std::snprintf(b, sizeof b, "%.10g", v.get<double>());
        return b;
    }
    return v.dump();
}

bool same_number(const Json& a, const Json& b) {
    if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
    if (!a.is_number() || !b.is_number()) return a == b;
    const double x = a.get<double>(), y = b.get<double>();
    return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
}

std::vector<std::string> glob_summaries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("kvcache_run_summary", 0) == 0 && n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0)
            out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The highest rank_<N> + 1 seen under any option_*/trial_*/.
int ranks_on_disk(const std::string& dir) {
    int n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory() && name.rfind("rank_", 0) == 0 && it.depth() == 2) {
            try {
                n = std::max(n, std::stoi(name.substr(5)) + 1);
            } catch (const std::exception&) {}
        }
    }
    return n;
}

RunShape read_shape(const std::string& dir, const CheckOptions& o, CheckReport& rep) {
    RunShape s;
    const auto summaries = glob_summaries(dir);
    if (summaries.empty()) {
        rep.problems.push_back(dir +
                               ": no kvcache_run_summary*.json: the aggregates cannot be compared (rule "
                               "kvcacheHeadlineResult)");
    } else {
        s.summary_path = summaries.back();
        if (summaries.size() > 1)
            rep.notes.push_back(dir + ": " + std::to_string(summaries.size()) + " summaries; checked the newest, " +
                                s.summary_path);
        try {
            std::ifstream f(s.summary_path);
            s.summary = Json::parse(f);
        } catch (const std::exception& e) {
            rep.problems.push_back(s.summary_path + ": not valid JSON (" + e.what() + ")");
        }
    }
    const Json meta = s.summary.value("kvio", Json::object()).value("metadata", Json::object());
    s.shortened = s.summary.value("closed_submission", true) == false;
    if (s.shortened && !o.allow_shortened)
        rep.problems.push_back(s.summary_path + ": " +
                               s.summary.value("not_a_closed_submission", std::string("not a CLOSED submission")));
    if (s.shortened && o.allow_shortened && meta.contains("options_run"))
        s.options = meta["options_run"].get<std::vector<int>>();
    else
        s.options = {1, 2, 3};
    if (s.shortened && o.allow_shortened) {
        s.trial_seconds = meta.value("trial_seconds", int64_t(300));
        s.recorded_parameters = meta.value("option_parameters", Json::object());
    }
    s.trials = s.summary.value("trials_per_option", kClosedTrials);
    if (s.trials != kClosedTrials)
        rep.problems.push_back(s.summary_path + ": trials_per_option " + std::to_string(s.trials) +
                               ", CLOSED runs 3 (rule kvcacheClosedSequenceLocks)");
    s.ranks = s.summary.value("total_ranks", 0);
    if (s.ranks <= 0) s.ranks = ranks_on_disk(dir);
    return s;
}

/// The checks of one rank file: its seed, its recorded parameters and cache directory.
void check_rank_file(const std::string& path, const Json& doc, const ClosedOption& opt, int rank, const RunShape& s,
                     std::map<std::string, std::string>& cache_dirs, CheckReport& rep) {
    const int64_t want_seed = kClosedSeed + rank;
    const Json seed = doc.value("seed", Json(nullptr));
    if (!seed.is_number_integer() || seed.get<int64_t>() != want_seed)
        rep.problems.push_back(path + ": seed " + fmt(seed) + ", expected 42 + rank " + std::to_string(rank) + " = " +
                               std::to_string(want_seed) + " (rule kvcacheClosedSequenceLocks)");
    const Json flags = doc.value("kvio", Json::object()).value("config", Json::object()).value("flags", Json(nullptr));
    if (!flags.is_object()) {
        rep.notes.push_back(path +
                            ": the file records no parameters (not written by kvio): checked seed and "
                            "aggregates only");
        return;
    }
    const std::string key = std::to_string(opt.option);
    const Json want = s.recorded_parameters.contains(key) ? s.recorded_parameters[key]
                                                          : closed_option_parameters(opt, s.trial_seconds);
    for (const auto& [k, v] : want.items()) {
        const Json got = flags.value(k, Json(nullptr));
        if (!same_number(got, v))
            rep.problems.push_back(path + ": " + k + " " + fmt(got) + ", Option " + std::to_string(opt.option) +
                                   " requires " + fmt(v) + " (rule kvcacheFixedWorkloadPerOption)");
    }
    const Json cfg = flags.value("config", Json(nullptr));
    if (!cfg.is_null() && !(cfg.is_string() && cfg.get<std::string>().empty()))
        rep.problems.push_back(path + ": config " + fmt(cfg) +
                               ": --config is not permitted (rule "
                               "kvcacheClosedSequenceLocks)");
    if (flags.value("enable_autoscaling", false))
        rep.problems.push_back(path + ": enable_autoscaling true (rule kvcacheAutoscalingProhibited)");
    const Json cd = flags.value("cache_dir", Json(nullptr));
    if (cd.is_string() && !cd.get<std::string>().empty()) {
        auto [it, fresh] = cache_dirs.emplace(cd.get<std::string>(), path);
        if (!fresh)
            rep.problems.push_back(path + ": cache directory " + cd.get<std::string>() + " is also " + it->second +
                                   "'s (rule kvcachePerClientIsolation)");
    }
}

/// Every trial and rank file of one Option.
void check_option(const std::string& dir, const ClosedOption& opt, const RunShape& s, std::set<std::string>& cache_seen,
                  CheckReport& rep) {
    const std::string odir = dir + "/option_" + std::to_string(opt.option);
    if (!fs::is_directory(odir)) {
        rep.problems.push_back(odir +
                               ": missing: a CLOSED submission runs Options 1, 2 and 3 (rule "
                               "kvcacheFixedWorkloadPerOption)");
        return;
    }
    for (int t = 0; t < s.trials; ++t) {
        const std::string tdir = odir + "/trial_" + std::to_string(t);
        if (!fs::is_directory(tdir)) {
            rep.problems.push_back(tdir + ": missing trial (rule kvcacheClosedSequenceLocks: 3 trials)");
            continue;
        }
        std::map<std::string, std::string> cache_dirs;
        for (int n = 0; n < s.ranks; ++n) {
            const std::string rdir = dir + "/" + rank_dir_name(opt.option, t, n);
            const auto files = rank_result_files(rdir);
            if (files.empty()) {
                rep.problems.push_back(rdir + ": no kvcache_results_*.json: rank " + std::to_string(n) +
                                       " missing (rule kvcachePerClientIsolation)");
                continue;
            }
            if (files.size() > 1)
                rep.problems.push_back(rdir + ": " + std::to_string(files.size()) +
                                       " results files: one per rank and trial (rule kvcachePerClientIsolation)");
            ++rep.rank_files;
            Json doc;
            try {
                std::ifstream f(files.front());
                doc = Json::parse(f);
            } catch (const std::exception& e) {
                rep.problems.push_back(files.front() + ": not valid JSON (" + e.what() + ")");
                continue;
            }
            check_rank_file(files.front(), doc, opt, n, s, cache_dirs, rep);
        }
        for (const auto& [cd, file] : cache_dirs) cache_seen.insert(cd);
    }
}

/// The summary's aggregates against the rank files' (rules kvcacheAggregateBandwidth/Throughput/DeviceLatency).
void check_aggregates(const std::string& dir, const ClosedOption& opt, const RunShape& s, CheckReport& rep) {
    if (s.summary_path.empty()) return;
    const std::string key = std::to_string(opt.option);
    const Json opts = s.summary.value("options", Json::object());
    if (!opts.contains(key)) {
        rep.problems.push_back(s.summary_path + ": options[" + key + "] missing (rule kvcacheHeadlineResult)");
        return;
    }
    const Json& have = opts[key];
    const Json want = aggregate_option(dir, opt.option, s.trials, s.ranks);
    for (const char* k : aggregated_keys()) {
        if (!have.contains(k)) {
            rep.problems.push_back(s.summary_path + ": options[" + key + "]." + k + " missing");
            continue;
        }
        if (!same_number(have[k], want[k]))
            rep.problems.push_back(s.summary_path + ": options[" + key + "]." + k + " " + fmt(have[k]) +
                                   ", the rank files give " + fmt(want[k]) +
                                   " (rules kvcacheAggregateBandwidth, kvcacheAggregateDeviceLatency)");
    }
    if (have.value("rank_count", -1) != s.ranks)
        rep.problems.push_back(s.summary_path + ": options[" + key + "].rank_count " +
                               fmt(have.value("rank_count", Json(nullptr))) + ", total_ranks " +
                               std::to_string(s.ranks));
    const size_t cpu = want["cpu_tier_ranks"].size();
    if (cpu > 0 && cpu == size_t(s.trials) * size_t(s.ranks))
        rep.problems.push_back(dir + "/option_" + key +
                               ": every rank served its working set from the CPU tier "
                               "(storage_entries 0): no storage was measured (rule kvcacheLatencyValidity)");
}

/// Cache and results on one filesystem (rule kvcachePosixCacheDir): the summary's recorded st_dev, and each cache
/// directory the rank files name that still exists.
void check_filesystems(const std::string& dir, const RunShape& s, const std::set<std::string>& caches,
                       CheckReport& rep) {
    const Json prov = s.summary.value("kvio", Json::object()).value("provenance", Json::object());
    const std::string cd = prov.value("cache_dir", Json::object()).value("st_dev", std::string());
    const std::string rd = prov.value("results_dir", Json::object()).value("st_dev", std::string());
    if (!cd.empty() && cd == rd)
        rep.problems.push_back(s.summary_path + ": cache and results directories were on one filesystem (device " + cd +
                               ") (rule kvcachePosixCacheDir)");
    const std::string here = path_st_dev(dir);
    std::set<std::string> parents;
    for (const auto& c : caches) parents.insert(fs::path(c).parent_path().string());
    for (const auto& p : parents)
        if (fs::exists(p) && path_st_dev(p) == here)
            rep.problems.push_back(p + ": the cache directory is on the results directory's filesystem (device " +
                                   here + ") (rule kvcachePosixCacheDir)");
}

/// True when `dir` holds an option_<O>/ directory.
bool has_option_dir(const std::string& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().rfind("option_", 0) == 0 && e.is_directory(ec)) return true;
    return false;
}

/// mlpstorage's values for a key its CLOSED command line does not expose (mlpstorage_py/cli/kvcache_args.py's
/// set_defaults and defaults, docs/mlperf-benchmark.md, "mlpstorage's metadata file"): what its metadata records when
/// it records the command line instead of the Options. null: no default known.
Json mlpstorage_default(const std::string& key) {
    static const Json d = {{"model", "llama3.1-8b"}, {"num_users", 100},   {"duration", 60},
                           {"gpu_mem_gb", 16.0},     {"cpu_mem_gb", 32.0}, {"generation_mode", "realistic"}};
    return d.value(key, Json(nullptr));
}

std::vector<std::string> glob_metadata(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n.size() > 14 && n.compare(n.size() - 14, 14, "_metadata.json") == 0) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// One metadata file: each Option parameter it records (its `parameters` object, else its top level) against what
/// the Options ran. A key every Option runs with one value must record that value; a key the Options differ in
/// (model, num_users, cpu_mem_gb) cannot be one scalar. Either way, a value equal to mlpstorage's CLI default is named
/// as such: the metadata records the command line, not the run.
void check_metadata_file(const std::string& path, const RunShape& s, CheckReport& rep) {
    Json doc;
    try {
        std::ifstream f(path);
        doc = Json::parse(f);
    } catch (const std::exception& e) {
        rep.problems.push_back(path + ": not valid JSON (" + e.what() + ")");
        return;
    }
    if (!doc.is_object()) return rep.problems.push_back(path + ": not a JSON object");
    const bool nested = doc.contains("parameters") && doc["parameters"].is_object() && !doc["parameters"].empty();
    const Json& params = nested ? doc["parameters"] : doc;
    const std::string where = nested ? "parameters." : "";
    std::map<std::string, std::vector<Json>> ran;  // key -> the value of each Option run, in order
    for (int o_num : s.options) {
        const std::string k = std::to_string(o_num);
        const Json want = s.recorded_parameters.contains(k)
                              ? s.recorded_parameters[k]
                              : closed_option_parameters(closed_option(o_num), s.trial_seconds);
        for (const auto& [key, v] : want.items()) ran[key].push_back(v);
    }
    for (const auto& [key, values] : ran) {
        if (!params.contains(key)) continue;
        const Json& got = params[key];
        if (got.is_object() || got.is_array()) continue;  // per-Option records: not mlpstorage's shape, not judged
        const bool one_value =
            std::all_of(values.begin(), values.end(), [&](const Json& v) { return same_number(v, values.front()); });
        if (one_value && same_number(got, values.front())) continue;
        std::string line = path + ": " + where + key + " " + fmt(got);
        if (one_value) {
            line += ", every Option runs " + fmt(values.front());
        } else {
            line += " is one value for Options that run";
            for (size_t i = 0; i < values.size(); ++i)
                line += (i == 0 ? " " : i + 1 == values.size() ? " and " : ", ") + fmt(values[i]);
        }
        if (same_number(got, mlpstorage_default(key)))
            line += ": mlpstorage's CLI default, recorded instead of the Option values";
        rep.problems.push_back(line + " (rule kvcacheFixedWorkloadPerOption)");
    }
}

}  // namespace

CheckReport check_results_dir(const std::string& dir, const CheckOptions& o) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) throw UsageError(dir + ": No such file or directory");
    if (!fs::is_directory(dir, ec)) throw UsageError(dir + ": Not a directory");
    CheckReport rep;
    if (glob_summaries(dir).empty() && !has_option_dir(dir)) {
        rep.no_run = true;
        rep.problems.push_back(dir + ": no CLOSED run in it (no kvcache_run_summary_*.json, no option_<O>/)");
        return rep;
    }
    const RunShape s = read_shape(dir, o, rep);
    rep.options = int(s.options.size());
    rep.trials = s.trials;
    rep.ranks = s.ranks;
    if (s.ranks <= 0) {
        rep.problems.push_back(dir + ": no rank directories (option_<O>/trial_<T>/rank_<N>/) and no total_ranks");
        return rep;
    }
    std::set<std::string> caches;
    for (int o_num : s.options) {
        const ClosedOption& opt = closed_option(o_num);
        check_option(dir, opt, s, caches, rep);
        check_aggregates(dir, opt, s, rep);
    }
    check_filesystems(dir, s, caches, rep);
    for (const auto& m : glob_metadata(dir)) check_metadata_file(m, s, rep);
    return rep;
}

}  // namespace kvio::serving
