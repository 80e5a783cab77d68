#include "drives/figures.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <sstream>

#include "common/error.h"

namespace kvio::drives {

using nlohmann::json;

namespace {

double num(const json& j, const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

DirFigures dir_figures(const json& d) {
    DirFigures f;
    f.iops = num(d, "iops");
    f.mb_s = num(d, "bw_bytes") / 1e6;
    f.io_bytes = static_cast<uint64_t>(num(d, "io_bytes"));
    f.ios = static_cast<uint64_t>(num(d, "total_ios"));
    auto c = d.find("clat_ns");
    if (c != d.end() && c->contains("percentile") && (*c)["percentile"].is_object()) {
        for (auto& [k, v] : (*c)["percentile"].items())
            if (v.is_number()) f.clat_cdf.emplace_back(std::stod(k), v.get<double>());
        std::sort(f.clat_cdf.begin(), f.clat_cdf.end());
        auto at = [&](double p) {
            for (auto& [q, v] : f.clat_cdf)
                if (q >= p - 1e-9) return v;
            return 0.0;
        };
        if (f.ios) f.clat_p50 = at(50), f.clat_p90 = at(90), f.clat_p99 = at(99), f.clat_p999 = at(99.9);
    }
    if (!f.ios) f.clat_cdf.clear();
    return f;
}

/// Merges `b` (a clone or a later entry of the same phase) into `a`: counts and rates add, latency stays that of the
/// entry with more I/Os.
void merge_dir(DirFigures& a, const DirFigures& b) {
    if (b.ios > a.ios) {
        a.clat_p50 = b.clat_p50, a.clat_p90 = b.clat_p90, a.clat_p99 = b.clat_p99, a.clat_p999 = b.clat_p999;
        a.clat_cdf = b.clat_cdf;
    }
    a.iops += b.iops, a.mb_s += b.mb_s, a.io_bytes += b.io_bytes, a.ios += b.ios;
}

double pct_value(const json& hist, const char* p) {
    if (!hist.is_object() || !hist.contains("percentiles")) return 0;
    const json& ps = hist["percentiles"];
    return ps.contains(p) ? num(ps[p], "value") : 0.0;
}

double mean_of_linear(const json& hist) {
    if (!hist.is_object() || !hist.contains("buckets")) return 0;
    double n = 0, s = 0;
    for (const auto& b : hist["buckets"])
        if (b.is_array() && b.size() == 3) n += b[2].get<double>(), s += b[0].get<double>() * b[2].get<double>();
    return n > 0 ? s / n : 0;
}

}  // namespace

FioRun parse_fio_json(const json& j, const std::string& source) {
    FioRun r;
    if (j.contains("fio version") && j["fio version"].is_string()) r.fio_version = j["fio version"];
    const json* jobs = j.contains("jobs") ? &j["jobs"] : j.contains("client_stats") ? &j["client_stats"] : nullptr;
    if (!jobs || !jobs->is_array()) throw Error(source + ": no 'jobs' or 'client_stats' in fio's JSON output");
    std::map<std::string, size_t> index;
    for (const auto& e : *jobs) {
        std::string name = e.value("jobname", "");
        if (name == "All clients") continue;
        if (e.contains("hostname") && e["hostname"].is_string()) r.host = e["hostname"];
        if (num(e, "error") != 0)
            throw Error(source + ": fio job '" + name + "' ended with error " +
                        std::to_string(static_cast<int>(num(e, "error"))));
        PhaseFigures p;
        p.name = name;
        p.runtime_s = num(e, "job_runtime") / 1000.0;
        if (const auto o = e.find("job options"); o != e.end() && o->is_object())
            p.null_engine = o->value("ioengine", std::string()) == "null";
        p.read = dir_figures(e.value("read", json::object()));
        p.write = dir_figures(e.value("write", json::object()));
        auto it = index.find(name);
        if (it == index.end()) {
            index[name] = r.phases.size();
            r.phases.push_back(std::move(p));
        } else {  // a numjobs clone: runs beside the first
            PhaseFigures& a = r.phases[it->second];
            a.runtime_s = std::max(a.runtime_s, p.runtime_s);
            merge_dir(a.read, p.read);
            merge_dir(a.write, p.write);
        }
    }
    if (r.phases.empty()) throw Error(source + ": fio's JSON output holds no job");
    r.total.name = "total";
    for (const auto& p : r.phases) {
        r.total.runtime_s += p.runtime_s;
        DirFigures rd = p.read, wr = p.write;
        rd.iops = rd.mb_s = wr.iops = wr.mb_s = 0;
        merge_dir(r.total.read, rd);
        merge_dir(r.total.write, wr);
    }
    if (r.total.runtime_s > 0)
        for (DirFigures* d : {&r.total.read, &r.total.write}) {
            d->iops = static_cast<double>(d->ios) / r.total.runtime_s;
            d->mb_s = static_cast<double>(d->io_bytes) / r.total.runtime_s / 1e6;
        }
    return r;
}

DeviceFigures parse_trace_json(const json& j, const std::string& disk) {
    DeviceFigures f;
    f.disk = disk;
    if (!j.contains("devices") || !j["devices"].is_array()) return f;
    for (const auto& d : j["devices"]) {
        if (d.value("disk", "") != disk) continue;
        f.present = true;
        const json h = d.value("histograms", json::object());
        auto hist = [&](const char* k) { return h.contains(k) ? h[k] : json(); };
        f.d2c_read_p50 = pct_value(hist("d2c_read"), "p50");
        f.d2c_read_p99 = pct_value(hist("d2c_read"), "p99");
        f.d2c_read_p999 = pct_value(hist("d2c_read"), "p99.9");
        f.d2c_write_p50 = pct_value(hist("d2c_write"), "p50");
        f.d2c_write_p99 = pct_value(hist("d2c_write"), "p99");
        f.d2c_write_p999 = pct_value(hist("d2c_write"), "p99.9");
        f.q2d_read_p50 = pct_value(hist("q2d_read"), "p50");
        f.q2d_read_p99 = pct_value(hist("q2d_read"), "p99");
        f.q2d_write_p50 = pct_value(hist("q2d_write"), "p50");
        f.q2d_write_p99 = pct_value(hist("q2d_write"), "p99");
        f.qd_read_mean = mean_of_linear(hist("qd_read"));
        f.qd_write_mean = mean_of_linear(hist("qd_write"));
        const json rd = d.value("read", json::object()), wr = d.value("write", json::object());
        f.read_cmds = static_cast<uint64_t>(num(rd, "cmds")), f.read_bytes = static_cast<uint64_t>(num(rd, "bytes"));
        f.write_cmds = static_cast<uint64_t>(num(wr, "cmds")), f.write_bytes = static_cast<uint64_t>(num(wr, "bytes"));
        if (j.contains("duty") && j["duty"].contains("disks"))
            for (const auto& k : j["duty"]["disks"]) {
                if (k.value("dev", "") != d.value("dev", "")) continue;
                const json kr = k.value("read", json::object()), kw = k.value("write", json::object());
                f.read_cmds = static_cast<uint64_t>(num(kr, "cmds")),
                f.read_bytes = static_cast<uint64_t>(num(kr, "bytes"));
                f.write_cmds = static_cast<uint64_t>(num(kw, "cmds"));
                f.write_bytes = static_cast<uint64_t>(num(kw, "bytes"));
                f.qd_read_mean = num(kr, "mean_depth_busy"), f.qd_write_mean = num(kw, "mean_depth_busy");
                f.traced_share = num(k, "traced_share");
            }
    }
    return f;
}

Spread spread_of(std::vector<double> v) {
    Spread s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.n = v.size();
    s.min = v.front(), s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    return s;
}

json spread_json(const Spread& s) { return {{"min", s.min}, {"median", s.median}, {"max", s.max}, {"n", s.n}}; }

double separation_by_chance(size_t n, size_t m) {
    // 2 of the C(n+m, n) equally likely interleavings of two samples of one distribution leave them apart
    double c = 1;
    for (size_t i = 1; i <= n; ++i) c = c * double(m + i) / double(i);
    return c > 0 ? 2 / c : 1;
}

std::vector<Verdict> rank_and_compare(const std::vector<std::pair<std::string, Spread>>& by_target,
                                      bool higher_is_better, const std::string& figure) {
    auto order = by_target;
    std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
        return higher_is_better ? x.second.median > y.second.median : x.second.median < y.second.median;
    });
    std::vector<Verdict> out;
    for (size_t i = 0; i + 1 < order.size(); ++i) {
        const auto& [an, a] = order[i];
        const auto& [bn, b] = order[i + 1];
        Verdict v;
        v.a = an, v.b = bn;
        double num_ = higher_is_better ? a.median : b.median, den = higher_is_better ? b.median : a.median;
        v.pct = den > 0 ? (num_ / den - 1) * 100 : 0;
        v.separated = higher_is_better ? a.min > b.max : a.max < b.min;
        char buf[512];
        if (den <= 0 && num_ > 0)  // a ratio over nothing is no percentage
            std::snprintf(buf, sizeof buf, "%s ahead of %s in %s, %s's median being 0 (no percentage)", an.c_str(),
                          bn.c_str(), figure.c_str(), higher_is_better ? bn.c_str() : an.c_str());
        else if (v.separated && a.n > 1 && b.n > 1)
            std::snprintf(buf, sizeof buf,
                          "%s faster than %s by %.1f %% in %s (rounds don't overlap; for two equal drives by chance 1 "
                          "in %.0f at %zu and %zu rounds)",
                          an.c_str(), bn.c_str(), v.pct, figure.c_str(), 1 / separation_by_chance(a.n, b.n), a.n, b.n);
        else
            std::snprintf(buf, sizeof buf, "%s vs %s: inside noise in %s (medians %.1f %% apart, rounds overlap%s)",
                          an.c_str(), bn.c_str(), figure.c_str(), v.pct, a.n > 1 && b.n > 1 ? "" : " or one round");
        v.separated = v.separated && a.n > 1 && b.n > 1;
        v.text = buf;
        out.push_back(v);
    }
    return out;
}

namespace {

/// Adds `bytes` spread evenly over [t0, t1) (ms after the origin) to the windows of `window_ms` they overlap.
void spread_bytes(std::map<int64_t, double>& windows, double t0, double t1, double bytes, int window_ms) {
    if (t1 <= t0) return;
    for (auto i = static_cast<int64_t>(std::floor(t0 / window_ms)); i * window_ms < t1; ++i) {
        double lo = std::max(t0, double(i * window_ms)), hi = std::min(t1, double((i + 1) * window_ms));
        if (hi > lo) windows[i] += bytes * (hi - lo) / (t1 - t0);
    }
}

}  // namespace

std::vector<std::vector<double>> parse_bw_logs(const std::vector<std::string>& texts, int window_ms, double origin_ms,
                                               const std::string& source) {
    std::map<int64_t, double> windows[2];  // per direction: window index -> bytes
    for (const auto& text : texts) {
        std::istringstream in(text);
        double prev[2] = {NAN, NAN};
        int line_no = 0;
        for (std::string line; std::getline(in, line);) {
            ++line_no;
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            std::replace(line.begin(), line.end(), ',', ' ');
            std::istringstream fields(line);
            double t_ms = 0, kib_s = 0;
            int ddir = 0;
            const char* bad = !(fields >> t_ms)    ? "time_ms"
                              : !(fields >> kib_s) ? "KiB/s"
                              : !(fields >> ddir)  ? "ddir"
                                                   : nullptr;
            if (bad)
                throw Error(source + ":" + std::to_string(line_no) + ": field '" + bad + "': not a number: " + line);
            if (ddir != 0 && ddir != 1) continue;
            const double t = t_ms - origin_ms, t0 = std::isnan(prev[ddir]) ? t - window_ms : prev[ddir];
            spread_bytes(windows[ddir], t0, t, kib_s * 1024 * (t - t0) / 1000, window_ms);
            prev[ddir] = t;
        }
    }
    std::vector<std::vector<double>> out;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& w : windows)
        if (!w.empty()) first = std::min(first, w.begin()->first), last = std::max(last, w.rbegin()->first);
    for (int64_t i = first; i <= last && first != INT64_MAX; ++i) {
        auto at = [&](const std::map<int64_t, double>& w) {
            auto it = w.find(i);
            return it == w.end() ? 0.0 : it->second / (window_ms / 1000.0) / 1e6;
        };
        out.push_back({(i + 1) * window_ms / 1000.0, at(windows[0]), at(windows[1])});
    }
    return out;
}

std::array<double, 2> cap_bw_timeline(std::vector<std::vector<double>>& timeline, const uint64_t moved_bytes[2],
                                      int window_ms) {
    std::array<double, 2> factor = {1, 1};
    for (int d : {0, 1}) {
        double logged = 0;  // bytes: MB/s x 10^6 x the window in s
        for (const auto& w : timeline) logged += w[1 + d] * 1e6 * window_ms / 1000.0;
        if (logged > double(moved_bytes[d]) && logged > 0) factor[d] = double(moved_bytes[d]) / logged;
        if (factor[d] < 1)
            for (auto& w : timeline) w[1 + d] *= factor[d];
    }
    return factor;
}

// Bytes/s of one direction while the job moved it: its bytes over the time the phases that moved any spent on it
// (each phase's io_bytes over fio's bw_bytes: that direction's own runtime), so a stonewalled write phase does not
// dilute the read rate and a mixed phase counts with its mix. The distiller's idle sections (fio's null engine: one
// 4 KiB I/O and the gap's thinktime) moved nothing on the device and are left out.
double moving_rate(const FioRun& f, bool write) {
    double bytes = 0, secs = 0;
    for (const auto& p : f.phases) {
        if (p.null_engine) continue;
        const DirFigures& d = write ? p.write : p.read;
        if (d.io_bytes && d.mb_s > 0) bytes += double(d.io_bytes), secs += double(d.io_bytes) / (d.mb_s * 1e6);
    }
    return secs > 0 ? bytes / secs : 0;
}

}  // namespace kvio::drives
