#include "workload/serving/mlperf/check.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "workload/serving/config.h"
#include "workload/serving/mlperf/closed_rules.h"
#include "workload/serving/mlperf/provenance.h"
#include "workload/serving/results/json_need.h"

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
    bool summary_unreadable = false;  ///< present but not a JSON object: its aggregates cannot be compared
    /// kvio's CLOSED run wrote the directory (its summary has kvio.metadata, or a rank file kvio.mlperf_closed): every
    /// rank file kvio wrote then carries kvio.mlperf_closed.
    bool kvio_marked = false;
    /// With CheckOptions::allow_shortened, the parameters kvio recorded per Option (kvio.metadata.option_parameters).
    Json recorded_parameters = Json::object();
    /// The run id the summary records (kvio.metadata.run_id), "" when it records none (no summary, an older kvio).
    std::string run_id;
    /// Each marked rank file and the run id it records (kvio.mlperf_closed.run_id; null when absent), filled as the
    /// rank files are checked, compared once all are read (check_run_ids).
    mutable std::vector<std::pair<std::string, Json>> rank_run_ids;
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

/// `j.<dotted path>` through objects only; null when any step is not an object or is missing.
const Json& at_path(const Json& j, std::initializer_list<const char*> keys) {
    const Json* v = &j;
    for (const char* k : keys) v = &field_or_null(*v, k);
    return *v;
}

/// An integer field of the summary, or `fallback` when it is absent; of another type, a problem naming the file,
/// field and `rule` and `fallback`.
int64_t int_field(const Json& doc, const char* key, int64_t fallback, const std::string& path, const char* rule,
                  CheckReport& rep) {
    const Json& v = field_or_null(doc, key);
    if (v.is_number_integer()) return v.get<int64_t>();
    if (doc.is_object() && doc.contains(key))
        rep.problems.push_back(path + ": " + key + " " + v.dump() + ": not an integer (rule " + rule + ")");
    return fallback;
}

/// The JSON document in `path`. Throws kvio::Error "PATH: cannot read: REASON", or "PATH:LINE:COLUMN: not valid JSON
/// (what is wrong)" with the line and column (both from 1) of the byte where the parser stopped.
Json parse_json_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(path + ": cannot read: " + std::strerror(errno));
    std::ostringstream buf;
    buf << f.rdbuf();
    const std::string text = buf.str();
    try {
        return Json::parse(text);
    } catch (const Json::parse_error& e) {
        // e.byte: 1-based index of the last byte read, the one the parser stopped at.
        const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at; ++i) {
            if (text[i] == '\n')
                ++line, column = 1;
            else
                ++column;
        }
        std::string why = e.what();
        if (const size_t k = why.find(": ", why.find("parse error")); k != std::string::npos) why = why.substr(k + 2);
        throw Error(path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": not valid JSON (" + why +
                    ")");
    } catch (const Json::exception& e) {  // parsed, but a value nlohmann cannot hold (1e400)
        throw Error(path + ": not valid JSON (" + e.what() + ")");
    }
}

/// A parsed JSON document, or a problem ("PATH:LINE:COLUMN: not valid JSON (...) (rule R)", "PATH: not a JSON object
/// (rule R)", R the rule that needs the file: `rule`) and null.
Json load_object(const std::string& path, const char* rule, CheckReport& rep) {
    Json doc;
    try {
        doc = parse_json_file(path);
    } catch (const std::exception& e) {
        rep.problems.push_back(std::string(e.what()) + " (rule " + rule + ")");
        return Json();
    }
    if (doc.is_object()) return doc;
    rep.problems.push_back(path + ": not a JSON object (" + std::string(doc.type_name()) + ") (rule " + rule + ")");
    return Json();
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

/// Whether any rank file under `dir` (option_<O>/trial_<T>/rank_<N>/kvcache_results_*.json) carries kvio.mlperf_closed.
bool any_rank_file_marked(const std::string& dir) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it.depth() != 3 || it->path().filename().string().rfind("kvcache_results_", 0) != 0) continue;
        try {
            if (at_path(parse_json_file(it->path().string()), {"kvio", "mlperf_closed"}).is_object()) return true;
        } catch (const std::exception&) {}
    }
    return false;
}

/// The value `count` holds most often with its count (the first in map order on a tie); {V{}, 0} when empty.
template <class V>
std::pair<V, int> most_common(const std::map<V, int>& count) {
    std::pair<V, int> best{V{}, 0};
    for (const auto& [v, n] : count)
        if (n > best.second) best = {v, n};
    return best;
}

/// The trial length the marked rank files record (kvio.config.flags.duration, s, each file's in `durations`): the
/// value most of them record. When they disagree that is a problem naming every file off that value (rule
/// kvcacheFixedWorkloadPerOption): one run has one trial length, so a file with another comes from another run or
/// was edited. 0 when no file records one.
int64_t agreed_trial_length(const std::string& dir, const std::map<std::string, int64_t>& durations, CheckReport& rep) {
    std::map<int64_t, int> count;
    for (const auto& [path, d] : durations) ++count[d];
    const auto [best, most] = most_common(count);
    if (count.size() <= 1) return best;
    std::string off;
    for (const auto& [path, d] : durations)
        if (d != best)
            off += (off.empty() ? "" : ", ") + fs::path(path).lexically_relative(dir).string() + " " +
                   std::to_string(d) + " s";
    rep.problems.push_back(dir + ": the rank files record " + std::to_string(count.size()) +
                           " trial lengths (kvio.config.flags.duration): " + std::to_string(most) + " of " +
                           std::to_string(durations.size()) + " record " + std::to_string(best) +
                           " s, taken as the run's; the others: " + off + " (rule kvcacheFixedWorkloadPerOption)");
    return best;
}

/// With --allow-shortened and no readable summary: what kvio recorded in the rank files themselves (each carries
/// kvio.mlperf_closed and its parameters in kvio.config.flags) says whether the run was shortened, its Options
/// (those with an option_<O>/), its trial length (agreed_trial_length over every marked rank file) and a CPU tier
/// --test-cpu-mem-gb changed; the parameters are then checked against those. A run whose rank files carry no such
/// mark is left as it is (checked as a CLOSED submission).
void shape_from_rank_files(const std::string& dir, RunShape& s, CheckReport& rep) {
    std::map<int, Json> flags_of;              // Option -> the flags of its first marked rank file
    std::map<std::string, int64_t> durations;  // every marked rank file -> its recorded duration
    for (int opt = 1; opt <= 3; ++opt) {
        const std::string odir = dir + "/option_" + std::to_string(opt);
        std::error_code ec;
        if (!fs::is_directory(odir, ec)) continue;
        for (const auto& t : fs::directory_iterator(odir, ec))
            for (const auto& r : fs::directory_iterator(t.path(), ec)) {
                const auto files = rank_result_files(r.path().string());
                if (files.empty()) continue;
                Json doc;
                try {
                    doc = parse_json_file(files.front());
                } catch (const std::exception&) {
                    continue;  // its own problem when the Option is checked
                }
                const Json& mark = at_path(doc, {"kvio", "mlperf_closed"});
                const Json& flags = at_path(doc, {"kvio", "config", "flags"});
                if (field_or_null(mark, "closed_submission") != false || !flags.is_object()) continue;
                flags_of.emplace(opt, flags);
                if (const Json& d = field_or_null(flags, "duration"); d.is_number_integer())
                    durations[files.front()] = d.get<int64_t>();
            }
    }
    if (flags_of.empty()) return;
    s.shortened = true;
    s.options.clear();
    for (const auto& [opt, flags] : flags_of) s.options.push_back(opt);
    if (const int64_t d = agreed_trial_length(dir, durations, rep); d > 0) s.trial_seconds = d;
    for (const auto& [opt, flags] : flags_of) {
        const ClosedOption& row = closed_option(opt);
        Json want = closed_option_parameters(row, s.trial_seconds);
        if (const Json& cpu = field_or_null(flags, "cpu_mem_gb");
            row.cpu_mem_gb > 0 && cpu.is_number() && cpu.get<double>() > 0)
            want["cpu_mem_gb"] = cpu;  // --test-cpu-mem-gb: the one parameter a shortened run changes
        s.recorded_parameters[std::to_string(opt)] = want;
    }
    rep.notes.push_back(dir +
                        ": no readable summary: the run's rank files say it is not a CLOSED submission; checked "
                        "against the trial length (" +
                        std::to_string(s.trial_seconds) + " s) and Options they record");
}

/// The summary's kvio.metadata.option_parameters (`params`) of a shortened run, the parameters its rank files are
/// checked against: each Option's must be Table KVCache-1's row with the recorded trial length, except the CPU tier of
/// an Option that has one when the summary says --test-cpu-mem-gb changed it. A value off that is a problem naming
/// the summary and the field (rule kvcacheFixedWorkloadPerOption), and the table's value is what the rank files are
/// then checked against: a damaged summary is not blamed on untouched rank files.
void check_recorded_parameters(RunShape& s, const Json& params, CheckReport& rep) {
    if (params.is_null()) return;
    const std::string where = s.summary_path + ": kvio.metadata.option_parameters";
    if (!params.is_object()) {
        rep.problems.push_back(where + " " + fmt(params) + ": not an object (rule kvcacheFixedWorkloadPerOption)");
        return;
    }
    const Json& why = field_or_null(s.summary, "not_a_closed_submission");
    const bool test_cpu = why.is_string() && why.get<std::string>().find("--test-cpu-mem-gb") != std::string::npos;
    for (const auto& [key, got] : params.items()) {
        int o = 0;
        try {
            o = std::stoi(key);
        } catch (const std::exception&) {}
        if (o < 1 || o > 3 || std::to_string(o) != key) {
            rep.problems.push_back(where + "." + key +
                                   ": no such Option (Options are 1, 2 and 3) (rule "
                                   "kvcacheFixedWorkloadPerOption)");
            continue;
        }
        const ClosedOption& row = closed_option(o);
        Json want = closed_option_parameters(row, s.trial_seconds);
        if (const Json& cpu = field_or_null(got, "cpu_mem_gb");
            test_cpu && row.cpu_mem_gb > 0 && cpu.is_number() && cpu.get<double>() > 0)
            want["cpu_mem_gb"] = cpu;  // --test-cpu-mem-gb: the one parameter a shortened run changes
        for (const auto& [k, v] : want.items())
            if (const Json& g = field_or_null(got, k.c_str()); !same_number(g, v))
                rep.problems.push_back(where + "." + key + "." + k + " " + fmt(g) + ", Option " + key + " runs " +
                                       fmt(v) + " (rule kvcacheFixedWorkloadPerOption)");
        s.recorded_parameters[key] = want;
    }
}

RunShape read_shape(const std::string& dir, const CheckOptions& o, CheckReport& rep) {
    RunShape s;
    const auto summaries = glob_summaries(dir);
    if (summaries.empty()) {
        rep.problems.push_back(dir +
                               ": no kvcache_run_summary*.json: the aggregates cannot be compared (rule "
                               "kvcacheHeadlineResult)");
    } else {
        // The newest (by name: kvcache_run_summary_<timestamp>) that parses; each that does not is a problem of its
        // own, and a broken newer one never hides the readable run beside it.
        for (auto it = summaries.rbegin(); it != summaries.rend() && s.summary.is_object() && s.summary.empty(); ++it) {
            s.summary_path = *it;
            s.summary = load_object(*it, "kvcacheHeadlineResult", rep);
            if (s.summary.is_null())
                s.summary = Json::object(), s.summary_unreadable = true;
            else
                s.summary_unreadable = false;
        }
        if (s.summary_unreadable) s.summary_path = summaries.back();
        if (summaries.size() > 1)
            rep.notes.push_back(dir + ": " + std::to_string(summaries.size()) + " summaries; checked " +
                                (s.summary_unreadable ? "none (none is readable)" : s.summary_path) +
                                ", the newest readable one");
    }
    const Json& meta = at_path(s.summary, {"kvio", "metadata"});
    s.shortened = field_or_null(s.summary, "closed_submission") == false;
    if (s.shortened && !o.allow_shortened) {
        const Json& why = field_or_null(s.summary, "not_a_closed_submission");
        rep.problems.push_back(s.summary_path + ": " +
                               (why.is_string() ? why.get<std::string>() : std::string("not a CLOSED submission")) +
                               " (rule kvcacheClosedImmutable)");
    }
    // A stop is never what --allow-shortened accepts: the run did not end. Its own line, under its own rule, with or
    // without --allow-shortened (the reason line above, without it, is about the run's marks).
    if (const Json& sig = field_or_null(meta, "stopped_by_signal"); !sig.is_null())
        rep.problems.push_back(s.summary_path + ": kvio.metadata.stopped_by_signal " + fmt(sig) +
                               ": the run was stopped before its end (rule kvcacheClosedSequenceLocks)");
    s.options = {1, 2, 3};
    if (s.shortened && o.allow_shortened) {
        // The Options the run was asked for (a stopped run ran fewer: options_run); older runs record options_run only.
        const Json& planned = field_or_null(meta, "options_planned");
        const Json& run = planned.is_null() ? field_or_null(meta, "options_run") : planned;
        const bool ints = run.is_array() && !run.empty() && std::all_of(run.begin(), run.end(), [](const Json& v) {
                              return v.is_number_integer() && v.get<int>() >= 1 && v.get<int>() <= 3;
                          });
        if (ints)
            s.options = run.get<std::vector<int>>();
        else if (!run.is_null())
            rep.problems.push_back(s.summary_path + ": kvio.metadata." +
                                   (planned.is_null() ? "options_run " : "options_planned ") + run.dump() +
                                   ": not a list of Options 1-3 (rule kvcacheHeadlineResult)");
        s.trial_seconds = int_field(meta, "trial_seconds", 300, s.summary_path + ": kvio.metadata",
                                    "kvcacheFixedWorkloadPerOption", rep);
        check_recorded_parameters(s, field_or_null(meta, "option_parameters"), rep);
    }
    if (const Json& sb = field_or_null(meta, "seed_base"); !sb.is_null() && sb != kClosedSeed)
        rep.problems.push_back(s.summary_path + ": kvio.metadata.seed_base " + fmt(sb) + ", CLOSED seeds rank N with " +
                               std::to_string(kClosedSeed) + " + N (rule kvcacheClosedSequenceLocks)");
    if (o.allow_shortened && (summaries.empty() || s.summary_unreadable)) shape_from_rank_files(dir, s, rep);
    s.kvio_marked = at_path(s.summary, {"kvio", "metadata"}).is_object() || any_rank_file_marked(dir);
    if (const Json& id = field_or_null(meta, "run_id"); id.is_string()) s.run_id = id.get<std::string>();
    s.trials = int(
        int_field(s.summary, "trials_per_option", kClosedTrials, s.summary_path, "kvcacheClosedSequenceLocks", rep));
    if (s.trials != kClosedTrials)
        rep.problems.push_back(s.summary_path + ": trials_per_option " + std::to_string(s.trials) +
                               ", CLOSED runs 3 (rule kvcacheClosedSequenceLocks)");
    s.trials = std::clamp(s.trials, 1, kClosedTrials);
    s.ranks = int(int_field(s.summary, "total_ranks", 0, s.summary_path, "kvcacheClientDefinition", rep));
    if (s.ranks <= 0) s.ranks = ranks_on_disk(dir);
    return s;
}

/// The figures of a rank file the aggregates are made of (aggregate_option): each present must be a number; a value
/// of another type would count as 0 in the sums.
void check_rank_figures(const std::string& path, const Json& doc, CheckReport& rep) {
    const Json& summary = field_or_null(doc, "summary");
    if (!summary.is_object()) {
        rep.problems.push_back(path + ": summary " + (doc.contains("summary") ? summary.dump() : "missing") +
                               ": not an object (rule kvcacheHeadlineResult)");
        return;
    }
    const Json& cs = field_or_null(summary, "cache_stats");
    if (!cs.is_null() && !cs.is_object())
        rep.problems.push_back(path + ": summary.cache_stats " + cs.dump() +
                               ": not an object (rule kvcacheHeadlineResult)");
    for (const char* k : {"avg_throughput_tokens_per_sec", "storage_throughput_tokens_per_sec"})
        if (const Json& v = field_or_null(summary, k); !v.is_null() && !v.is_number())
            rep.problems.push_back(path + ": summary." + k + " " + v.dump() +
                                   ": not a number (rule kvcacheHeadlineResult)");
    for (const char* k : {"tier_storage_read_bandwidth_gbps", "tier_storage_write_bandwidth_gbps",
                          "storage_read_device_p95_ms", "storage_write_device_p95_ms", "storage_entries"})
        if (const Json& v = field_or_null(cs, k); !v.is_null() && !v.is_number())
            rep.problems.push_back(path + ": summary.cache_stats." + k + " " + v.dump() +
                                   ": not a number (rule kvcacheHeadlineResult)");
}

/// A rank file whose client a signal stopped (kvio's `kvio.stop`, docs/simulate.md: `signal` its number, or 0 with a
/// `reason` "signal NAME to another client" when another rank's signal stopped it) measured part of a trial: it is not
/// one of the 3 scored trials, even in a shortened run. Returns whether it was stopped.
bool check_stopped_rank(const std::string& path, const Json& doc, CheckReport& rep) {
    const Json& stop = at_path(doc, {"kvio", "stop"});
    const Json& sig = field_or_null(stop, "signal");
    const Json& why = field_or_null(stop, "reason");
    const bool own = sig.is_number_integer() && sig.get<int64_t>() != 0;
    const bool other = why.is_string() && why.get<std::string>().rfind("signal ", 0) == 0;
    if (!own && !other) return false;
    ++rep.stopped_rank_files;
    std::string line = path + (own ? ": kvio.stop.signal " + fmt(sig) : std::string(": kvio.stop.reason"));
    if (why.is_string()) line += own ? " (" + why.get<std::string>() + ")" : " " + why.dump();
    if (const Json& at = field_or_null(stop, "stop_requested_at_s"); at.is_number()) {
        char b[64];
        std::snprintf(b, sizeof b, " %.1f s into the trial", at.get<double>());
        line += b;
    }
    rep.problems.push_back(line + ": a stopped trial is not a scored trial (rule kvcacheClosedSequenceLocks)");
    return true;
}

/// Failed storage operations a kvio rank file records (rank_storage_failures; docs/mlperf-benchmark.md, "Checking a
/// results directory: kvio mlperf-check"): I/O errors of a tier that had room (write_io_errors, failed_reads) are
/// always a problem (rule kvioStorageIoErrors); capacity refusals (entries no tier can hold) when their bytes pass
/// kMaxRefusedShare of the trial's write bytes (rule kvioCapacityRefusals). A file of a kvio that did not split the
/// kinds (no capacity_refusals) has its failed_writes counted as I/O errors.
void check_rank_failures(const std::string& path, const Json& doc, CheckReport& rep) {
    const RankStorageFailures f = rank_storage_failures(doc);
    if (!f.recorded) return;  // not written by kvio: nothing recorded to judge
    const Json& cache = at_path(doc, {"kvio", "cache"});
    if (f.io_writes + f.io_reads > 0) {
        std::string line = path + ": " + std::to_string(f.io_writes) + " storage write(s) and " +
                           std::to_string(f.io_reads) + " read(s) failed on a tier that had room (kvio.cache." +
                           (f.split ? "write_io_errors" : "failed_writes") + ", failed_reads)";
        for (const char* k : {"first_write_error", "first_read_error"})
            if (const Json& e = field_or_null(cache, k); e.is_string())
                line += "; " + std::string(k) + ": " + e.get<std::string>();
        rep.problems.push_back(line + " (rule kvioStorageIoErrors)");
    }
    if (f.refusals == 0 || f.refused_share <= kMaxRefusedShare) return;
    char b[96];
    std::snprintf(b, sizeof b, "%.1f %% of the trial's write bytes", 100 * f.refused_share);
    // capacity_refused_bytes is the sum over the refused entries, not an entry's size.
    const std::string bytes = std::to_string(f.refused_bytes) + " bytes";
    rep.problems.push_back(
        path + ": " + std::to_string(f.refusals) + " entr" +
        (f.refusals == 1 ? "y (" + bytes + ")" : "ies (" + bytes + " in all)") +
        " larger than any tier could hold, refused unwritten (kvio.cache.capacity_refusals, capacity_refused_bytes): " +
        b +
        ", more than 1 %: the cache filesystem is too small for the Option (rule "
        "kvioCapacityRefusals)");
}

/// One kind of parameter problem of an Option (a key, the value found, the value required) and the rank files that
/// have it: reported once, not once per file.
struct ParamMismatch {
    std::string key, got;
    std::string tail;  ///< what is required and the rule: ", Option 1 requires 300 (rule ...)"
    std::vector<std::string> files;
};
using ParamMismatches = std::map<std::string, ParamMismatch>;  ///< by key, value found and value required

/// One line per kind: the file itself when one file has it, else the Option's directory with the count and the files
/// (as option-relative trial_<T>/rank_<N>).
void report_param_mismatches(const std::string& odir, const ParamMismatches& m, CheckReport& rep) {
    for (const auto& [id, p] : m) {
        if (p.files.size() == 1) {
            rep.problems.push_back(p.files[0] + ": " + p.key + " " + p.got + p.tail);
            continue;
        }
        std::string where;
        for (const auto& f : p.files) {
            const fs::path rel = fs::path(f).lexically_relative(odir).parent_path();
            where += (where.empty() ? "" : ", ") + rel.string();
        }
        rep.problems.push_back(odir + ": " + p.key + " " + p.got + " in " + std::to_string(p.files.size()) +
                               " rank files (" + where + ")" + p.tail);
    }
}

/// The last `n` components of `p` ("option_1/trial_0/rank_0/kvcache_results_X.json" for 4).
std::string tail_of(const fs::path& p, int n) {
    std::vector<std::string> parts;
    for (const auto& c : p.lexically_normal()) parts.push_back(c.string());
    std::string out;
    for (size_t i = parts.size() > size_t(n) ? parts.size() - size_t(n) : 0; i < parts.size(); ++i)
        out += (out.empty() ? "" : "/") + parts[i];
    return out;
}

/// The marks kvio's CLOSED run puts in every rank file it places (docs/mlperf-benchmark.md, "Checking a results
/// directory: kvio mlperf-check"): kvio.mlperf_closed for this Option, trial and rank (its closed_submission agreeing
/// with the summary's, its run_id collected for check_run_ids), and kvio.config.flags.output naming the file itself,
/// not the client's temporary name. A file without them was moved into place unmarked (a full results disk) or comes
/// from another run; a `kvio` member, kvio.config or kvio.mlperf_closed that is not an object, and in a run kvio
/// marked a flags.output that is missing or null, are problems too (rule kvioRankFileMarks: kvio's name, the rules
/// have none for it).
void check_rank_marks(const std::string& path, const Json& doc, const ClosedOption& opt, int trial, int rank,
                      const RunShape& s, CheckReport& rep) {
    const std::string rule = " (rule kvioRankFileMarks)";
    if (doc.contains("kvio") && !doc["kvio"].is_object()) {
        rep.problems.push_back(path + ": kvio " + fmt(doc["kvio"]) + ": not an object: its marks and parameters " +
                               "cannot be read" + rule);
        return;
    }
    for (const char* k : {"config", "mlperf_closed"})
        if (const Json& v = at_path(doc, {"kvio", k}); !v.is_null() && !v.is_object()) {
            rep.problems.push_back(path + ": kvio." + k + " " + fmt(v) + ": not an object" + rule);
            return;
        }
    if (!at_path(doc, {"kvio", "config"}).is_object()) return;  // not written by kvio: nothing to compare
    const Json& mark = at_path(doc, {"kvio", "mlperf_closed"});
    if (s.kvio_marked && !mark.is_object())
        rep.problems.push_back(path +
                               ": no kvio.mlperf_closed: the CLOSED run did not mark this rank file (placed unmarked, "
                               "e.g. on a full results disk): not a result of the run" +
                               rule);
    if (mark.is_object()) {
        const std::vector<std::pair<const char*, int>> want = {
            {"option", opt.option}, {"trial", trial}, {"rank", rank}};
        for (const auto& [k, v] : want)
            if (const Json& got = field_or_null(mark, k); !got.is_number_integer() || got.get<int64_t>() != v)
                rep.problems.push_back(path + ": kvio.mlperf_closed." + k + " " + fmt(got) + ", the file is " + k +
                                       " " + std::to_string(v) + "'s" + rule);
        if (s.shortened && field_or_null(mark, "closed_submission") == true)
            rep.problems.push_back(path +
                                   ": kvio.mlperf_closed.closed_submission true, the summary says the run is not a "
                                   "CLOSED submission" +
                                   rule);
        s.rank_run_ids.emplace_back(path, field_or_null(mark, "run_id"));
    }
    const Json& flags = at_path(doc, {"kvio", "config", "flags"});
    if (!flags.is_null() && !flags.is_object()) {
        rep.problems.push_back(path + ": kvio.config.flags " + fmt(flags) + ": not an object" + rule);
        return;
    }
    const Json& out = field_or_null(flags, "output");
    if (out.is_string() && !out.get<std::string>().empty()) {
        if (tail_of(out.get<std::string>(), 4) != tail_of(path, 4))
            rep.problems.push_back(path + ": kvio.config.flags.output " + out.dump() +
                                   " is not this file: its results were written under another name and moved "
                                   "unmarked" +
                                   rule);
    } else if (s.kvio_marked && flags.is_object()) {
        rep.problems.push_back(path + ": kvio.config.flags.output " +
                               (flags.contains("output") ? fmt(out) : std::string("missing")) +
                               ": every rank file kvio's CLOSED run places names itself there" + rule);
    }
}

/// The run id of every marked rank file against the run's (docs/mlperf-benchmark.md, "Checking a results directory:
/// kvio mlperf-check"): the summary's kvio.metadata.run_id, or without one the id most rank files record. A file with
/// another id, or none where the run has one, is a rank file of another run swapped in (rule kvioRankFileMarks).
void check_run_ids(const RunShape& s, CheckReport& rep) {
    std::string run = s.run_id;
    const char* source = "the summary's";
    if (run.empty()) {
        std::map<std::string, int> count;
        for (const auto& [path, id] : s.rank_run_ids)
            if (id.is_string()) ++count[id.get<std::string>()];
        run = most_common(count).first;
        source = "the other rank files'";
    }
    if (run.empty()) return;  // no file records one: a run of an older kvio
    for (const auto& [path, id] : s.rank_run_ids)
        if (!id.is_string() || id.get<std::string>() != run)
            rep.problems.push_back(path + ": kvio.mlperf_closed.run_id " +
                                   (id.is_null() ? std::string("missing") : fmt(id)) + ", " + source + " is \"" + run +
                                   "\": a rank file of another run (rule kvioRankFileMarks)");
}

/// A rank file whose run was shorter than the trial: `summary.elapsed_time` (s, the benchmark's own clock from the
/// start of the measured run to its end, drain included, so at least the duration when the run ran it) below the
/// trial length `s.trial_seconds` less 1 % (at least 0.1 s) of slack. A file without elapsed_time is not judged.
/// Catches a result whose recorded flags were edited to the Option's values or that carries no kvio marks at all
/// (an mlpstorage result of a `--duration 30` run passed before).
void check_trial_length(const std::string& path, const Json& doc, const RunShape& s, CheckReport& rep) {
    const Json& e = at_path(doc, {"summary", "elapsed_time"});
    if (!e.is_number() || s.trial_seconds <= 0) return;
    const double want = double(s.trial_seconds), slack = std::max(0.1, 0.01 * want);
    if (e.get<double>() + slack >= want) return;
    char b[96];
    std::snprintf(b, sizeof b, "%.1f s", e.get<double>());
    rep.problems.push_back(path + ": summary.elapsed_time " + b + ": the run was shorter than the trial's " +
                           std::to_string(s.trial_seconds) + " s (rule kvcacheFixedWorkloadPerOption)");
}

/// Whether rank file `doc` ran a test-only shortened trial (`kvio simulate --mlperf-closed --trial-seconds`): its
/// kvio.mlperf_closed.not_a_closed_submission names --trial-seconds, or the run's recorded trial length (with
/// --allow-shortened: the summary's kvio.metadata.trial_seconds, or the rank files') is under the Options' 300 s.
bool shortened_trial(const Json& doc, const RunShape& s) {
    const Json& why = at_path(doc, {"kvio", "mlperf_closed", "not_a_closed_submission"});
    if (why.is_string() && why.get<std::string>().find("--trial-seconds") != std::string::npos) return true;
    return s.shortened && s.trial_seconds < closed_options()[0].duration_s;
}

/// A rank file that measured nothing (docs/mlperf-benchmark.md, "Checking a results directory: kvio mlperf-check"):
/// `requests_completed` 0 (rule kvcacheHeadlineResult: its figures are no measurement), else, where it records them,
/// 0 bytes read from storage (summary.cache_stats.tier_storage_kv_bytes_read_gb; every Option runs --gpu-mem-gb 0 and
/// reads its working set back from storage, rule kvcacheLatencyValidity). A problem, or a note when the trial was a
/// test-only shortened one (a 2 s trial may end before its first request does). A file recording neither is not
/// judged.
void check_measured_something(const std::string& path, const Json& doc, const RunShape& s, CheckReport& rep) {
    std::string what, rule;
    const Json& done = field_or_null(doc, "requests_completed");
    const Json& read = at_path(doc, {"summary", "cache_stats", "tier_storage_kv_bytes_read_gb"});
    if (done.is_number() && done.get<double>() == 0) {
        what = "requests_completed 0: the rank completed no request, it measured nothing";
        rule = "kvcacheHeadlineResult";
    } else if (read.is_number() && read.get<double>() == 0) {
        what = "summary.cache_stats.tier_storage_kv_bytes_read_gb 0 (storage_throughput_tokens_per_sec " +
               fmt(at_path(doc, {"summary", "storage_throughput_tokens_per_sec"})) +
               "): the rank read nothing back from storage, which every Option reads";
        rule = "kvcacheLatencyValidity";
    } else {
        return;
    }
    if (shortened_trial(doc, s))
        rep.notes.push_back(path + ": " + what + ", in a test-only shortened trial (--trial-seconds)");
    else
        rep.problems.push_back(path + ": " + what + " (rule " + rule + ")");
}

/// Whether two recorded flag values are the same setting: equal numbers (same_number), or both unset (null, as an older
/// kvio recorded an unset string, or "").
bool same_setting(const Json& a, const Json& b) {
    auto unset = [](const Json& v) { return v.is_null() || (v.is_string() && v.get<std::string>().empty()); };
    return (unset(a) && unset(b)) || same_number(a, b);
}

/// Every other flag a kvio rank file records (kvio.config.flags) against `kvio simulate`'s default
/// (config_to_json of a default SimConfig): a CLOSED run refuses each flag closed_refusals refuses, so a recorded
/// value off its default was set outside the protocol or edited in. Each becomes a mismatch whose line is that
/// refusal (its rule). Not compared: the Option parameters (`params`, checked against the Option), the flags
/// closed_refusals allows (the run sets them: cache_dir, num_clients, mpi, quiet, progress_interval, log_level, seed,
/// checked against 42 + rank on its own) and two values the run itself sets, docs/mlperf-benchmark.md, "Checking a
/// results directory: kvio mlperf-check": output (each rank's own file, kvioRankFileMarks) and storage_capacity_gb
/// (computed from the cache's free space).
void check_fixed_flags(const std::string& path, const Json& flags, const Json& params, ParamMismatches& mismatches) {
    static const Json defaults = config_to_json(SimConfig{})["flags"];
    for (const FlagSpec& f : flag_table()) {
        const std::string dest = flag_dest(f);
        if (params.contains(dest) || dest == "output" || dest == "storage_capacity_gb" || !flags.contains(dest))
            continue;
        const std::vector<std::string> refused = closed_refusals({f.name}, std::nullopt);
        if (refused.empty() || same_setting(flags[dest], field_or_null(defaults, dest.c_str()))) continue;
        ParamMismatch& m = mismatches[dest + '\n' + fmt(flags[dest])];
        m.key = dest;
        m.got = fmt(flags[dest]);
        m.tail = ", kvio simulate's default " + fmt(field_or_null(defaults, dest.c_str())) + ": " + refused.front();
        m.files.push_back(path);
    }
}

/// What a rank file of the Python benchmark (no kvio.config) records of flags a CLOSED run fixes: a throughput
/// timeline (written only with --enable-autoscaling, docs/mlperf-benchmark.md, "Metrics and the results JSON"; rule
/// kvcacheAutoscalingProhibited), entries in the GPU tier (every Option runs --gpu-mem-gb 0) or in the CPU tier where
/// the Option runs --cpu-mem-gb 0 (rule kvcacheFixedWorkloadPerOption).
void check_recorded_workload(const std::string& path, const Json& doc, const ClosedOption& opt, CheckReport& rep) {
    if (const Json& tl = field_or_null(doc, "throughput_timeline"); tl.is_array() && !tl.empty())
        rep.problems.push_back(path + ": throughput_timeline has " + std::to_string(tl.size()) +
                               " entries: the autoscaler ran (--enable-autoscaling) (rule "
                               "kvcacheAutoscalingProhibited)");
    const Json& cs = at_path(doc, {"summary", "cache_stats"});
    const std::pair<const char*, double> tiers[] = {{"gpu", opt.gpu_mem_gb}, {"cpu", opt.cpu_mem_gb}};
    for (const auto& [tier, gib] : tiers) {
        const Json& n = field_or_null(cs, (std::string(tier) + "_entries").c_str());
        if (gib == 0 && n.is_number() && n.get<double>() > 0)
            rep.problems.push_back(path + ": summary.cache_stats." + tier + "_entries " + fmt(n) + ", Option " +
                                   std::to_string(opt.option) + " runs --" + tier +
                                   "-mem-gb 0: the tier held entries (rule kvcacheFixedWorkloadPerOption)");
    }
}

/// The checks of one rank file: its seed, its recorded parameters (each differing one added to `mismatches`) and
/// cache directory.
void check_rank_file(const std::string& path, const Json& doc, const ClosedOption& opt, int trial, int rank,
                     const RunShape& s, std::map<std::string, std::string>& cache_dirs, ParamMismatches& mismatches,
                     CheckReport& rep) {
    const int64_t want_seed = kClosedSeed + rank;
    const Json& seed = field_or_null(doc, "seed");
    if (!seed.is_number_integer() || seed.get<int64_t>() != want_seed)
        rep.problems.push_back(path + ": seed " + fmt(seed) + ", expected 42 + rank " + std::to_string(rank) + " = " +
                               std::to_string(want_seed) + " (rule kvcacheClosedSequenceLocks)");
    const bool stopped = check_stopped_rank(path, doc, rep);
    if (at_path(doc, {"kvio", "mlperf_closed", "results_pending"}) == true) {
        rep.problems.push_back(
            path + ": written by rank " + std::to_string(rank) +
            " at the stop signal; the rank ended before its results replaced it (the launcher killed "
            "it): no figures (rule kvcacheClosedSequenceLocks)");
        return;
    }
    check_rank_figures(path, doc, rep);
    if (!stopped) check_trial_length(path, doc, s, rep);  // a stopped one is said above
    if (!stopped) check_measured_something(path, doc, s, rep);
    check_rank_failures(path, doc, rep);
    check_rank_marks(path, doc, opt, trial, rank, s, rep);
    const Json& flags = at_path(doc, {"kvio", "config", "flags"});
    if (!flags.is_object()) {
        rep.notes.push_back(path +
                            ": the file records no parameters (not written by kvio): checked its seed, what it "
                            "records of the tiers and the autoscaler, and the aggregates");
        check_recorded_workload(path, doc, opt, rep);
        return;
    }
    const std::string key = std::to_string(opt.option);
    const Json want = field_or_null(s.recorded_parameters, key.c_str()).is_object()
                          ? s.recorded_parameters[key]
                          : closed_option_parameters(opt, s.trial_seconds);
    for (const auto& [k, v] : want.items()) {
        const Json& got = field_or_null(flags, k.c_str());
        if (!same_number(got, v)) {
            ParamMismatch& m = mismatches[k + '\n' + fmt(got)];
            m.key = k;
            m.got = fmt(got);
            m.tail = ", Option " + std::to_string(opt.option) + " requires " + fmt(v) +
                     " (rule kvcacheFixedWorkloadPerOption)";
            m.files.push_back(path);
        }
    }
    check_fixed_flags(path, flags, want, mismatches);
    const Json& cd = field_or_null(flags, "cache_dir");
    if (cd.is_string() && !cd.get<std::string>().empty()) {
        auto [it, fresh] = cache_dirs.emplace(cd.get<std::string>(), path);
        if (!fresh)
            rep.problems.push_back(path + ": cache directory " + cd.get<std::string>() + " is also " + it->second +
                                   "'s (rule kvcachePerClientIsolation)");
    }
}

/// The `<prefix><N>` directories in `parent` whose N is not in [lo, hi) (or not a number), sorted.
std::vector<std::string> unexpected_dirs(const std::string& parent, const std::string& prefix, int lo, int hi) {
    std::error_code ec;
    std::vector<std::string> extra;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.rfind(prefix, 0) != 0 || !it->is_directory(ec)) continue;
        const std::string digits = n.substr(prefix.size());
        const bool number = !digits.empty() && digits.size() < 9 &&
                            std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!number || std::stoi(digits) < lo || std::stoi(digits) >= hi) extra.push_back(it->path().string());
    }
    std::sort(extra.begin(), extra.end());
    return extra;
}

/// A rank_<N>/ in `tdir` with N >= `ranks` (or not a number): the run had `ranks` clients, so it is not one of theirs.
void check_unexpected_ranks(const std::string& tdir, int ranks, CheckReport& rep) {
    for (const auto& p : unexpected_dirs(tdir, "rank_", 0, ranks))
        rep.problems.push_back(p + ": unexpected rank directory: the run had " + std::to_string(ranks) +
                               " clients (total_ranks) (rule kvcacheClientDefinition)");
}

/// Option and trial directories a CLOSED run never writes: option_<O>/ other than 1-3 in `dir`, trial_<T>/ other than
/// 0-2 in each Option's directory. Their files are no part of the run's figures, so they are named, not read.
void check_unexpected_options_and_trials(const std::string& dir, CheckReport& rep) {
    for (const auto& p : unexpected_dirs(dir, "option_", 1, 4))
        rep.problems.push_back(p + ": unexpected Option directory: CLOSED runs Options 1, 2 and 3 (rule " +
                               "kvcacheFixedWorkloadPerOption)");
    for (int o = 1; o <= 3; ++o)
        for (const auto& p : unexpected_dirs(dir + "/option_" + std::to_string(o), "trial_", 0, kClosedTrials))
            rep.problems.push_back(p + ": unexpected trial directory: CLOSED runs trials 0, 1 and 2 (rule " +
                                   "kvcacheClosedSequenceLocks)");
}

/// What a CLOSED run killed in a trial leaves in its trial directory `tdir` (docs/mlperf-benchmark.md, "Stopping an
/// MPI run"): each client's own results not yet moved into its rank directory (<output>.rank<N>.json beside the
/// trial's kvio_merged_results.json) and temporaries of files being written (NAME.tmp-PID, common/jsonl.h's
/// write_text_file), in the trial or a rank directory. Paths relative to `tdir`, sorted.
std::vector<std::string> leftover_files(const std::string& tdir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(tdir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() > 1 || !it->is_regular_file(ec)) continue;
        const std::string n = it->path().filename().string();
        const size_t r = n.rfind(".rank");
        const bool client =
            it.depth() == 0 && r != std::string::npos && n.size() > r + 10 &&
            n.compare(n.size() - 5, 5, ".json") == 0 &&
            std::all_of(n.begin() + long(r) + 5, n.end() - 5, [](char c) { return c >= '0' && c <= '9'; });
        if (client || n.find(".tmp-") != std::string::npos) out.push_back(it->path().lexically_relative(tdir).string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Every trial and rank file of one Option.
void check_option(const std::string& dir, const ClosedOption& opt, const RunShape& s, std::set<std::string>& cache_seen,
                  CheckReport& rep) {
    const std::string odir = dir + "/option_" + std::to_string(opt.option);
    if (fs::is_directory(odir)) ++rep.options_found;
    if (!fs::is_directory(odir)) {
        rep.problems.push_back(odir +
                               ": missing: a CLOSED submission runs Options 1, 2 and 3 (rule "
                               "kvcacheFixedWorkloadPerOption)");
        return;
    }
    ParamMismatches mismatches;
    // Every trial CLOSED runs, whatever the summary's trials_per_option says (its own line names a wrong count).
    for (int t = 0; t < kClosedTrials; ++t) {
        const std::string tdir = odir + "/trial_" + std::to_string(t);
        if (!fs::is_directory(tdir)) {
            rep.problems.push_back(tdir + ": missing trial (rule kvcacheClosedSequenceLocks: 3 trials)");
            continue;
        }
        check_unexpected_ranks(tdir, s.ranks, rep);
        const std::vector<std::string> left = leftover_files(tdir);
        if (!left.empty()) {
            std::string names;
            for (const auto& f : left) names += (names.empty() ? "" : ", ") + f;
            rep.problems.push_back(tdir + ": stopped: the run ended before this trial was complete (killed, e.g. " +
                                   "SIGKILL: files it was still writing or moving are left: " + names +
                                   "): an incomplete trial, not a submittable run (rule kvcacheClosedSequenceLocks)");
            ++rep.killed_trials;
        }
        std::map<std::string, std::string> cache_dirs;
        for (int n = 0; n < s.ranks; ++n) {
            const std::string rdir = dir + "/" + rank_dir_name(opt.option, t, n);
            const auto files = rank_result_files(rdir);
            if (files.empty()) {
                rep.problems.push_back(rdir + ": no kvcache_results_*.json: rank " + std::to_string(n) +
                                       (left.empty() ? std::string(" missing")
                                                     : " not placed: the run was stopped first (leftovers above)") +
                                       " (rule kvcachePerClientIsolation)");
                continue;
            }
            if (files.size() > 1)
                rep.problems.push_back(rdir + ": " + std::to_string(files.size()) +
                                       " results files: one per rank and trial (rule kvcachePerClientIsolation)");
            const Json doc = load_object(files.front(), "kvcachePerClientIsolation", rep);
            if (doc.is_null()) continue;  // not read: its own problem says why, and the count line leaves it out
            ++rep.rank_files;
            check_rank_file(files.front(), doc, opt, t, n, s, cache_dirs, mismatches, rep);
        }
        for (const auto& [cd, file] : cache_dirs) cache_seen.insert(cd);
    }
    report_param_mismatches(odir, mismatches, rep);
}

/// The rule that defines an aggregated figure (docs/mlperf-benchmark.md, "The CLOSED rules").
std::string aggregate_rule(const std::string& key) {
    if (key.find("bandwidth") != std::string::npos) return "kvcacheAggregateBandwidth";
    if (key.find("tokens") != std::string::npos) return "kvcacheAggregateThroughput";
    return "kvcacheAggregateDeviceLatency";
}

/// A summary's list of rank files or directories as paths under the results directory ("option_1/trial_0/rank_1/..."),
/// so that a results directory moved after the run still compares; sorted.
std::vector<std::string> relative_paths(const Json& list) {
    std::vector<std::string> out;
    if (!list.is_array()) return out;
    for (const auto& v : list) {
        const std::string p = v.is_string() ? v.get<std::string>() : v.dump();
        const size_t at = p.rfind("/option_");
        out.push_back(at == std::string::npos ? p : p.substr(at + 1));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The summary's lists of rank files (missing_files, cpu_tier_ranks, storage_unread_ranks) and its per_trial sums
/// against those made from the rank files; a key the summary lacks (an older kvio's) is not compared.
void check_lists_and_trials(const Json& have, const Json& want, const std::string& where, CheckReport& rep) {
    static const std::pair<const char*, const char*> kLists[] = {{"missing_files", "kvcacheHeadlineResult"},
                                                                 {"cpu_tier_ranks", "kvcacheLatencyValidity"},
                                                                 {"storage_unread_ranks", "kvcacheHeadlineResult"}};
    for (const auto& [k, rule] : kLists) {
        if (!have.contains(k)) continue;
        if (relative_paths(have[k]) != relative_paths(want[k]))
            rep.problems.push_back(where + "." + k + " " + have[k].dump() + ", the rank files give " + want[k].dump() +
                                   " (rule " + rule + ")");
    }
    const Json& pt = field_or_null(have, "per_trial");
    if (pt.is_null()) return;
    const Json& ref = want["per_trial"];
    if (!pt.is_array() || pt.size() != ref.size()) {
        rep.problems.push_back(where + ".per_trial " +
                               (pt.is_array() ? std::to_string(pt.size()) + " trials" : pt.dump()) +
                               ", the rank files give " + std::to_string(ref.size()) + " (rule kvcacheHeadlineResult)");
        return;
    }
    for (size_t t = 0; t < ref.size(); ++t)
        for (const auto& [k, v] : ref[t].items()) {
            if (k == "rank_files" && pt[t].is_object() && !pt[t].contains(k)) continue;  // a summary before the key
            const Json& h = field_or_null(pt[t], k.c_str());
            if (v.is_number() ? !same_number(h, v) : h != v)
                rep.problems.push_back(where + ".per_trial[" + std::to_string(t) + "]." + k + " " + fmt(h) +
                                       ", the rank files give " + fmt(v) + " (rule kvcacheHeadlineResult)");
        }
}

/// The summary's aggregates against the rank files' (rules kvcacheAggregateBandwidth/Throughput/DeviceLatency).
void check_aggregates(const std::string& dir, const ClosedOption& opt, const RunShape& s, CheckReport& rep) {
    if (s.summary_path.empty() || s.summary_unreadable) return;  // said once already, not once per Option
    const std::string key = std::to_string(opt.option);
    const Json& have = at_path(s.summary, {"options", key.c_str()});
    if (!have.is_object()) {
        rep.problems.push_back(s.summary_path + ": options[" + key + "] " +
                               (have.is_null() ? std::string("missing") : have.dump() + ": not an object") +
                               " (rule kvcacheHeadlineResult)");
        return;
    }
    // A run stopped by a signal aggregates the trials it ran (trial_count); the missing trial is its own problem.
    int trials = s.trials;
    if (const Json& tc = field_or_null(have, "trial_count"); tc.is_number_integer())
        trials = std::clamp(int(tc.get<int64_t>()), 1, s.trials);
    const Json want = aggregate_option(dir, opt.option, trials, s.ranks);
    for (const char* k : aggregated_keys()) {
        if (!have.contains(k)) {
            rep.problems.push_back(s.summary_path + ": options[" + key + "]." + k + " missing (rule " +
                                   aggregate_rule(k) + ")");
            continue;
        }
        if (!same_number(have[k], want[k]))
            rep.problems.push_back(s.summary_path + ": options[" + key + "]." + k + " " + fmt(have[k]) +
                                   ", the rank files give " + fmt(want[k]) + " (rule " + aggregate_rule(k) + ")");
    }
    check_lists_and_trials(have, want, s.summary_path + ": options[" + key + "]", rep);
    if (field_or_null(have, "rank_count") != s.ranks)
        rep.problems.push_back(s.summary_path + ": options[" + key + "].rank_count " +
                               fmt(field_or_null(have, "rank_count")) + ", total_ranks " + std::to_string(s.ranks) +
                               " (rule kvcacheHeadlineResult)");
    const size_t cpu = want["cpu_tier_ranks"].size();
    if (cpu > 0 && cpu == size_t(s.trials) * size_t(s.ranks))
        rep.problems.push_back(dir + "/option_" + key +
                               ": every rank served its working set from the CPU tier "
                               "(storage_entries 0): no storage was measured (rule kvcacheLatencyValidity)");
}

/// Whether the run recorded the test-only --test-memory-cache escape: the summary's not_a_closed_submission (top level
/// or kvio.metadata's) names it.
bool recorded_memory_cache_escape(const RunShape& s) {
    for (const Json* why : {&field_or_null(s.summary, "not_a_closed_submission"),
                            &at_path(s.summary, {"kvio", "metadata", "not_a_closed_submission"})})
        if (why->is_string() && why->get<std::string>().find("--test-memory-cache") != std::string::npos) return true;
    return false;
}

/// A cache the summary's provenance (kvio.provenance.cache_dir, filesystem_provenance's record) says memory backed
/// (memory_backing: tmpfs, ramfs, a zram or brd RAM disk, or a loop device over a file on one) measured memory, not
/// storage (rule kvioCacheOnMemory, kvio's name): a problem, or a note when the run recorded --test-memory-cache, the
/// test-only escape that allowed it. A record memory_backing cannot read (a field of another type) is a problem.
void check_cache_backing(const RunShape& s, const Json& cache_fs, CheckReport& rep) {
    std::string mem;
    try {
        mem = memory_backing(cache_fs);
    } catch (const std::exception& e) {
        rep.problems.push_back(s.summary_path + ": kvio.provenance.cache_dir: not a filesystem record (" + e.what() +
                               "): what backs the cache cannot be told (rule kvioCacheOnMemory)");
        return;
    }
    if (mem.empty()) return;
    const std::string line = s.summary_path + ": kvio.provenance.cache_dir: the cache was backed by memory (" + mem +
                             "), no storage was measured";
    if (recorded_memory_cache_escape(s))
        rep.notes.push_back(line + "; allowed by the test-only --test-memory-cache the run recorded");
    else
        rep.problems.push_back(line + " (rule kvioCacheOnMemory)");
}

/// Cache and results on one filesystem (rule kvcachePosixCacheDir): the summary's recorded st_dev, and each cache
/// directory the rank files name that still exists; and what backs the recorded cache (check_cache_backing).
void check_filesystems(const std::string& dir, const RunShape& s, const std::set<std::string>& caches,
                       CheckReport& rep) {
    const Json& prov = at_path(s.summary, {"kvio", "provenance"});
    const Json& cdj = at_path(prov, {"cache_dir", "st_dev"});
    const Json& rdj = at_path(prov, {"results_dir", "st_dev"});
    const std::string cd = cdj.is_string() ? cdj.get<std::string>() : "";
    const std::string rd = rdj.is_string() ? rdj.get<std::string>() : "";
    if (!cd.empty() && cd == rd)
        rep.problems.push_back(s.summary_path + ": cache and results directories were on one filesystem (device " + cd +
                               ") (rule kvcachePosixCacheDir)");
    check_cache_backing(s, field_or_null(prov, "cache_dir"), rep);
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
    const Json doc = load_object(path, "kvcacheFixedWorkloadPerOption", rep);
    if (doc.is_null()) return;
    const bool nested = doc.contains("parameters") && doc["parameters"].is_object() && !doc["parameters"].empty();
    const Json& params = nested ? doc["parameters"] : doc;
    const std::string where = nested ? "parameters." : "";
    std::map<std::string, std::vector<Json>> ran;  // key -> the value of each Option run, in order
    for (int o_num : s.options) {
        const std::string k = std::to_string(o_num);
        const Json want = field_or_null(s.recorded_parameters, k.c_str()).is_object()
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
        rep.problems.push_back(dir +
                               ": no CLOSED run in it (no kvcache_run_summary_*.json, no option_<O>/) (rule "
                               "kvcacheHeadlineResult)");
        return rep;
    }
    const RunShape s = read_shape(dir, o, rep);
    rep.options = int(s.options.size());
    rep.trials = s.trials;
    rep.ranks = s.ranks;
    if (s.ranks <= 0) {
        rep.problems.push_back(dir +
                               ": no rank directories (option_<O>/trial_<T>/rank_<N>/) and no total_ranks (rule "
                               "kvcacheClientDefinition)");
        return rep;
    }
    check_unexpected_options_and_trials(dir, rep);
    std::set<std::string> caches;
    for (int o_num : s.options) {
        const ClosedOption& opt = closed_option(o_num);
        check_option(dir, opt, s, caches, rep);
        check_aggregates(dir, opt, s, rep);
    }
    check_run_ids(s, rep);
    rep.stopped = rep.killed_trials > 0 || rep.stopped_rank_files > 0 ||
                  !field_or_null(at_path(s.summary, {"kvio", "metadata"}), "stopped_by_signal").is_null();
    if (rep.stopped && s.summary_path.empty())
        rep.problems.insert(rep.problems.begin(),
                            dir + ": a stopped run: " + std::to_string(rep.stopped_rank_files) +
                                " rank file(s) record a stop signal, " + std::to_string(rep.killed_trials) +
                                " trial(s) hold files left by a killed run, and no summary was written (the run or "
                                "its launcher was ended first): not a submittable run (rule "
                                "kvcacheClosedSequenceLocks)");
    check_filesystems(dir, s, caches, rep);
    for (const auto& m : glob_metadata(dir)) check_metadata_file(m, s, rep);
    return rep;
}

}  // namespace kvio::serving
