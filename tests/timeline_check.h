// The Chrome JSON trace-event format's rules, as the tests check a kvio timeline (report/perfetto_timeline.h)
// against them: shared by the unit and e2e tests. Rules (the Trace Event Format document, "JSON Object Format"):
//   - a JSON object with a "traceEvents" array; every event an object with a string "ph" and integer pid;
//   - ph is one of the kinds kvio writes: "X" (complete), "M" (metadata), "s"/"f" (flow start / end);
//   - X: string name, integer tid, number ts >= 0 and dur >= 0 (µs), with at most 3 decimals (ns resolution);
//     the X events of one (pid, tid) nest: two of them either are disjoint or one contains the other;
//   - M: name process_name / thread_name (args.name a string) or process_sort_index / thread_sort_index
//     (args.sort_index an integer); thread metadata has a tid;
//   - s and f: an id, cat and name; each id has exactly one s and one f with the same cat and name; f has "bp":"e";
//     each lies inside an X event of its (pid, tid) (the slice it binds to).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::test {

struct TimelineCheck {
    std::vector<std::string> violations;     ///< empty = the file follows the rules
    uint64_t slices = 0, flows = 0;          ///< X events; s/f pairs
    std::map<std::string, uint64_t> by_cat;  ///< X events per cat
    /// X events of cat "cmd": (args.dev, sector or slba, bytes, ts in ns), as the checker recovered them.
    std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t>> cmds;
    /// Flow ends: (pid, tid, ts in ns) of each "f", and of each "s".
    std::vector<std::tuple<int64_t, int64_t, int64_t>> flow_ends, flow_starts;
};

/// ts/dur in µs with ns resolution -> ns (rounded: the writer prints exact decimals).
inline int64_t timeline_ns(double us) { return int64_t(std::llround(us * 1000.0)); }

inline TimelineCheck check_timeline(const nlohmann::json& doc) {
    TimelineCheck r;
    auto bad = [&](const std::string& s) {
        if (r.violations.size() < 50) r.violations.push_back(s);
    };
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
        bad("no traceEvents array");
        return r;
    }
    struct Span {
        int64_t a, b;
    };
    std::map<std::pair<int64_t, int64_t>, std::vector<Span>> per_thread;
    struct FlowEnd {
        int n = 0;
        std::string cat, name;
    };
    std::map<std::string, std::pair<FlowEnd, FlowEnd>> flows;                     // id -> (s, f)
    std::vector<std::tuple<int64_t, int64_t, int64_t, std::string>> flow_points;  // pid, tid, ts ns, what
    auto three_decimals = [](double us) { return std::fabs(us * 1000.0 - std::round(us * 1000.0)) < 1e-3; };
    size_t i = 0;
    for (const auto& e : doc["traceEvents"]) {
        const std::string at = "event " + std::to_string(i++);
        if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
            bad(at + ": no ph");
            continue;
        }
        if (!e.contains("pid") || !e["pid"].is_number_integer()) {
            bad(at + ": pid not an integer");
            continue;
        }
        const std::string ph = e["ph"];
        const int64_t pid = e["pid"];
        const bool has_tid = e.contains("tid") && e["tid"].is_number_integer();
        const int64_t tid = has_tid ? e["tid"].get<int64_t>() : 0;
        if (ph == "X") {
            if (!e.contains("name") || !e["name"].is_string()) bad(at + ": X without a name");
            if (!has_tid) bad(at + ": X without an integer tid");
            if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number()) {
                bad(at + ": X without numeric ts/dur");
                continue;
            }
            const double ts = e["ts"], dur = e["dur"];
            if (ts < 0 || dur < 0) bad(at + ": negative ts or dur");
            if (!three_decimals(ts) || !three_decimals(dur)) bad(at + ": ts/dur finer than 1 ns");
            const int64_t a = timeline_ns(ts), b = a + timeline_ns(dur);
            per_thread[{pid, tid}].push_back({a, b});
            ++r.slices;
            const std::string cat = e.value("cat", "");
            ++r.by_cat[cat];
            if (cat == "cmd") {
                const auto& g = e["args"];
                const uint64_t where = g.contains("slba") ? g["slba"].get<uint64_t>() : g.value("sector", uint64_t(0));
                r.cmds.emplace_back(g.value("dev", ""), where, g.value("bytes", uint64_t(0)), uint64_t(a));
            }
        } else if (ph == "M") {
            const std::string n = e.value("name", "");
            const auto& g = e.contains("args") ? e["args"] : nlohmann::json();
            if (n == "process_name" || n == "thread_name") {
                if (!g.is_object() || !g.contains("name") || !g["name"].is_string())
                    bad(at + ": " + n + " without args.name");
            } else if (n == "process_sort_index" || n == "thread_sort_index") {
                if (!g.is_object() || !g.contains("sort_index") || !g["sort_index"].is_number_integer())
                    bad(at + ": " + n + " without sort_index");
            } else {
                bad(at + ": unknown metadata " + n);
            }
            if (n.rfind("thread_", 0) == 0 && !has_tid) bad(at + ": thread metadata without tid");
        } else if (ph == "s" || ph == "f") {
            if (!e.contains("id") || !e.contains("cat") || !e.contains("name") || !e.contains("ts") || !has_tid) {
                bad(at + ": flow event without id/cat/name/ts/tid");
                continue;
            }
            const std::string id = e["id"].dump();
            FlowEnd& fe = ph == "s" ? flows[id].first : flows[id].second;
            ++fe.n;
            fe.cat = e["cat"];
            fe.name = e["name"];
            if (ph == "f" && e.value("bp", "") != "e") bad(at + ": flow end without bp e");
            const int64_t ts = timeline_ns(e["ts"].get<double>());
            flow_points.emplace_back(pid, tid, ts, at);
            (ph == "s" ? r.flow_starts : r.flow_ends).emplace_back(pid, tid, ts);
        } else {
            bad(at + ": ph '" + ph + "' is not one kvio writes (X, M, s, f)");
        }
    }
    for (auto& [key, spans] : per_thread) {
        std::sort(spans.begin(), spans.end(),
                  [](const Span& x, const Span& y) { return x.a != y.a ? x.a < y.a : x.b > y.b; });
        std::vector<int64_t> open;  // ends of the enclosing slices
        for (const auto& s : spans) {
            while (!open.empty() && open.back() <= s.a) open.pop_back();
            if (!open.empty() && s.b > open.back())
                bad("pid " + std::to_string(key.first) + " tid " + std::to_string(key.second) + ": slice [" +
                    std::to_string(s.a) + ", " + std::to_string(s.b) + "] ns overlaps its neighbour without nesting");
            open.push_back(s.b);
        }
    }
    for (const auto& [id, p] : flows) {
        if (p.first.n != 1 || p.second.n != 1)
            bad("flow id " + id + ": " + std::to_string(p.first.n) + " starts, " + std::to_string(p.second.n) +
                " ends");
        else if (p.first.cat != p.second.cat || p.first.name != p.second.name)
            bad("flow id " + id + ": start and end differ in cat/name");
        else
            ++r.flows;
    }
    for (const auto& [pid, tid, ts, at] : flow_points) {
        const auto it = per_thread.find({pid, tid});
        bool inside = false;
        if (it != per_thread.end())
            for (const auto& s : it->second) inside |= s.a <= ts && ts <= s.b;
        if (!inside) bad(at + ": flow event outside every slice of its thread");
    }
    return r;
}

}  // namespace kvio::test
