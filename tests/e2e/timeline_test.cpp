// `kvio trace --perfetto` and `kvio dump --perfetto` on a loop device with a known workload: the file follows the
// Chrome JSON trace-event rules (tests/timeline_check.h) and every command of the trace is one slice, once.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "tests/e2e/helpers.h"
#include "tests/timeline_check.h"

namespace kvio::test {
namespace {

using nlohmann::json;
using Key = std::tuple<std::string, uint64_t, uint64_t, uint64_t>;  // dev, sector, bytes, ts_issue relative (ns)

/// The cmd records of an events file as the timeline should show them (timestamps relative to `t0`).
std::vector<Key> cmd_keys(const std::vector<json>& ev, uint64_t t0) {
    std::vector<Key> k;
    for (const auto& e : ev)
        if (e["type"] == "cmd")
            k.emplace_back(e["dev"], e.contains("slba") ? e["slba"].get<uint64_t>() : e["sector"].get<uint64_t>(),
                           e["bytes"], e["ts_issue"].get<uint64_t>() - t0);
    std::sort(k.begin(), k.end());
    return k;
}

/// Checks `timeline` against the events file: format rules, every command once, the syscalls.
void expect_timeline_of(const std::string& timeline, const std::vector<json>& ev, uint64_t min_syscalls) {
    const json doc = json::parse(slurp(timeline));
    const TimelineCheck c = check_timeline(doc);
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
    const uint64_t t0 = doc["otherData"]["t0_ns"];
    std::vector<Key> got;
    for (const auto& [dev, where, bytes, ts] : c.cmds) got.emplace_back(dev, where, bytes, ts);
    std::sort(got.begin(), got.end());
    const std::vector<Key> want = cmd_keys(ev, t0);
    EXPECT_GE(want.size(), 20u);
    EXPECT_EQ(got, want);  // every command record once, none added
    EXPECT_GE(c.by_cat.count("syscall") ? c.by_cat.at("syscall") : 0, min_syscalls);
}

TEST(TimelineTrace, TracePerfettoShowsEveryCommandOnce) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices)";
    LoopDevice loop(64 << 20);
    TempDir t;
    const auto r =
        run(kvio_bin() + " trace -q -d " + loop.name + " --syscalls --events " + t.file("ev.jsonl") + " --perfetto " +
            t.file("t.json") + " -- dd if=/dev/zero of=" + loop.path + " bs=128k count=24 oflag=direct status=none");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("kvio trace: timeline " + t.file("t.json")), std::string::npos) << r.err;
    expect_timeline_of(t.file("t.json"), read_jsonl(t.file("ev.jsonl")), 24);  // dd's 24 writes, at least
}

// From a binary capture (kvio dump --perfetto), and kvio trace --perfetto without --events (temporary capture).
TEST(TimelineTrace, DumpPerfettoFromCapture) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices)";
    LoopDevice loop(64 << 20);
    TempDir t;
    const std::string dd = " -- dd if=/dev/zero of=" + loop.path + " bs=64k count=32 oflag=direct status=none";
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --syscalls --events " + t.file("cap.kvb") +
                 " --events-format bin" + dd);
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb") + " -o " + t.file("cap.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb") + " --perfetto " + t.file("t.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    expect_timeline_of(t.file("t.json"), read_jsonl(t.file("cap.jsonl")), 32);

    // --qd-sample 1 is the exact default, accepted as with --events (a sampling N > 1 is refused: Cli tests).
    r = run(kvio_bin() + " trace -q -d " + loop.name + " --qd-sample 1 --perfetto " + t.file("t2.json") + dd);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(std::filesystem::exists(t.file("t2.json.events.kvb")));  // the temporary capture is gone
    const TimelineCheck c = check_timeline(json::parse(slurp(t.file("t2.json"))));
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
    EXPECT_GE(c.by_cat.at("cmd"), 32u);
}

// A zstd-compressed capture reads as every other reader reads it (common/input_file), not as bad JSON.
TEST(TimelineTrace, DumpPerfettoFromZstdCapture) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices)";
    LoopDevice loop(64 << 20);
    TempDir t;
    auto r =
        run(kvio_bin() + " trace -q -d " + loop.name + " --syscalls --events " + t.file("cap.kvb.zst") +
            " --events-format bin -- dd if=/dev/zero of=" + loop.path + " bs=64k count=32 oflag=direct status=none");
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb.zst") + " -o " + t.file("cap.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb.zst") + " --perfetto " + t.file("t.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    expect_timeline_of(t.file("t.json"), read_jsonl(t.file("cap.jsonl")), 32);
}

// --perfetto X.zst (trace and dump) is zstd, as every .zst output: `zstd -dc` gives the timeline of every command.
TEST(TimelineTrace, PerfettoZstIsZstd) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices)";
    LoopDevice loop(64 << 20);
    TempDir t("/dev/shm");
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --events " + t.file("cap.kvb") +
                 " --events-format bin --perfetto " + t.file("t.json.zst") + " -- dd if=/dev/zero of=" + loop.path +
                 " bs=64k count=32 oflag=direct status=none");
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb") + " -o " + t.file("cap.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = run(kvio_bin() + " dump " + t.file("cap.kvb") + " --perfetto " + t.file("d.json.zst"));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* name : {"t.json.zst", "d.json.zst"}) {
        auto z = run("zstd -dc " + t.file(name) + " > " + t.file(std::string(name) + ".json"));
        ASSERT_EQ(z.status, 0) << name << ": " << z.err;
        expect_timeline_of(t.file(std::string(name) + ".json"), read_jsonl(t.file("cap.jsonl")), 0);
    }
}

// A --perfetto FILE in a missing directory is refused before tracing, by the user's path.
TEST(TimelineTrace, PerfettoInAMissingDirectoryIsRefusedUpFront) {
    TempDir t;
    const std::string out = t.file("no-such-dir/p.json");
    auto r = run(kvio_bin() + " trace --perfetto " + out + " --duration 0.1");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("--perfetto " + out + ": cannot write"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".events.kvb"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("tracing"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kvio::test
