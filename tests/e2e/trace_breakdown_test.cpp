// kvio trace --breakdown: the merge, split and requeue counts equal what tracefs records for the same events on the
// same run (a private tracefs instance, filtered to the test's loop device).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "tests/e2e/helpers.h"
#include "tests/e2e/tracefs.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

const char* const kEvents[] = {"block_rq_merge", "block_bio_backmerge", "block_bio_frontmerge", "block_split",
                               "block_rq_requeue"};
// the JSON name of each tracefs event above (docs/formats.md, "block_events")
const char* const kNames[] = {"rq_merges", "bio_backmerges", "bio_frontmerges", "splits", "requeues"};

// [event][dir] counts of a tracefs instance's lines (dir: 0 read, 1 write, 2 other, by the rwbs rule of
// bpf/breakdown.bpf.h)
std::map<std::string, std::array<uint64_t, 3>> tracefs_counts(const TracefsInstance& t) {
    std::map<std::string, std::array<uint64_t, 3>> out;
    for (const std::string& line : t.lines()) {
        for (const char* ev : kEvents) {
            std::string tag = std::string(" ") + ev + ": ";
            auto at = line.find(tag);
            if (at == std::string::npos) continue;
            std::istringstream rest(line.substr(at + tag.size()));
            std::string dev, rwbs;
            rest >> dev >> rwbs;
            int d = 2;
            if (rwbs[0] == 'R' || (rwbs.size() > 1 && rwbs[0] == 'F' && rwbs[1] == 'R')) d = 0;
            if (rwbs[0] == 'W' || (rwbs.size() > 1 && rwbs[0] == 'F' && rwbs[1] == 'W')) d = 1;
            ++out[ev][d];
        }
    }
    return out;
}

}  // namespace

// A 4 KiB max_sectors_kb splits each 512 KiB O_DIRECT write and read into 4 KiB requests (block_split: 1016 each
// way here, as tracefs counted); buffered 4 KiB writes written back at fsync cannot merge past 4 KiB. kvio's
// counts per event and direction equal tracefs' for the same run, and the splits the workload must produce are there.
TEST(TraceBreakdown, CountsEqualTracefsEvents) {
    LoopDevice loop(64 * MiB);
    loop.set_queue_attr("max_sectors_kb", "4");
    TempDir dir;
    const uint32_t kdev = kernel_dev_of(loop.majmin);
    const std::string work =
        "sh -c 'dd if=/dev/zero of=" + loop.path + " bs=512k count=8 oflag=direct status=none && dd if=" + loop.path +
        " of=/dev/null bs=512k count=8 iflag=direct status=none && dd if=/dev/zero of=" + loop.path +
        " bs=4k count=1024 seek=4096 conv=fsync status=none'";
    std::map<std::string, std::array<uint64_t, 3>> want;
    CmdResult r;
    {
        TracefsInstance tfs({std::begin(kEvents), std::end(kEvents)}, "dev == " + std::to_string(kdev));
        r = run(kvio_bin() + " trace -q --breakdown -d " + loop.name + " --json " + dir.file("t.json") + " -- " + work);
        tfs.stop();
        ASSERT_EQ(tfs.overruns(), 0u) << "tracefs lost events: the comparison would be void";
        want = tracefs_counts(tfs);
    }
    ASSERT_EQ(r.status, 0) << r.err;
    auto s = json::parse(slurp(dir.file("t.json")));
    ASSERT_TRUE(s.contains("block_events")) << s.dump();
    const json* d = nullptr;
    for (const auto& e : s["block_events"])
        if (e["dev"] == loop.majmin) d = &e;
    ASSERT_NE(d, nullptr) << s["block_events"].dump();
    const char* dirs[] = {"read", "write", "other"};
    for (size_t k = 0; k < std::size(kEvents); ++k)
        for (int di = 0; di < 3; ++di)
            EXPECT_EQ((*d)[dirs[di]][kNames[k]].get<uint64_t>(), want[kEvents[k]][di]) << kEvents[k] << " " << dirs[di];
    // what the workload must produce: 4 KiB splits of 512 KiB transfers both ways
    EXPECT_GE((*d)["write"]["splits"].get<uint64_t>(), 8u);
    EXPECT_GE((*d)["read"]["splits"].get<uint64_t>(), 8u);
}

// The stages of each request add up: over the same requests, sum(Q2G) + sum(G2I) + sum(I2D) + sum(G2D) + sum(D2C)
// = sum(Q2C) exactly (integer ns), every staged request is in Q2G and Q2C, and in G2I or G2D.
TEST(TraceBreakdown, StagesAddUpToQ2C) {
    LoopDevice loop(64 * MiB);
    TempDir dir;
    auto r = run(kvio_bin() + " trace -q --breakdown -d " + loop.name + " --json " + dir.file("t.json") +
                 " -- sh -c 'dd if=/dev/zero of=" + loop.path + " bs=64k count=64 oflag=direct status=none && dd if=" +
                 loop.path + " of=/dev/null bs=64k count=64 iflag=direct status=none'");
    ASSERT_EQ(r.status, 0) << r.err;
    auto s = json::parse(slurp(dir.file("t.json")));
    const json* d = nullptr;
    for (const auto& e : s["devices"])
        if (e["dev"] == loop.majmin) d = &e;
    ASSERT_NE(d, nullptr);
    const json& h = (*d)["histograms"];
    for (std::string op : {"read", "write"}) {
        auto sum = [&](const std::string& st) {
            return h.contains("bt_" + st + "_" + op) ? h["bt_" + st + "_" + op]["sum"].get<uint64_t>() : 0;
        };
        auto count = [&](const std::string& st) {
            return h.contains("bt_" + st + "_" + op) ? h["bt_" + st + "_" + op]["count"].get<uint64_t>() : 0;
        };
        ASSERT_GE(count("q2c"), 60u) << op << ": 64 commands, a few may have been queued before the trace";
        EXPECT_LE(count("q2c"), (*d)[op]["cmds"].get<uint64_t>()) << op;
        EXPECT_EQ(count("q2g"), count("q2c")) << op;
        EXPECT_EQ(count("d2c"), count("q2c")) << op;
        EXPECT_EQ(count("g2i") + count("g2d"), count("q2c")) << op;
        EXPECT_EQ(count("i2d"), count("g2i")) << op;
        EXPECT_EQ(sum("q2g") + sum("g2i") + sum("i2d") + sum("g2d") + sum("d2c"), sum("q2c")) << op;
        EXPECT_GT(sum("q2c"), sum("d2c")) << op;
    }
}

// Without --breakdown the summary has no block_events and the programs are not loaded (histograms mode unchanged).
TEST(TraceBreakdown, OffByDefault) {
    LoopDevice loop(16 * MiB);
    TempDir dir;
    auto r = run(kvio_bin() + " trace -q --stats -d " + loop.name + " --json " + dir.file("t.json") +
                 " -- dd if=/dev/zero of=" + loop.path + " bs=64k count=4 oflag=direct status=none");
    ASSERT_EQ(r.status, 0) << r.err;
    auto s = json::parse(slurp(dir.file("t.json")));
    EXPECT_FALSE(s.contains("block_events"));
    EXPECT_EQ(s["bpf_stats"].dump().find("bt_"), std::string::npos) << s["bpf_stats"].dump();
}

namespace {

/// The histogram `bt_STAGE_OP` of device `d` as {count, sum}; {0, 0} when absent.
std::pair<uint64_t, uint64_t> bt_hist(const json& d, const std::string& stage, const std::string& op) {
    const json& h = d["histograms"];
    const std::string k = "bt_" + stage + "_" + op;
    if (!h.contains(k)) return {0, 0};
    return {h[k]["count"].get<uint64_t>(), h[k]["sum"].get<uint64_t>()};
}

}  // namespace

// --breakdown with --events: one "stages" record per staged request (docs/formats.md, "Block stages record"). On a
// loop device, buffered 4 KiB writes written back at fsync and O_DIRECT 4 KiB writes and reads submitted 16 at once
// (both merge in the plug: block_bio_backmerge), first without a scheduler (issued directly: G2D), then with
// mq-deadline (inserted: G2I + I2D). Per request: the stamps are in order and Q2G + G2I + I2D + D2C (or Q2G + G2D +
// D2C) = Q2C; the record is the stages of exactly one "cmd" record (same sector, size and op; its issue and completion
// stamped by the other programs of the same tracepoint calls, within 1 ms); every read and write command is staged
// but those a front merge left without a getrq. The histograms count the stream's requests with its values: each
// stage's count and sum equal the stream's.
TEST(TraceBreakdown, StagesPerRequestOnTheEventsStream) {
    LoopDevice loop(64 * MiB);
    loop.set_queue_attr("scheduler", "none");  // restored at destruction: the workload switches it to mq-deadline
    TempDir dir;
    const std::string fio =
        "fio --output=/dev/null --direct=1 --bs=4k --ioengine=libaio --iodepth=16"
        " --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 --size=2m --filename=" +
        loop.path;
    const std::string phase = "dd if=/dev/zero of=" + loop.path +
                              " bs=4k count=512 seek=%SEEK% conv=fsync status=none" + " && " + fio +
                              " --name=w --rw=write --offset=%OFF%m && " + fio + " --name=r --rw=read --offset=%OFF%m";
    auto at = [&](int seek, int off) {
        std::string p = phase;
        p.replace(p.find("%SEEK%"), 6, std::to_string(seek));
        for (size_t i; (i = p.find("%OFF%")) != std::string::npos;) p.replace(i, 5, std::to_string(off));
        return p;
    };
    const std::string work =
        at(0, 8) + " && echo mq-deadline > /sys/block/" + loop.name + "/queue/scheduler && " + at(4096, 24);
    auto r = run(kvio_bin() + " trace -q --breakdown -d " + loop.name + " --json " + dir.file("t.json") + " --events " +
                 dir.file("ev.jsonl") + " -- sh -c '" + work + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto s = json::parse(slurp(dir.file("t.json")));
    const json* d = nullptr;
    for (const auto& e : s["devices"])
        if (e["dev"] == loop.majmin) d = &e;
    ASSERT_NE(d, nullptr) << s.dump();
    const json* be = nullptr;
    for (const auto& e : s["block_events"])
        if (e["dev"] == loop.majmin) be = &e;
    ASSERT_NE(be, nullptr) << s["block_events"].dump();

    // the block commands of the loop device by (op, sector, bytes)
    std::map<std::tuple<std::string, uint64_t, uint64_t>, std::vector<const json*>> cmds;
    std::vector<json> events = read_jsonl(dir.file("ev.jsonl"));
    std::vector<const json*> stages;
    uint64_t summary_stages = 0, n_cmds[2] = {};
    for (const auto& e : events) {
        if (e["type"] == "summary") summary_stages = e.value("stages", uint64_t(0));
        if (e.value("dev", "") != loop.majmin) continue;
        if (e["type"] == "stages") stages.push_back(&e);
        if (e["type"] == "cmd" && (e["op"] == "read" || e["op"] == "write")) {
            cmds[{e["op"], e["sector"], e["bytes"]}].push_back(&e);
            ++n_cmds[e["op"] == "write"];
        }
    }
    EXPECT_EQ(summary_stages, stages.size());

    // per op: [with insert, without] counts and the stream's sums per stage
    std::map<std::string, std::map<std::string, uint64_t>> sum, count;
    std::set<const json*> joined;
    for (const json* p : stages) {
        const json& e = *p;
        const std::string op = e["op"];
        ASSERT_TRUE(op == "read" || op == "write") << e.dump();
        const uint64_t q = e["ts_queue"], g = e["ts_getrq"], dd = e["ts_issue"], c = e["ts_complete"];
        const bool ins = e.contains("ts_insert");
        EXPECT_LE(q, g) << e.dump();
        EXPECT_LE(dd, c) << e.dump();
        if (ins) {
            const uint64_t i = e["ts_insert"];
            EXPECT_LE(g, i) << e.dump();
            EXPECT_LE(i, dd) << e.dump();
            EXPECT_FALSE(e.contains("g2d_ns")) << e.dump();
            EXPECT_EQ(e["q2g_ns"].get<uint64_t>() + e["g2i_ns"].get<uint64_t>() + e["i2d_ns"].get<uint64_t>() +
                          e["d2c_ns"].get<uint64_t>(),
                      e["q2c_ns"].get<uint64_t>())
                << e.dump();
            EXPECT_EQ(e["q2c_ns"].get<uint64_t>(), c - q) << e.dump();
        } else {
            EXPECT_LE(g, dd) << e.dump();
            EXPECT_FALSE(e.contains("g2i_ns") || e.contains("i2d_ns")) << e.dump();
            EXPECT_EQ(e["q2g_ns"].get<uint64_t>() + e["g2d_ns"].get<uint64_t>() + e["d2c_ns"].get<uint64_t>(),
                      e["q2c_ns"].get<uint64_t>())
                << e.dump();
            EXPECT_EQ(e["q2c_ns"].get<uint64_t>(), c - q) << e.dump();
        }
        for (const char* k : {"q2g", "g2i", "i2d", "g2d", "d2c", "q2c"})
            if (e.contains(std::string(k) + "_ns")) {
                sum[op][k] += e[std::string(k) + "_ns"].get<uint64_t>();
                ++count[op][k];
            }
        // the one command these are the stages of
        const json* best = nullptr;
        uint64_t best_gap = UINT64_MAX;
        for (const json* cm : cmds[{op, e["sector"], e["bytes"]}]) {
            if (!cm->contains("ts_complete")) continue;
            const uint64_t ci = (*cm)["ts_issue"], cc = (*cm)["ts_complete"];
            const uint64_t gap = std::max(ci > dd ? ci - dd : dd - ci, cc > c ? cc - c : c - cc);
            if (gap < best_gap) best_gap = gap, best = cm;
        }
        ASSERT_NE(best, nullptr) << "no command for " << e.dump();
        EXPECT_LT(best_gap, 1'000'000u) << e.dump() << "\n" << best->dump();
        EXPECT_EQ(best->contains("ts_insert"), ins) << e.dump() << "\n" << best->dump();
        EXPECT_TRUE(joined.insert(best).second) << "two stages records for " << best->dump();
    }

    for (std::string op : {"read", "write"}) {
        const uint64_t cmds_op = n_cmds[op == "write"];
        const uint64_t front = (*be)[op]["bio_frontmerges"];
        EXPECT_GE(count[op]["q2c"], 32u) << op << ": 2 x 2 MiB each way, merged up to the device's limit";
        EXPECT_LE(count[op]["q2c"], cmds_op) << op;
        std::string unstaged;
        for (const auto& [k, v] : cmds)
            for (const json* cm : v)
                if (std::get<0>(k) == op && !joined.count(cm)) unstaged += cm->dump() + "\n";
        EXPECT_GE(count[op]["q2c"] + front, cmds_op) << op << ": a staged command each, but front merges; not:\n"
                                                     << unstaged;
        EXPECT_GT(count[op]["g2i"], 0u) << op << ": inserted by mq-deadline";
        EXPECT_GT(count[op]["g2d"], 0u) << op << ": issued directly without a scheduler";
        for (const char* k : {"q2g", "g2i", "i2d", "g2d", "d2c", "q2c"}) {
            const auto [hc, hs] = bt_hist(*d, k, op);
            EXPECT_EQ(hc, count[op][k]) << op << " " << k;
            EXPECT_EQ(hs, sum[op][k]) << op << " " << k;
        }
    }
    EXPECT_GT((*be)["write"]["bio_backmerges"].get<uint64_t>(), 0u) << "the workload merges: " << be->dump();
}
