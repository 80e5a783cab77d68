// kvio report TRACE.json: report.html from any trace summary; the block breakdown's stage table and counts equal the
// trace JSON's, and a trace without --breakdown gets no breakdown section.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "report/report_breakdown.h"
#include "report/svg_chart.h"
#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

/// The rows of the table with id `id` in `html`: first cell -> the other cells.
std::map<std::string, std::vector<std::string>> table_rows(const std::string& html, const std::string& id) {
    std::map<std::string, std::vector<std::string>> out;
    auto at = html.find("<table id=\"" + id + "\"");
    if (at == std::string::npos) return out;
    const std::string t = html.substr(at, html.find("</table>", at) - at);
    static const std::regex row("<tr>((?:<td>[^<]*</td>)+)</tr>"), cell("<td>([^<]*)</td>");
    for (auto r = std::sregex_iterator(t.begin(), t.end(), row); r != std::sregex_iterator(); ++r) {
        const std::string cells = (*r)[1];
        std::vector<std::string> v;
        for (auto c = std::sregex_iterator(cells.begin(), cells.end(), cell); c != std::sregex_iterator(); ++c)
            v.push_back((*c)[1]);
        if (!v.empty()) out[v[0]] = std::vector<std::string>(v.begin() + 1, v.end());
    }
    return out;
}

const json& device_of(const json& s, const std::string& majmin) {
    for (const auto& d : s["devices"])
        if (d["dev"] == majmin) return d;
    throw std::runtime_error("device " + majmin + " not in the trace");
}

}  // namespace

// A --breakdown trace of O_DIRECT writes and reads on a 4 KiB max_sectors_kb device (so block_split fires): every
// stage row of the report (requests, mean, p50, p99, share of Q2C) is the trace JSON's histogram, formatted, and the
// merge/split/requeue counts are the JSON's block_events.
TEST(ReportTrace, BreakdownFiguresEqualTheTraceJson) {
    LoopDevice loop(64 * MiB);
    loop.set_queue_attr("max_sectors_kb", "4");
    TempDir dir;
    auto r = run(kvio_bin() + " trace -q --breakdown -d " + loop.name + " --json " + dir.file("t.json") +
                 " -- sh -c 'dd if=/dev/zero of=" + loop.path + " bs=64k count=32 oflag=direct status=none && dd if=" +
                 loop.path + " of=/dev/null bs=64k count=32 iflag=direct status=none'");
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " report " + dir.file("t.json") + " -o " + dir.file("r.html"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(dir.file("r.html")), std::string::npos) << r.out;
    const json s = json::parse(slurp(dir.file("t.json")));
    const std::string html = slurp(dir.file("r.html"));
    ASSERT_NE(html.find("<section id=\"breakdown\">"), std::string::npos);
    const json& h = device_of(s, loop.majmin)["histograms"];
    for (std::string op : {"read", "write"}) {
        auto rows = table_rows(html, "breakdown-" + loop.name + "-" + op);
        ASSERT_EQ(rows.size(), 6u) << op << ": one row per stage";
        const uint64_t q2c_sum = h["bt_q2c_" + op]["sum"].get<uint64_t>();
        ASSERT_GE(h["bt_q2c_" + op]["count"].get<uint64_t>(), 500u) << op << ": 512 4 KiB requests, a few may be early";
        for (std::string st : kvio::report::kBreakdownStages) {
            std::string up = st;
            for (auto& c : up) c = char(std::toupper(c));
            ASSERT_TRUE(rows.count(up)) << op << " " << up;
            const auto& row = rows[up];
            const std::string key = "bt_" + st + "_" + op;
            const uint64_t n = h.contains(key) ? h[key]["count"].get<uint64_t>() : 0;
            const uint64_t sum = h.contains(key) ? h[key]["sum"].get<uint64_t>() : 0;
            EXPECT_EQ(row[0], std::to_string(n)) << op << " " << up;
            EXPECT_EQ(row[4], kvio::report::stage_share(sum, q2c_sum)) << op << " " << up;
            if (!n) continue;
            EXPECT_EQ(row[1], kvio::report::human_ns(double(sum) / double(n))) << op << " " << up;
            EXPECT_EQ(row[2], kvio::report::human_ns(h[key]["percentiles"]["p50"]["value"].get<double>()));
            EXPECT_EQ(row[3], kvio::report::human_ns(h[key]["percentiles"]["p99"]["value"].get<double>()));
        }
        EXPECT_EQ(rows["Q2C"][4], "100.00 %") << op;
    }
    const json* ev = nullptr;
    for (const auto& e : s["block_events"])
        if (e["dev"] == loop.majmin) ev = &e;
    ASSERT_NE(ev, nullptr);
    auto counts = table_rows(html, "block-events-" + loop.name);
    const char* kinds[] = {"rq_merges", "bio_backmerges", "bio_frontmerges", "splits", "requeues"};
    for (std::string op : {"read", "write", "other"})
        for (size_t k = 0; k < std::size(kinds); ++k)
            EXPECT_EQ(counts[op].at(k), std::to_string((*ev)[op][kinds[k]].get<uint64_t>())) << op << " " << kinds[k];
    EXPECT_GE((*ev)["read"]["splits"].get<uint64_t>(), 32u) << "64 KiB transfers on a 4 KiB limit split";
}

// Without --breakdown: the report of the same kind of trace has its latency sections and no breakdown section.
TEST(ReportTrace, NoBreakdownNoSection) {
    LoopDevice loop(16 * MiB);
    TempDir dir;
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --json " + dir.file("t.json") +
                 " -- dd if=/dev/zero of=" + loop.path + " bs=64k count=16 oflag=direct status=none");
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " report " + dir.file("t.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string html = slurp(dir.file("t.html"));
    EXPECT_NE(html.find("<section id=\"latency\">"), std::string::npos);
    EXPECT_EQ(html.find("breakdown"), std::string::npos);
    EXPECT_EQ(html.find("Block layer"), std::string::npos);
    // not a trace summary: one error naming the file and the field
    r = run(kvio_bin() + " report " + dir.file("t.html"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(dir.file("t.html")), std::string::npos) << r.err;
}

// Inputs that are not what report reads are named, not parsed into a raw JSON error: a binary events capture given as
// the summary, and the events of another trace given with --events. Each trace's summary and events carry its own
// `trace_id`, so another trace is refused by it even on the same device with as many commands; events without an id
// (an older kvio's) are still checked by device and command count. Nothing is written for any of them.
TEST(ReportTrace, WrongInputsAreNamedAndNothingIsWritten) {
    LoopDevice a(64 * MiB), b(64 * MiB);
    TempDir dir;
    auto trace = [&](const LoopDevice& l, const std::string& name, const std::string& fmt, const std::string& count) {
        auto r = run(kvio_bin() + " trace -q -d " + l.name + " --json " + dir.file(name + ".json") + " --events " +
                     dir.file(name + ".ev") + " --events-format " + fmt + " -- dd if=/dev/zero of=" + l.path +
                     " bs=64k count=" + count + " oflag=direct status=none");
        ASSERT_EQ(r.status, 0) << r.err;
    };
    trace(a, "a", "bin", "16");
    trace(a, "a2", "jsonl", "20");
    trace(a, "a3", "jsonl", "16");
    trace(b, "b", "jsonl", "16");
    auto id_of = [&](const std::string& name) {
        return json::parse(slurp(dir.file(name + ".json"))).value("trace_id", std::string());
    };
    ASSERT_EQ(id_of("a").size(), 16u);
    EXPECT_NE(id_of("a"), id_of("a3"));
    // the events' summary record carries the same id as the trace's --json
    const std::string a3ev = slurp(dir.file("a3.ev"));
    EXPECT_NE(a3ev.find("\"trace_id\":\"" + id_of("a3") + "\""), std::string::npos);
    auto r = run(kvio_bin() + " report " + dir.file("a.ev") + " -o " + dir.file("x.html"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(dir.file("a.ev") + ": is a kvio.events.bin/1 capture"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("parse_error"), std::string::npos) << r.err;
    // another trace: another device, or the same device with as many commands (which counts cannot tell)
    for (const char* other : {"b", "a3"}) {
        r = run(kvio_bin() + " report " + dir.file("a.json") + " --events " + dir.file(std::string(other) + ".ev") +
                " -o " + dir.file("y.html"));
        EXPECT_EQ(r.status, 1) << other;
        EXPECT_NE(r.err.find("are not the same trace: trace_id " + id_of(other)), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(id_of("a") + " in " + dir.file("a.json")), std::string::npos) << r.err;
    }
    // events without an id (an older kvio's): another device, or another number of commands, is still refused
    for (const char* name : {"b", "a2"}) {
        const std::string ev = slurp(dir.file(std::string(name) + ".ev"));
        const std::string tag = ",\"trace_id\":\"" + id_of(name) + "\"";
        ASSERT_NE(ev.find(tag), std::string::npos) << name;
        std::ofstream(dir.file(std::string(name) + ".old.ev"))
            << ev.substr(0, ev.find(tag)) << ev.substr(ev.find(tag) + tag.size());
    }
    r = run(kvio_bin() + " report " + dir.file("a.json") + " --events " + dir.file("b.old.ev") + " -o " +
            dir.file("y.html"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("are not the same trace"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(b.name), std::string::npos) << r.err;
    r = run(kvio_bin() + " report " + dir.file("a.json") + " --events " + dir.file("a2.old.ev") + " -o " +
            dir.file("z.html"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("the events hold 20 commands of " + a.name + ", the summary counted 16"), std::string::npos)
        << r.err;
    for (const char* f : {"x.html", "y.html", "z.html"}) EXPECT_FALSE(std::filesystem::exists(dir.file(f))) << f;
    // its own events are accepted
    r = run(kvio_bin() + " report " + dir.file("a.json") + " --events " + dir.file("a.ev") + " -o " +
            dir.file("ok.html"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir.file("ok.html")));
}
