// kvio trace --breakdown: the merge, split and requeue counts equal what tracefs records for the same events on the
// same run (a private tracefs instance, filtered to the test's loop device).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <map>
#include <sstream>

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

