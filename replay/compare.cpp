#include "replay/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <vector>

#include "common/histogram.h"

namespace kvio::replay {

namespace {

/// Nearest-rank percentile of sorted `v` (p in percent).
uint64_t percentile(const std::vector<uint64_t>& v, double p) {
    if (v.empty()) return 0;
    size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
    return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

std::vector<const kvio::Cmd*> data_cmds(const DeviceStream& s) {
    std::vector<const kvio::Cmd*> v;
    for (const auto& c : s.cmds)
        if (is_data(c)) v.push_back(&c);
    return v;
}

}  // namespace

StreamStats stream_stats(const DeviceStream& s) {
    StreamStats st;
    st.path = s.path;
    st.dev = s.dev;
    st.disk = s.disk;
    std::vector<uint64_t> d2c;
    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& c : s.cmds) {
        if (!is_data(c)) {
            ++st.non_data;
            continue;
        }
        ++st.cmds;
        st.bytes += c.bytes;
        if (c.op == kvio::Op::Write)
            ++st.writes, st.write_bytes += c.bytes;
        else
            ++st.reads, st.read_bytes += c.bytes;
        ++st.sizes[c.bytes];
        if (c.completion_seen()) d2c.push_back(c.d2c_ns());
        first = std::min(first, c.ts_issue);
        last = std::max(last, c.end_ts());
    }
    st.mean_bytes = st.cmds ? double(st.bytes) / double(st.cmds) : 0;
    st.duration_ns = st.cmds ? last - first : 0;
    std::sort(d2c.begin(), d2c.end());
    st.d2c_p50_ns = percentile(d2c, 50);
    st.d2c_p99_ns = percentile(d2c, 99);
    return st;
}

Comparison compare_streams(const std::string& a, const std::string& dev_a, const std::string& b,
                           const std::string& dev_b) {
    return compare_loaded(load_stream(a, dev_a, "--dev-a MAJ:MIN"), load_stream(b, dev_b, "--dev-b MAJ:MIN"));
}

Comparison compare_loaded(const DeviceStream& sa, const DeviceStream& sb) {
    Comparison c;
    c.a = stream_stats(sa);
    c.b = stream_stats(sb);
    auto da = data_cmds(sa), db = data_cmds(sb);
    c.compared = std::min(da.size(), db.size());
    for (size_t i = 0; i < c.compared; ++i)
        if (da[i]->op == db[i]->op && da[i]->bytes == db[i]->bytes && da[i]->sector == db[i]->sector) ++c.same_position;
    return c;
}

double pct_diff(double a, double b) {
    if (a == b) return 0;
    if (a == 0) return INFINITY;
    return (b - a) / a * 100.0;
}

namespace {

struct Row {
    const char* name;
    double a, b;
    const char* unit;  // "", "B", "ms"
};

std::vector<Row> rows(const Comparison& c) {
    const auto &a = c.a, &b = c.b;
    return {
        {"commands", double(a.cmds), double(b.cmds), ""},
        {"reads", double(a.reads), double(b.reads), ""},
        {"writes", double(a.writes), double(b.writes), ""},
        {"bytes", double(a.bytes), double(b.bytes), "B"},
        {"read bytes", double(a.read_bytes), double(b.read_bytes), "B"},
        {"write bytes", double(a.write_bytes), double(b.write_bytes), "B"},
        {"mean size", a.mean_bytes, b.mean_bytes, "B"},
        {"duration", double(a.duration_ns) / 1e6, double(b.duration_ns) / 1e6, "ms"},
        {"D2C p50", double(a.d2c_p50_ns) / 1e6, double(b.d2c_p50_ns) / 1e6, "ms"},
        {"D2C p99", double(a.d2c_p99_ns) / 1e6, double(b.d2c_p99_ns) / 1e6, "ms"},
    };
}

std::string pct_str(double a, double b) {
    double d = pct_diff(a, b);
    if (std::isinf(d)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.2f%%", d);
    return buf;
}

}  // namespace

void print_comparison(std::ostream& os, const Comparison& c) {
    char line[256];
    std::snprintf(line, sizeof line, "A: %s (%s %s)\nB: %s (%s %s)\n", c.a.path.c_str(), c.a.disk.c_str(),
                  c.a.dev.c_str(), c.b.path.c_str(), c.b.disk.c_str(), c.b.dev.c_str());
    os << line;
    std::snprintf(line, sizeof line, "%-12s %16s %16s %10s\n", "metric", "A", "B", "B vs A");
    os << line;
    for (const auto& r : rows(c)) {
        const char* fmt = r.unit[0] == 'm'   ? "%-12s %13.3f ms %13.3f ms %10s\n"
                          : r.unit[0] == 'B' ? "%-12s %14.0f B %14.0f B %10s\n"
                                             : "%-12s %16.0f %16.0f %10s\n";
        std::snprintf(line, sizeof line, fmt, r.name, r.a, r.b, pct_str(r.a, r.b).c_str());
        os << line;
    }
    // Top sizes by A's count (then B's), with each side's share of its commands.
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> both;
    for (auto [s, n] : c.a.sizes) both[s].first = n;
    for (auto [s, n] : c.b.sizes) both[s].second = n;
    std::vector<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> v(both.begin(), both.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
        return x.second.first != y.second.first ? x.second.first > y.second.first : x.second.second > y.second.second;
    });
    os << "size mix (top " << std::min<size_t>(5, v.size()) << " of " << v.size() << " sizes, share of commands):\n";
    for (size_t i = 0; i < v.size() && i < 5; ++i) {
        double pa = c.a.cmds ? 100.0 * double(v[i].second.first) / double(c.a.cmds) : 0;
        double pb = c.b.cmds ? 100.0 * double(v[i].second.second) / double(c.b.cmds) : 0;
        std::snprintf(line, sizeof line, "  %-10s %8llu (%6.2f%%) %8llu (%6.2f%%) %10s\n",
                      human_bytes(v[i].first).c_str(), (unsigned long long)v[i].second.first, pa,
                      (unsigned long long)v[i].second.second, pb,
                      pct_str(double(v[i].second.first), double(v[i].second.second)).c_str());
        os << line;
    }
    std::snprintf(line, sizeof line,
                  "order: %llu/%llu commands equal at the same position (direction, sector, bytes)\n",
                  (unsigned long long)c.same_position, (unsigned long long)c.compared);
    os << line;
    if (c.a.non_data || c.b.non_data)
        os << "not compared (flush/discard/other): A " << c.a.non_data << ", B " << c.b.non_data << "\n";
    if (!c.fidelity_summary.empty())
        os << "B against A as `kvio distill --verify` scores a replay: " << c.fidelity_summary << "\n";
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
    auto side = [](const StreamStats& s) {
        nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
        for (auto [sz, n] : s.sizes) sizes.push_back({sz, n});
        return nlohmann::ordered_json{{"path", s.path},
                                      {"dev", s.dev},
                                      {"disk", s.disk},
                                      {"cmds", s.cmds},
                                      {"reads", s.reads},
                                      {"writes", s.writes},
                                      {"bytes", s.bytes},
                                      {"read_bytes", s.read_bytes},
                                      {"write_bytes", s.write_bytes},
                                      {"mean_bytes", s.mean_bytes},
                                      {"duration_ns", s.duration_ns},
                                      {"d2c_p50_ns", s.d2c_p50_ns},
                                      {"d2c_p99_ns", s.d2c_p99_ns},
                                      {"non_data", s.non_data},
                                      {"sizes", sizes}};
    };
    nlohmann::ordered_json diff;
    const char* keys[] = {"cmds",        "reads",      "writes",      "bytes",      "read_bytes",
                          "write_bytes", "mean_bytes", "duration_ns", "d2c_p50_ns", "d2c_p99_ns"};
    auto r = rows(c);
    for (size_t i = 0; i < r.size(); ++i) {
        double d = pct_diff(r[i].a, r[i].b);
        diff[keys[i]] = std::isinf(d) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d);
    }
    return {{"schema", "kvio.compare/1"},
            {"a", side(c.a)},
            {"b", side(c.b)},
            {"diff_pct", diff},
            {"order", {{"same_position", c.same_position}, {"compared", c.compared}}},
            {"fidelity", c.fidelity}};
}

}  // namespace kvio::replay
