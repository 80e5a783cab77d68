// Known-shape tests of the job options of issue 17 on loop devices over tmpfs: trim phases, two devices at once,
// Poisson arrivals, synchronous writes. Each fio job is traced with `kvio trace`, distilled and (but the timing tests)
// replayed under trace with `--verify`; every job passes `fio --parse-only`.
#include <gtest/gtest.h>

#include <algorithm>

#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t kLoopBytes = 256ull << 20;

// A source and a target loop device, their backing files in `dir` (tmpfs by default).
struct Loops {
    explicit Loops(const std::string& dir = "/dev/shm") : src(kLoopBytes, true, dir), dst(kLoopBytes, true, dir) {}
    TempDir d;
    LoopDevice src, dst;
    std::string job(const std::string& name, const std::string& body) {
        std::ofstream(d.file(name)) << body;
        return d.file(name);
    }
};

// Traces `cmd` on the disks `devs` into src.jsonl; returns the path.
std::string trace(Loops& l, const std::vector<const LoopDevice*>& devs, const std::string& cmd) {
    std::string d;
    for (const auto* x : devs) d += " -d " + x->name;
    auto t = run("nice -n -20 " + kvio_bin() + " trace -q" + d + " --events " + l.d.file("src.jsonl") + " -- " + cmd);
    EXPECT_EQ(t.status, 0) << t.err << t.out;
    return l.d.file("src.jsonl");
}

// Distills src.jsonl with `args` into job.ini (+ --json d.json); checks fio --parse-only; returns the JSON.
json distill(Loops& l, const std::string& args) {
    auto r = run("nice -n -20 " + kvio_bin() + " distill --events " + l.d.file("src.jsonl") + " -o " +
                 l.d.file("job.ini") + " --json " + l.d.file("d.json") + " " + args);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    std::cerr << r.out;
    auto p = run("fio --parse-only " + l.d.file("job.ini"));
    EXPECT_EQ(p.status, 0) << "fio --parse-only rejected the job: " << p.err << "\n" << slurp(l.d.file("job.ini"));
    return json::parse(slurp(l.d.file("d.json")));
}

std::vector<json> sections(const json& j) {
    std::vector<json> v;
    for (const auto& s : j["job"].value("sections", json::array()))
        if (s["options"].value("ioengine", "") != "null") v.push_back(s["options"]);
    return v;
}

}  // namespace

// A write phase, then (stonewall) a random-trim phase: the distilled job has a stonewalled randtrim section and its
// replay issues the trace's discards (count within 2 %, sizes).
TEST(DistillJobs, TrimPhaseAfterWritePhase) {
    Loops l;
    std::string job = l.job("src.ini", "[global]\nfilename=" + l.src.path +
                                           "\nioengine=libaio\ndirect=1\nsize=64M\n[w]\nrw=write\nbs=64k\nio_size=32M\n"
                                           "[t]\nstonewall\nrw=randtrim\nbs=64k\nnorandommap=1\nnumber_ios=600\n");
    trace(l, {&l.src}, "fio --output=/dev/null " + job);
    json j = distill(l, "--filename " + l.dst.path + " --verify");
    std::string text = slurp(l.d.file("job.ini"));
    auto s = sections(j);
    ASSERT_EQ(s.size(), 2u) << text;
    EXPECT_EQ(s[0]["rw"], "write");
    EXPECT_EQ(s[1]["rw"], "randtrim") << text;
    EXPECT_TRUE(s[1].contains("stonewall")) << text;
    EXPECT_EQ(s[1]["bssplit"], "64k/100");
    EXPECT_EQ(s[1]["number_ios"], "600");
    const json& v = j["verify"]["discards"];
    std::cerr << "discards: " << v.dump() << "\n";
    EXPECT_EQ(v["orig"].get<uint64_t>(), 600u);
    EXPECT_LE(v["err_pct"].get<double>(), 2.0) << v.dump();
    EXPECT_EQ(v["size_tv"].get<double>(), 0.0) << v.dump();
    EXPECT_EQ(j["verify"]["size_tv"]["write"].get<double>(), 0.0);
}

// fio writing to two loop devices at once (two jobs), traced with -d A -d B, distilled with a mapping per device and
// verified on two other loop devices: a section per device on its own target, running together.
TEST(DistillJobs, TwoDevicesAtOnce) {
    // The reader's devices are backed by written data on the disk of /var/tmp, so that its depth is fio's iodepth: on
    // tmpfs a read takes ~8 µs, less than fio's turn around it, and the reader's depth was the scheduler's (the trace
    // went through depths 1, 4, 2 and the replay stayed at 1 on a quiet 2-core VM: 1 run of 6).
    Loops a("/var/tmp"), b;
    for (const auto* dev : {&a.src, &a.dst}) ASSERT_EQ(dev->fill(64), 0);
    std::string job = a.job("src.ini",
                            "[global]\nioengine=libaio\ndirect=1\nsize=64M\nnorandommap=1\n"
                            "[a]\nfilename=" +
                                a.src.path +
                                "\nrw=randread\nbs=4k\niodepth=4\nnumber_ios=4000\n"
                                "[b]\nfilename=" +
                                b.src.path + "\nrw=write\nbs=64k\niodepth=1\nio_size=48M\n");
    trace(a, {&a.src, &b.src}, "fio --output=/dev/null " + job);
    // One target for two devices, or a device that is not in the trace: refused before anything runs.
    auto r = run(kvio_bin() + " distill --events " + a.d.file("src.jsonl") + " --filename " + a.dst.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("map each with --filename DEV=PATH"), std::string::npos) << r.err;
    r = run(kvio_bin() + " distill --events " + a.d.file("src.jsonl") + " --filename loop99999=" + a.dst.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("no device loop99999 in the trace"), std::string::npos) << r.err;
    r = run(kvio_bin() + " distill --events " + a.d.file("src.jsonl") + " --filename =" + a.dst.path);
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("the mapping's device part (before '=') is empty: give DEV=PATH"), std::string::npos) << r.err;
    // Both devices on one target: a job without --verify, but a warning (their writes would meet there).
    r = run(kvio_bin() + " distill --events " + a.d.file("src.jsonl") + " --filename " + a.src.name + "=" + a.dst.path +
            " --filename " + b.src.majmin + "=" + a.dst.path + " -o " + a.d.file("shared.ini"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("are both mapped to " + a.dst.path + ": their sections would write over each other's data"),
              std::string::npos)
        << r.err;
    r = run(kvio_bin() + " distill --events " + a.d.file("src.jsonl") + " --filename " + a.src.name + "=" + a.dst.path +
            " --verify");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("has no target: give --filename " + b.src.majmin + "=PATH"), std::string::npos) << r.err;

    json j = distill(a, "--filename " + a.src.name + "=" + a.dst.path + " --filename " + b.src.majmin + "=" +
                            b.dst.path + " --verify");
    std::string text = slurp(a.d.file("job.ini"));
    // A section per device, or more: a traced reader starved of CPU on a loaded VM is two phases of its device (on
    // tmpfs, in one run its last 622 of 4000 reads at a median depth of 1 after 3: 2 runs of 20 with stress-ng --cpu 2
    // beside), in order with wait_for; each device's sections together issue its commands.
    auto s = sections(j);
    ASSERT_GE(s.size(), 2u) << text;
    uint64_t ios[2] = {0, 0};  // [reads, writes]
    for (const auto& o : s) {
        EXPECT_FALSE(o.contains("stonewall")) << text;  // they overlapped in time
        bool reads = o["rw"] == "randread";
        EXPECT_TRUE(reads || o["rw"] == "write") << text;
        EXPECT_EQ(o["filename"], reads ? a.dst.path : b.dst.path) << text;
        EXPECT_GE(std::stoi(o["iodepth"].get<std::string>()), 1) << text;
        ios[!reads] += std::stoull(o["number_ios"].get<std::string>());
    }
    EXPECT_EQ(ios[0], 4000u) << text;
    EXPECT_EQ(ios[1], 768u) << text;
    const json& devs = j["verify"]["devices"];
    ASSERT_EQ(devs.size(), 2u) << j["verify"].dump();
    for (const auto& d : devs) {
        std::cerr << d["dev"] << ": " << d["summary"].get<std::string>() << "\n";
        EXPECT_EQ(d["target"], d["dev"] == a.src.majmin ? a.dst.path : b.dst.path);
        EXPECT_LE(std::max(d["size_tv"]["read"].get<double>(), d["size_tv"]["write"].get<double>()), 0.0) << d.dump();
        for (const auto& e : d["time_resolved"]["phases"]["volume_err_pct"])
            EXPECT_LE(e.get<double>(), 2.0) << d.dump();
        // The depth median within 1 (the bound), trace against replay (with two CPU hogs beside it the loop
        // driver's worker is starved too, and the traced reader's median fell to 2: the job follows the trace).
        const json& dm = d["time_resolved"]["phases"]["depth_median"];
        ASSERT_EQ(dm["orig"].size(), dm["replay"].size()) << d.dump();
        for (size_t i = 0; i < dm["orig"].size(); ++i)
            EXPECT_LE(std::abs(dm["orig"][i].get<int>() - dm["replay"][i].get<int>()), 1) << d.dump();
        EXPECT_LE(d["rwmix_err_points"].get<double>(), 0.0) << d.dump();
    }
}

// rate_iops=500 rate_process=poisson becomes rate_process=poisson with the measured rate (within 10 %); a regular
// thinktime job keeps its thinktime and gets no rate. The traced fio runs SCHED_FIFO: at load 10 a CFS fio's gaps
// were stretched by the scheduler until neither pattern was in the trace (3 of 3 runs failed; 4 of 4 passed with it).
TEST(DistillJobs, PoissonArrivalsGetRateProcessPoisson) {
    Loops l;
    std::string g = "[global]\nfilename=" + l.src.path +
                    "\nioengine=libaio\ndirect=1\nsize=64M\nnorandommap=1\nrw=randread\nbs=4k\n";
    trace(l, {&l.src},
          "chrt -f 20 fio --output=/dev/null " +
              l.job("p.ini", g + "[p]\nrate_iops=500\nrate_process=poisson\nnumber_ios=1500\n"));
    json j = distill(l, "");
    std::string text = slurp(l.d.file("job.ini"));
    EXPECT_EQ(j["job"].value("rate_process", ""), "poisson") << text;
    ASSERT_FALSE(j["job"].value("rate_iops", "").empty()) << text;
    // The job carries the rate the trace shows: fio starved of CPU issued 416/s once where 500 was asked (the test
    // then failed on the job's faithful 416), so the reference is the traced reads' own rate.
    std::vector<uint64_t> issued;
    for (const json& c : read_jsonl(l.d.file("src.jsonl")))
        if (c.value("op", "") == "read") issued.push_back(c["ts_issue"].get<uint64_t>());
    ASSERT_GT(issued.size(), 1000u);
    std::sort(issued.begin(), issued.end());
    const double traced = (issued.size() - 1) * 1e9 / double(issued.back() - issued.front());
    std::cerr << "traced read rate " << traced << "/s\n";
    EXPECT_NEAR(std::stod(j["job"]["rate_iops"].get<std::string>()), traced, 0.1 * traced) << text;
    EXPECT_LE(traced, 550.0);  // fio never exceeds the rate it was given
    EXPECT_EQ(j["job"].value("thinktime", ""), "") << text;

    trace(l, {&l.src},
          "chrt -f 20 fio --output=/dev/null " +
              l.job("t.ini", g + "[t]\nthinktime=2000\nthinktime_blocks=4\nnumber_ios=1500\n"));
    j = distill(l, "");
    text = slurp(l.d.file("job.ini"));
    EXPECT_EQ(j["job"].value("rate_process", ""), "") << text;
    // fio's usleep(2000) and its return are the device's idle gap (2034-2079 µs measured); a stall inside a burst does
    // not cut it, so the blocks are fio's.
    ASSERT_FALSE(j["job"].value("thinktime", "").empty()) << text;
    EXPECT_NEAR(std::stod(j["job"]["thinktime"].get<std::string>()), 2100.0, 200.0) << text;
    EXPECT_EQ(j["job"].value("thinktime_blocks", ""), "4") << text;
}

// dd oflag=direct,sync on a loop device (no FUA): two flush requests per write. The job must make the replay issue
// as many (sync=1 alone gives one per write with libaio, measured).
TEST(DistillJobs, SyncWritesStaySyncWrites) {
    Loops l;
    trace(l, {&l.src}, "dd if=/dev/zero of=" + l.src.path + " bs=4k count=400 oflag=direct,sync status=none");
    json j = distill(l, "--filename " + l.dst.path + " --verify");
    std::string text = slurp(l.d.file("job.ini"));
    EXPECT_EQ(j["job"].value("sync", ""), "1") << text;
    const json& f = j["verify"]["flushes_per_write"];
    std::cerr << "flushes per write: " << f.dump() << "\n";
    EXPECT_NEAR(f["orig"].get<double>(), 2.0, 0.05) << f.dump();
    EXPECT_NEAR(f["replay"].get<double>(), f["orig"].get<double>(), 0.1 * f["orig"].get<double>()) << f.dump() << "\n"
                                                                                                   << text;
}
