// Device-level jobs (docs/distill.md "Sizes the target must not split", the `iodepth` row): fio jobs of a known
// shape traced on one loop device, distilled, and (where a replay is asserted) `--verify`ed on another. A closed-loop
// section's iodepth is the depth its submitter kept; commands larger than max_segments x 4 KiB reach the replay's
// device whole; a depth that changes inside one direction mix keeps its phases and depth over time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/e2e/distill_helpers.h"
#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

using Loops = DistillLoops;

std::string write_file(const Loops& l, const std::string& name, const std::string& body) {
    std::ofstream(l.d.file(name)) << body;
    return l.d.file(name);
}

// The iodepth that most of each part's commands were given: parts are ranges [from, to) of command numbers, counted by
// the sections' number_ios (a stall of the loaded VM inside a part is a short section of its own depth). With
// `deepest`, the largest iodepth among sections holding at least 10 % of the part instead: a submitter starved of CPU
// keeps fewer commands at the device than its depth for a while (in CI, 4867 of a QD-32 reader's 8000 commands ran at
// 9), and the job follows the device; the submitter's own depth is then its deepest section's.
std::vector<std::string> depth_of(const json& j, const std::vector<std::pair<uint64_t, uint64_t>>& parts,
                                  bool deepest = false) {
    std::vector<std::string> out;
    for (const auto& [from, to] : parts) {
        std::map<std::string, uint64_t> by_depth;
        uint64_t at = 0;
        for (const auto& o : io_sections(j)) {
            const uint64_t n = std::stoull(o["number_ios"].get<std::string>());
            const uint64_t lo = std::max(at, from), hi = std::min(at + n, to);
            if (hi > lo) by_depth[o["iodepth"].get<std::string>()] += hi - lo;
            at += n;
        }
        auto best = std::max_element(by_depth.begin(), by_depth.end(),
                                     [](const auto& x, const auto& y) { return x.second < y.second; });
        if (deepest) {
            uint64_t depth = 0;
            for (const auto& [d, n] : by_depth)
                if (n * 10 >= to - from) depth = std::max<uint64_t>(depth, std::stoull(d));
            out.push_back(depth ? std::to_string(depth) : "");
            continue;
        }
        out.push_back(best == by_depth.end() ? "" : best->first);
    }
    return out;
}

// Whether a --verify's replay has the trace's phases, in order, each phase's median depth within 1 of the trace's.
bool replay_follows_phases(const json& j) {
    const json& ph = j["verify"]["time_resolved"]["phases"];
    if (ph["replay"] != ph["orig"] || !ph["in_order"].get<bool>()) return false;
    const json &o = ph["depth_median"]["orig"], &r = ph["depth_median"]["replay"];
    if (o.size() != r.size()) return false;
    for (size_t i = 0; i < o.size(); ++i)
        if (std::abs(o[i].get<int>() - r[i].get<int>()) > 1) return false;
    return true;
}

// vm.nr_hugepages raised by `pages` for the source fio run (iomem=shmhuge), restored at destruction.
struct HugePages {
    long old = -1;
    explicit HugePages(long pages) {
        std::ifstream("/proc/sys/vm/nr_hugepages") >> old;
        std::ofstream("/proc/sys/vm/nr_hugepages") << old + pages << "\n";
    }
    ~HugePages() { std::ofstream("/proc/sys/vm/nr_hugepages") << old << "\n"; }
};

}  // namespace

// fio readers at QD 1, 4 and 32 (one direction mix, 0.3 s apart: the idle gap cuts the phases, so this asserts the
// depth rule, not the phase detector): each part's sections get its submitter's depth.
// The device saw a spread below it (batched reaping: a QD-4 reader's median was 3 in some runs, a QD-32 reader's
// windows alternated between medians 3 and 32 on this loaded VM); the p90 of the in-flight count is the depth kept.
TEST(DistillDevice, IodepthIsTheSubmittersDepth) {
    Loops l;
    ASSERT_EQ(l.src.fill(64), 0);
    std::string g = "[global]\nfilename=" + l.src.path +
                    "\nioengine=libaio\ndirect=1\nsize=64M\nnorandommap=1\nrw=randread\nbs=4k\nio_size=1G\n";
    std::string cmd;
    for (const auto& [qd, n] : {std::pair{"1", "2000"}, {"4", "4000"}, {"32", "8000"}})
        cmd += std::string(cmd.empty() ? "" : "; sleep 0.3; ") + "fio --output=/dev/null " +
               write_file(l, std::string("qd") + qd + ".ini", g + "[r]\niodepth=" + qd + "\nnumber_ios=" + n + "\n");
    // A QD-32 reader starved of CPU refills its depth late: in a CI run at load ~8 the p90 of its commands in flight
    // was 30 in its deepest sections, so that part's depth is asserted within 10 % below 32 (a job at the device's
    // median, 9 in another CI run, or at 16 is still caught). In a fresh-clone CI run (2026-12-06, the other shard
    // beside it) the trace itself held the QD-32 part at 16 for most of it (5 phases): a trace whose job misses a depth
    // is taken again, at most twice, so the test asserts the distiller gives the submitter's depth from a trace that
    // shows it, which a distiller taking the device's median never does.
    json j;
    std::vector<std::string> depths;
    for (int traces = 0; traces < 3; ++traces) {
        if (traces)
            std::cerr << "the job's depths " << depths[0] << " / " << depths[1] << " / " << depths[2]
                      << " for readers at 1 / 4 / 32: traced again\n";
        j = trace_and_distill(l, cmd, "");
        depths = depth_of(j, {{0, 2000}, {2000, 6000}, {6000, 14000}}, true);
        if (depths.size() == 3 && depths[0] == "1" && depths[1] == "4" && !depths[2].empty() &&
            std::stoi(depths[2]) >= 29)
            break;
    }
    const std::string text = slurp(l.d.file("job.ini"));
    ASSERT_EQ(depths.size(), 3u);
    EXPECT_EQ(depths[0], "1") << text;
    EXPECT_EQ(depths[1], "4") << text;
    ASSERT_FALSE(depths[2].empty()) << text;
    EXPECT_GE(std::stoi(depths[2]), 29) << text;
    EXPECT_LE(std::stoi(depths[2]), 32) << text;
}

// Reads at QD 1, then 8, then 1 (one mix: 4 KiB random reads): phases of depths 1, 8, 1 in the job and a replay whose
// phases match the trace's, each phase's median depth within 1. The traced fio and the replay run realtime()
// (docs/testing.md, "Workloads at real-time priority"): starved of CPU, fio dropped to depth 1-2 inside the QD-8 part
// (an extra phase) and the worst window's depth TV was 0.61-0.65 in 3 runs beside stress-ng --cpu 2; at real-time
// priority, 15 runs beside stress-ng --cpu 2 (load 6-28) gave phases 3 -> 3 every time, a worst window depth TV of
// 0.01-0.28 (printed), and in the 5 that printed them phase depth medians 1 / 5 / 1 in trace and replay. The whole
// run's time-weighted queue-depth TV is printed, not bounded: it follows how long the loop device's worker (an ordinary
// kernel thread, not isolated) takes per command, and reached 0.49 in a replay whose every window matched (worst window
// 0.04); two traces of this very job differ by up to 0.37 under load and 0.28 across devices quiet (docs/distill.md,
// "The workload against itself"). docs/distill.md, "Depth over time".
TEST(DistillDevice, DepthAlternatesOneEightOne) {
    Loops l;
    ASSERT_EQ(l.src.fill(64), 0);
    ASSERT_EQ(l.dst.fill(64), 0);
    std::string g = "[global]\nfilename=" + l.src.path +
                    "\nioengine=libaio\ndirect=1\nsize=64M\nnorandommap=1\nrw=randread\nbs=4k\nio_size=1G\n";
    const std::string job = write_file(l, "src.ini",
                                       g + "[a]\niodepth=1\nnumber_ios=2000\n[b]\nstonewall\niodepth=8\nnumber_ios="
                                           "6000\n[c]\nstonewall\niodepth=1\nnumber_ios=2000\n");
    json j = trace_and_distill(l, "fio --output=/dev/null " + job, "--verify --force");
    // A replay whose phases differ from the trace's is replayed again, at most twice: the test asserts that the job
    // can reproduce the trace's depth over time, which a job of wrong depths never does, while one replay on a busy
    // host may not (docs/testing.md: in 1 run of 8 beside a buffered writeback test, depth-1 dips the device showed
    // inside the QD-8 part, in the trace and again in its replay at other places, with fio at real-time priority).
    for (int replays = 1; replays < 3 && !replay_follows_phases(j); ++replays) {
        std::cerr << "replay " << replays << " did not follow the trace's phases: "
                  << j["verify"]["time_resolved"]["phases"]["depth_median"].dump() << "; replayed again\n";
        j = distill_traced(l, "--verify --force");
    }
    const std::string text = slurp(l.d.file("job.ini"));
    const json& ph = j["verify"]["time_resolved"]["phases"];
    std::cerr << "fidelity: " << j["verify"]["summary"].get<std::string>() << "\n";
    EXPECT_EQ(depth_of(j, {{0, 2000}, {2000, 8000}, {8000, 10000}}), (std::vector<std::string>{"1", "8", "1"})) << text;
    EXPECT_GE(ph["orig"].get<size_t>(), 3u) << ph.dump(1);
    EXPECT_EQ(ph["replay"], ph["orig"]) << ph.dump(1);
    EXPECT_TRUE(ph["in_order"].get<bool>()) << ph.dump(1);
    // Each phase's median depth, the replay's within 1 of the trace's: a QD-8 phase replayed at depth 1 fails.
    ASSERT_EQ(ph["depth_median"]["orig"].size(), ph["depth_median"]["replay"].size()) << ph.dump(1);
    for (size_t i = 0; i < ph["depth_median"]["orig"].size(); ++i)
        EXPECT_LE(std::abs(ph["depth_median"]["orig"][i].get<int>() - ph["depth_median"]["replay"][i].get<int>()), 1)
            << ph.dump(1);
    std::cerr << "depth medians " << ph["depth_median"].dump() << ", whole-run queue-depth TV " << j["verify"]["qd_tv"]
              << " (printed, not bounded)\n";
}

// 1280 KiB (and 256 KiB) reads at QD 4, then 1 MiB writes at QD 2: above max_segments x 4 KiB = 512 KiB of a loop
// device, so a buffer of scattered pages is split (the replay saw 512 + 512 + 256 KiB: size TV read 0.74, write 1.0).
// The job's huge-page buffers (iomem=shmhuge) keep them whole; its header says what a target needs.
TEST(DistillDevice, LargeCommandsReachTheirSizes) {
    Loops l;
    ASSERT_EQ(l.src.fill(128), 0);
    ASSERT_EQ(l.dst.fill(128), 0);
    const std::string job = write_file(l, "src.ini",
                                       "[global]\nfilename=" + l.src.path +
                                           "\nioengine=libaio\ndirect=1\nsize=128M\nnorandommap=1\niomem=shmhuge\n"
                                           "[r]\nrw=randread\nbssplit=1280k/80:256k/20\niodepth=4\nnumber_ios=400\n"
                                           "io_size=4G\n[w]\nstonewall\nrw=write\nbs=1m\niodepth=2\nnumber_ios=100\n"
                                           "io_size=1G\n");
    json j;
    {
        HugePages source_buffers(8);  // the source's own 1280 KiB commands need them too (4: fio 3.33, measured)
        auto t = run("nice -n -20 " + kvio_bin() + " trace -q -d " + l.src.name + " --events " + l.d.file("src.jsonl") +
                     " -- fio --output=/dev/null " + job);
        ASSERT_EQ(t.status, 0) << t.err << t.out;
    }
    auto r = run("nice -n -20 " + kvio_bin() + " distill --events " + l.d.file("src.jsonl") + " --dev " + l.src.majmin +
                 " --filename " + l.dst.path + " -o " + l.d.file("job.ini") + " --json " + l.d.file("d.json") +
                 " --verify --force");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    std::cerr << r.out;
    EXPECT_EQ(run("fio --parse-only " + l.d.file("job.ini")).status, 0);
    j = json::parse(slurp(l.d.file("d.json")));
    const std::string text = slurp(l.d.file("job.ini"));
    for (const auto& o : io_sections(j)) EXPECT_EQ(o.value("iomem", ""), "shmhuge") << text;
    EXPECT_NE(text.find("; level: device"), std::string::npos) << text;
    EXPECT_NE(text.find("target needs: max_sectors_kb >= 1280"), std::string::npos) << text;
    const json& v = j["verify"];
    EXPECT_LE(v["size_tv"]["read"].get<double>(), 0.1) << v.dump();
    EXPECT_LE(v["size_tv"]["write"].get<double>(), 0.1) << v.dump();
    size_t whole = 0;  // replayed commands of 1280 KiB
    for (const auto& c : read_jsonl(l.d.file("job.ini.replay.jsonl")))
        whole += c.value("type", "") == "cmd" && c.value("bytes", 0ull) == 1280ull << 10;
    EXPECT_GE(whole, 200u) << "of about 320 traced";
}
