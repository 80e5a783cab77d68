#include "drives/summary.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string_view>

#include "drives/diagnosis.h"

namespace kvio::drives {

using nlohmann::json;

namespace {

std::vector<const RunResult*> ok_runs(const Target& t, const std::string& mode) {
    std::vector<const RunResult*> v;
    for (const auto& r : t.runs)
        if (r.mode == mode && r.ok) v.push_back(&r);
    return v;
}

Spread over(const std::vector<const RunResult*>& runs, const std::function<double(const RunResult&)>& f) {
    std::vector<double> v;
    for (auto* r : runs) v.push_back(f(*r));
    return spread_of(v);
}

const PhaseFigures& phase_of(const RunResult& r, size_t i) {
    return i < r.fio.phases.size() ? r.fio.phases[i] : r.fio.total;
}

json dir_json(const std::vector<const RunResult*>& runs, size_t phase, bool write) {
    auto d = [&](const RunResult& r) -> const DirFigures& {
        const PhaseFigures& p = phase == SIZE_MAX ? r.fio.total : phase_of(r, phase);
        return write ? p.write : p.read;
    };
    return {{"iops", spread_json(over(runs, [&](const RunResult& r) { return d(r).iops; }))},
            {"mb_s", spread_json(over(runs, [&](const RunResult& r) { return d(r).mb_s; }))},
            {"io_bytes", spread_json(over(runs, [&](const RunResult& r) { return double(d(r).io_bytes); }))},
            {"clat_p50_ns", spread_json(over(runs, [&](const RunResult& r) { return d(r).clat_p50; }))},
            {"clat_p90_ns", spread_json(over(runs, [&](const RunResult& r) { return d(r).clat_p90; }))},
            {"clat_p99_ns", spread_json(over(runs, [&](const RunResult& r) { return d(r).clat_p99; }))},
            {"clat_p999_ns", spread_json(over(runs, [&](const RunResult& r) { return d(r).clat_p999; }))}};
}

json device_json(const std::vector<const RunResult*>& runs) {
    json j = json::object();
    using F = double DeviceFigures::*;
    static const std::pair<const char*, F> kFields[] = {
        {"d2c_read_p50_ns", &DeviceFigures::d2c_read_p50},   {"d2c_read_p99_ns", &DeviceFigures::d2c_read_p99},
        {"d2c_read_p999_ns", &DeviceFigures::d2c_read_p999}, {"d2c_write_p50_ns", &DeviceFigures::d2c_write_p50},
        {"d2c_write_p99_ns", &DeviceFigures::d2c_write_p99}, {"d2c_write_p999_ns", &DeviceFigures::d2c_write_p999},
        {"q2d_read_p50_ns", &DeviceFigures::q2d_read_p50},   {"q2d_read_p99_ns", &DeviceFigures::q2d_read_p99},
        {"q2d_write_p50_ns", &DeviceFigures::q2d_write_p50}, {"q2d_write_p99_ns", &DeviceFigures::q2d_write_p99},
        {"qd_read_mean", &DeviceFigures::qd_read_mean},      {"qd_write_mean", &DeviceFigures::qd_write_mean},
        {"traced_share", &DeviceFigures::traced_share},
    };
    for (auto [k, f] : kFields) j[k] = spread_json(over(runs, [f](const RunResult& r) { return r.dev.*f; }));
    j["read_bytes"] = spread_json(over(runs, [](const RunResult& r) { return double(r.dev.read_bytes); }));
    j["write_bytes"] = spread_json(over(runs, [](const RunResult& r) { return double(r.dev.write_bytes); }));
    return j;
}

/// Medians of the run over the drive's own ceiling (probe): the busiest phase's read and write MB/s over the
/// sequential ceilings, its read IOPS over the 4 KiB random-read ceiling. Null where the probe did not measure.
json share_json(const Target& t, const std::vector<const RunResult*>& runs) {
    json s = json::object();
    auto share = [&](const char* key, double v) -> json {
        if (!t.ceiling.contains(key) || t.ceiling[key].get<double>() <= 0) return nullptr;
        return v / t.ceiling[key].get<double>();
    };
    if (!runs.empty() && runs.front()->mode == "simulate") {  // GiB/s over the probe's 10^6 B/s ceilings
        constexpr double kMBperGiB = 1073.741824;
        s["read_mb_s"] =
            share("seq_read_mb_s", over(runs, [](const RunResult& r) { return r.sim.read_gib_s; }).median * kMBperGiB);
        s["write_mb_s"] = share("seq_write_mb_s",
                                over(runs, [](const RunResult& r) { return r.sim.write_gib_s; }).median * kMBperGiB);
        s["read_iops"] = nullptr;
        return s;
    }
    auto best = [](const RunResult& r, auto f) {
        double b = 0;
        for (const auto& p : r.fio.phases) b = std::max(b, f(p));
        return b;
    };
    s["read_mb_s"] = share("seq_read_mb_s", over(runs, [&](const RunResult& r) {
                                                return best(r, [](const PhaseFigures& p) { return p.read.mb_s; });
                                            }).median);
    s["write_mb_s"] = share("seq_write_mb_s", over(runs, [&](const RunResult& r) {
                                                  return best(r, [](const PhaseFigures& p) { return p.write.mb_s; });
                                              }).median);
    s["read_iops"] = share("rand_read_4k_iops", over(runs, [&](const RunResult& r) {
                                                    return best(r, [](const PhaseFigures& p) { return p.read.iops; });
                                                }).median);
    return s;
}

/// The serving workload's figures (sim_workload.h SimFigures) under their results-JSON names.
const std::pair<const char*, double SimFigures::*> kSimFields[] = {
    {"storage_throughput_tokens_per_sec", &SimFigures::storage_tokens_per_s},
    {"avg_throughput_tokens_per_sec", &SimFigures::avg_tokens_per_s},
    {"storage_read_bandwidth_gib_s", &SimFigures::read_gib_s},
    {"storage_write_bandwidth_gib_s", &SimFigures::write_gib_s},
    {"storage_read_device_p95_ms", &SimFigures::read_device_p95_ms},
    {"storage_write_device_p95_ms", &SimFigures::write_device_p95_ms},
    {"storage_io_latency_p95_ms", &SimFigures::storage_io_p95_ms},
    {"storage_kv_read_gib", &SimFigures::read_gib},
    {"storage_kv_written_gib", &SimFigures::write_gib},
    {"requests_completed", &SimFigures::requests},
    {"storage_io_errors", &SimFigures::io_errors},
    {"capacity_refusals", &SimFigures::capacity_refusals},
    {"capacity_refused_bytes", &SimFigures::capacity_refused_bytes},
    {"elapsed_s", &SimFigures::elapsed_s},
};

json sim_json(const SimFigures& f) {
    json j = json::object();
    for (auto [k, m] : kSimFields) j[k] = f.*m;
    return j;
}

json sim_spread_json(const std::vector<const RunResult*>& runs) {
    json j = json::object();
    for (auto [k, m] : kSimFields) j[k] = spread_json(over(runs, [m](const RunResult& r) { return r.sim.*m; }));
    return j;
}

json round_json(const RunResult& r) {
    json j = {
        {"round", r.round}, {"ok", r.ok}, {"files", r.files}, {"start_unix_ms", r.start_ms}, {"end_unix_ms", r.end_ms}};
    if (!r.ok) j["error"] = r.error;
    if (!r.trace_error.empty()) j["trace_error"] = r.trace_error;
    if (!r.fio.host.empty()) j["host"] = r.fio.host;
    if (r.ok && r.mode == "simulate") {
        j["simulate"] = sim_json(r.sim);
        j["timeline"] = r.sim.timeline;
        return j;
    }
    if (r.ok) {
        j["mb_s"] = r.fio.total.read.mb_s + r.fio.total.write.mb_s;
        j["iops"] = r.fio.total.read.iops + r.fio.total.write.iops;
        j["read_io_bytes"] = r.fio.total.read.io_bytes;
        j["write_io_bytes"] = r.fio.total.write.io_bytes;
        j["read_ios"] = r.fio.total.read.ios;
        j["write_ios"] = r.fio.total.write.ios;
        j["read_clat_cdf"] = r.fio.total.read.clat_cdf;
        j["write_clat_cdf"] = r.fio.total.write.clat_cdf;
        if (!r.fio.bw_timeline.empty()) j["bw_timeline"] = r.fio.bw_timeline;
    }
    return j;
}

json mode_json(const Target& t, const std::string& mode) {
    auto runs = ok_runs(t, mode);
    json m = {{"rounds_ok", runs.size()}};
    json phases = json::array();
    if (!runs.empty()) {
        for (size_t i = 0; i < runs.front()->fio.phases.size(); ++i)
            phases.push_back({{"name", runs.front()->fio.phases[i].name},
                              {"read", dir_json(runs, i, false)},
                              {"write", dir_json(runs, i, true)}});
        phases.push_back(
            {{"name", "total"}, {"read", dir_json(runs, SIZE_MAX, false)}, {"write", dir_json(runs, SIZE_MAX, true)}});
    }
    m["phases"] = phases;
    if (mode == "simulate") m["simulate"] = runs.empty() ? json(nullptr) : sim_spread_json(runs);
    m["figure"] = spread_json(over(runs, verdict_figure));
    m["figure_name"] = mode == "simulate"               ? "storage_throughput_tokens_per_sec"
                       : verdict_higher_is_better(mode) ? "mb_s"
                                                        : "worst_clat_p99_ns";
    bool traced = !runs.empty() && std::all_of(runs.begin(), runs.end(), [](auto* r) { return r->dev.present; });
    m["device"] = traced ? device_json(runs) : json(nullptr);
    if (!traced) {
        std::string why = t.no_trace_reason;
        for (auto* r : runs)
            if (why.empty() && !r->trace_error.empty()) why = r->trace_error;
        m["device_missing"] = why.empty() ? "the trace saw no command on " + t.disk : why;
    }
    m["share_of_ceiling"] = share_json(t, runs);
    json rounds = json::array();
    for (const auto& r : t.runs)
        if (r.mode == mode) rounds.push_back(round_json(r));
    m["rounds"] = rounds;
    return m;
}

std::string fmt(double v, const char* f = "%.1f") {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string us(double ns) { return ns > 0 ? fmt(ns / 1000, "%.0f") : "-"; }

/// Whether every round moved exactly the bytes the job declares (read + write); null when the job does not say
/// (time_based, sizes in %, numjobs) or no round completed.
json io_bytes_equal(const Target& t, const std::string& mode, uint64_t job_bytes) {
    auto runs = ok_runs(t, mode);
    if (!job_bytes || runs.empty()) return nullptr;
    return std::all_of(runs.begin(), runs.end(), [&](const RunResult* r) {
        return r->fio.total.read.io_bytes + r->fio.total.write.io_bytes == job_bytes;
    });
}

/// Whether every round issued exactly the commands the job declares (read + write, fio's total_ios); null when the
/// job does not say or no round completed.
json ios_equal(const Target& t, const std::string& mode, uint64_t job_ios) {
    auto runs = ok_runs(t, mode);
    if (!job_ios || runs.empty()) return nullptr;
    return std::all_of(runs.begin(), runs.end(),
                       [&](const RunResult* r) { return r->fio.total.read.ios + r->fio.total.write.ios == job_ios; });
}

/// A closed loop's KV line for `t`: the object over the medians of its rounds' read and write rates (moving_rate).
KvLine kv_line_of(const Target& t, const std::string& mode, const KvObject& kv) {
    auto runs = ok_runs(t, mode);
    double rd = over(runs, [](const RunResult& r) { return moving_rate(r.fio, false); }).median;
    double wr = over(runs, [](const RunResult& r) { return moving_rate(r.fio, true); }).median;
    return kv_line(kv, rd, wr);
}

/// Whether `mode` of `t` gets a KV line: a closed loop (capacity; an open loop's bandwidth is the job's own rate)
/// with a KV object and a round that completed.
bool has_kv_line(const Target& t, const std::string& mode, const KvObject& kv) {
    return kv.bytes > 0 && mode == "closed" && !ok_runs(t, mode).empty();
}

}  // namespace

double verdict_figure(const RunResult& r) {
    if (r.mode == "simulate") return r.sim.storage_tokens_per_s;
    if (r.mode == "closed") return r.fio.total.read.mb_s + r.fio.total.write.mb_s;
    return std::max(r.fio.total.read.clat_p99, r.fio.total.write.clat_p99);
}

bool verdict_higher_is_better(const std::string& mode) { return mode == "closed" || mode == "simulate"; }

std::vector<Verdict> verdicts_for(const std::vector<Target>& targets, const std::string& mode) {
    std::vector<std::pair<std::string, Spread>> by;
    for (const auto& t : targets)
        if (t.failed.empty() && !ok_runs(t, mode).empty())
            by.emplace_back(t.spec.name, over(ok_runs(t, mode), verdict_figure));
    return rank_and_compare(by, verdict_higher_is_better(mode),
                            mode == "simulate" ? "storage tokens/s"
                            : mode == "closed" ? "MB/s"
                                               : "worst completion p99");
}

std::vector<std::pair<std::string, std::string>> left_out_of_verdicts(const std::vector<Target>& targets,
                                                                      const std::string& mode, int rounds) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& t : targets) {
        const size_t ok = ok_runs(t, mode).size();
        if (t.failed.empty() && ok > 0) continue;
        std::string why = t.spec.name + " left out of the ranking: " + (t.failed.empty() ? "" : "failed with ") +
                          std::to_string(ok) + " of " + std::to_string(rounds) + " rounds measured";
        if (!t.failed.empty()) why += " (" + t.failed + ")";
        out.emplace_back(t.spec.name, why);
    }
    return out;
}

json drives_json(const std::vector<Target>& targets, const RunContext& ctx) {
    json j = {{"schema", "kvio.drives/1"},
              {"kvio_version", ctx.kvio_version},
              {"fio_version", ctx.fio_version},
              {"kernel", ctx.kernel},
              {"job", ctx.job_path},
              {"rounds", ctx.rounds},
              {"modes", ctx.modes},
              {"keep_thinktime", ctx.keep_thinktime},
              {"trace_duty", ctx.trace_duty.empty() ? json(nullptr) : json(ctx.trace_duty)},
              {"started", ctx.started}};
    j["job_declared_bytes"] = ctx.job_bytes ? json(ctx.job_bytes) : json(nullptr);
    j["job_declared_ios"] = ctx.job_ios ? json(ctx.job_ios) : json(nullptr);
    j["stopped_by_signal"] = ctx.stopped_by_signal ? json(ctx.stopped_by_signal) : json(nullptr);
    json ts = json::array();
    for (const auto& t : targets) {
        json tj = {{"name", t.spec.name},
                   {"path", t.spec.path},
                   {"host", t.spec.host},
                   {"info", t.info},
                   {"ceiling", t.ceiling},
                   {"status", !t.failed.empty() ? "failed" : !t.interrupted.empty() ? "interrupted" : "ok"}};
        if (!t.failed.empty()) tj["error"] = t.failed;
        if (!t.interrupted.empty()) tj["interrupted"] = t.interrupted;
        for (const auto& m : ctx.modes) {
            tj["modes"][m] = mode_json(t, m);
            tj["modes"][m]["io_bytes_equal_job"] = io_bytes_equal(t, m, ctx.job_bytes);
            tj["modes"][m]["ios_equal_job"] = ios_equal(t, m, ctx.job_ios);
            const RunResult* dr = median_traced_round(t, m);
            tj["modes"][m]["diagnosis"] = diagnose::to_json(drive_findings(t, m))["findings"];
            tj["modes"][m]["diagnosis_round"] = dr ? json(dr->round) : json(nullptr);
            if (has_kv_line(t, m, ctx.kv)) {
                const KvLine l = kv_line_of(t, m, ctx.kv);
                tj["modes"][m]["kv"] = kv_line_json(l);
                tj["modes"][m]["kv"]["text"] = kv_line_text(t.spec.name, ctx.kv, l);
            }
        }
        ts.push_back(tj);
    }
    j["targets"] = ts;
    j["kv"] = ctx.kv.bytes ? json{{"label", ctx.kv.label},
                                  {"object_bytes", ctx.kv.bytes},
                                  {"user_objects_per_s", ctx.kv.user_objects_per_s}}
                           : json(nullptr);
    for (const auto& m : ctx.modes) {
        json vs = json::array();
        for (const auto& v : verdicts_for(targets, m))
            vs.push_back({{"a", v.a}, {"b", v.b}, {"pct", v.pct}, {"separated", v.separated}, {"text", v.text}});
        j["verdicts"][m] = vs;
        json left = json::array();
        for (const auto& [name, why] : left_out_of_verdicts(targets, m, ctx.rounds))
            left.push_back({{"name", name}, {"text", why}});
        j["left_out_of_verdicts"][m] = left;
    }
    return j;
}

namespace {

/// The device's and the ceiling's cells of a row: D2C read and write p99 (µs), mean QD, the best share of ceiling.
std::string device_cells(const Target& t, const std::vector<const RunResult*>& runs) {
    double dr = over(runs, [](const RunResult& r) { return r.dev.d2c_read_p99; }).median;
    double dw = over(runs, [](const RunResult& r) { return r.dev.d2c_write_p99; }).median;
    double qd = over(runs, [](const RunResult& r) { return std::max(r.dev.qd_read_mean, r.dev.qd_write_mean); }).median;
    double best_share = 0;
    const json sh = share_json(t, runs);  // items() of a temporary would dangle
    for (auto& [k, v] : sh.items())
        if (v.is_number()) best_share = std::max(best_share, v.get<double>());
    char c[128];
    std::snprintf(c, sizeof c, " %10s %10s %6s %6s", us(dr).c_str(), us(dw).c_str(), qd > 0 ? fmt(qd).c_str() : "-",
                  best_share > 0 ? fmt(best_share * 100, "%.0f").c_str() : "-");
    return c;
}

std::string spread_cell(const Spread& s) { return fmt(s.median) + " [" + fmt(s.min) + "-" + fmt(s.max) + "]"; }

/// A fio run's row: the verdict figure (closed loop: MB/s; open loop: the worse direction's completion p99 per
/// round, in µs, so the verdict can be checked against its own column), IOPS, completion p99 per direction (µs).
std::string fio_row(const Target& t, const std::vector<const RunResult*>& runs, const std::string& mode) {
    Spread mb = over(runs, [](const RunResult& r) { return r.fio.total.read.mb_s + r.fio.total.write.mb_s; });
    if (mode == "trace") {
        mb = over(runs, verdict_figure);
        mb.min /= 1000, mb.median /= 1000, mb.max /= 1000;  // ns -> µs
    }
    double iops = over(runs, [](const RunResult& r) { return r.fio.total.read.iops + r.fio.total.write.iops; }).median;
    double rp = over(runs, [](const RunResult& r) { return r.fio.total.read.clat_p99; }).median;
    double wp = over(runs, [](const RunResult& r) { return r.fio.total.write.clat_p99; }).median;
    char row[320];
    std::snprintf(row, sizeof row, "%-12s %-24s %10.0f %10s %10s", t.spec.name.c_str(), spread_cell(mb).c_str(), iops,
                  us(rp).c_str(), us(wp).c_str());
    return row + device_cells(t, runs) + "\n";
}

/// A simulate run's row: storage tokens/s (the verdict figure), storage read and write GiB/s, device P95 per
/// direction (ms), as the benchmark reports them.
std::string sim_row(const Target& t, const std::vector<const RunResult*>& runs) {
    auto med = [&](double SimFigures::*m) { return over(runs, [m](const RunResult& r) { return r.sim.*m; }).median; };
    Spread tok = over(runs, [](const RunResult& r) { return r.sim.storage_tokens_per_s; });
    char row[320];
    std::snprintf(row, sizeof row, "%-12s %-24s %8.3f %8.3f %9.2f %9.2f", t.spec.name.c_str(), spread_cell(tok).c_str(),
                  med(&SimFigures::read_gib_s), med(&SimFigures::write_gib_s), med(&SimFigures::read_device_p95_ms),
                  med(&SimFigures::write_device_p95_ms));
    return row + device_cells(t, runs) + "\n";
}

const char* mode_title(const std::string& mode) {
    return mode == "closed"     ? "closed loop (capacity)"
           : mode == "simulate" ? "the serving workload (kvio simulate)"
                                : "open loop at the job's rates";
}

}  // namespace

std::string ceiling_line(const Target& t) {
    const json& c = t.ceiling;
    if (c.contains("error")) return "probe " + t.spec.name + " failed: " + c["error"].get<std::string>();
    auto num = [&](const char* k) { return c.contains(k) && c[k].is_number() ? c[k].get<double>() : 0.0; };
    const double mib = num("bytes") / (1 << 20);
    return "probe " + t.spec.name + ": sequential read " + fmt(num("seq_read_mb_s")) + " MB/s, write " +
           fmt(num("seq_write_mb_s")) + " MB/s; 4 KiB random read " + fmt(num("rand_read_4k_iops"), "%.0f") +
           " IOPS (3 x " + fmt(num("seconds"), "%g") + " s over " + fmt(mib, "%.0f") + " MiB)";
}

void print_table(std::ostream& out, const std::vector<Target>& targets, const RunContext& ctx) {
    for (const auto& mode : ctx.modes) {
        out << "\n== " << mode_title(mode) << ", " << ctx.rounds << (ctx.rounds == 1 ? " round" : " rounds")
            << ": median [min-max]\n";
        char h[256];
        if (mode == "simulate")
            std::snprintf(h, sizeof h, "%-12s %-24s %8s %8s %9s %9s %10s %10s %6s %6s\n", "DRIVE", "storage_tok/s",
                          "rd_GiB/s", "wr_GiB/s", "rd_p95ms", "wr_p95ms", "d2c_r99us", "d2c_w99us", "QD", "ceil%");
        else
            std::snprintf(h, sizeof h, "%-12s %-24s %10s %10s %10s %10s %10s %6s %6s\n", "DRIVE",
                          mode == "trace" ? "worst_p99us" : "MB/s", "IOPS", "rd_p99us", "wr_p99us", "d2c_r99us",
                          "d2c_w99us", "QD", "ceil%");
        out << h;
        for (const auto& t : targets) {
            auto runs = ok_runs(t, mode);
            if (runs.empty()) {
                if (!t.failed.empty()) out << t.spec.name << "   FAILED: " << t.failed << "\n";
                if (!t.interrupted.empty()) out << t.spec.name << "   INTERRUPTED: " << t.interrupted << "\n";
                continue;
            }
            out << (mode == "simulate" ? sim_row(t, runs) : fio_row(t, runs, mode));
            if (!t.failed.empty()) out << "  (" << t.spec.name << " FAILED: " << t.failed << ")\n";
        }
        for (const auto& v : verdicts_for(targets, mode)) out << "verdict: " << v.text << "\n";
        for (const auto& l : left_out_of_verdicts(targets, mode, ctx.rounds)) out << "verdict: " << l.second << "\n";
        bool kv_head = false;
        for (const auto& t : targets)
            if (has_kv_line(t, mode, ctx.kv)) {
                if (!kv_head) out << "KV object: " << ctx.kv.label << " (at each drive's measured read/write mix)\n";
                kv_head = true;
                out << kv_line_text(t.spec.name, ctx.kv, kv_line_of(t, mode, ctx.kv)) << "\n";
            }
        for (const auto& t : targets) {
            const RunResult* dr = median_traced_round(t, mode);
            const auto fs = drive_findings(t, mode);
            if (!dr || fs.empty()) continue;
            out << "diagnosis " << t.spec.name << " (median round, round " << dr->round + 1 << "): ";
            out << diagnose::to_text(fs).substr(std::string_view("== diagnosis: ").size());
        }
    }
}

}  // namespace kvio::drives
