// Known-answer tests of the job options issue 17 added: trim sections, per-device sections, rate_process=poisson,
// FUA / flush rules. Synthetic kvio.events/1 streams of a known shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "distiller/fio_job.h"
#include "distiller/multi_job.h"
#include "distiller/profile.h"
#include "distiller/target_limits.h"
#include "distiller/trims.h"

using namespace kvio;
using namespace kvio::distiller;
using nlohmann::json;

namespace {

// A kvio.events/1 file under /tmp, removed at destruction.
struct Events {
    std::string path;
    std::ofstream out;
    Events() {
        char t[] = "/tmp/kvio-distill-jobs-XXXXXX";
        close(mkstemp(t));
        path = t;
        out.open(path);
    }
    ~Events() { std::remove(path.c_str()); }
    void cmd(const std::string& op, const std::string& rwbs, uint64_t sector, uint64_t bytes, uint64_t issue,
             uint64_t d2c, const std::string& dev = "7:0", uint32_t tid = 100) {
        out << json{{"type", "cmd"},     {"src", "block"},
                    {"dev", dev},        {"disk", "loop" + dev.substr(2)},
                    {"op", op},          {"rwbs", rwbs},
                    {"sector", sector},  {"bytes", bytes},
                    {"ts_issue", issue}, {"ts_complete", issue + d2c},
                    {"d2c_ns", d2c},     {"pid", tid},
                    {"tid", tid},        {"comm", "fio"}}
                   .dump()
            << "\n";
    }
    void summary(uint64_t unmatched) {
        out << json{{"type", "summary"},    {"events", 1},        {"dropped", 0}, {"unmatched_completes", unmatched},
                    {"negative_deltas", 0}, {"lost_completes", 0}}
                   .dump()
            << "\n";
    }
    std::vector<EventTrace> load() {
        out.flush();
        return load_all_events(path, {});
    }
};

JobOptions opts(const std::string& filename = "/dev/loop9") {
    JobOptions o;
    o.filename = filename;
    o.nr_requests = 128;
    o.nr_requests_source = "test";
    return o;
}

// Sequential 4 KiB writes at QD 1, one every `gap` ns, from `t`; returns the time after the last.
uint64_t writes(Events& e, int n, uint64_t t, uint64_t gap, const std::string& rwbs = "WS",
                const std::string& dev = "7:0") {
    for (int i = 0; i < n; ++i, t += gap) e.cmd("write", rwbs, uint64_t(i) * 8, 4096, t, 30'000, dev);
    return t;
}

FioJob job_of(std::vector<EventTrace>& ts, std::vector<Profile>& ps, const std::vector<std::string>& targets,
              std::vector<DevicePlan>* plans = nullptr) {
    std::vector<DeviceJobInput> in(ts.size());
    ps.clear();
    for (auto& t : ts) ps.push_back(profile_events(t));
    for (size_t i = 0; i < ts.size(); ++i) in[i] = {&ts[i], &ps[i], opts(targets[i])};
    return make_job(in, in[0].opt, {}, plans);
}

std::vector<const FioSection*> io_sections(const FioJob& j) {
    std::vector<const FioSection*> v;
    for (const auto& s : j.sections)
        if (s.get("ioengine") != "null") v.push_back(&s);
    return v;
}

bool has(const FioSection& s, const std::string& key) {
    for (const auto& kv : s.options)
        if (kv.first == key) return true;
    return false;
}

}  // namespace

TEST(DistillRwbs, FlagsFromRwbs) {
    Cmd c;
    set_rwbs_flags("FWFS", c);
    EXPECT_TRUE(c.preflush && c.fua && !c.secure_erase);
    c = {};
    set_rwbs_flags("WS", c);
    EXPECT_FALSE(c.preflush || c.fua);
    c = {};
    set_rwbs_flags("WFS", c);
    EXPECT_TRUE(c.fua && !c.preflush);
    c = {};
    set_rwbs_flags("DE", c);
    EXPECT_TRUE(c.secure_erase && !c.fua);
    c = {};
    set_rwbs_flags("FF", c);  // a flush: neither flag
    EXPECT_FALSE(c.preflush || c.fua);
}

// A device with FUA: O_SYNC writes are FUA writes (rwbs WFS) and no flush command; before, the job lost the sync.
TEST(DistillFlush, FuaWritesBecomeSyncWrites) {
    Events e;
    writes(e, 300, 1'000'000, 100'000, "WFS");
    e.summary(0);
    auto ts = e.load();
    FioJob j = make_fio_job(profile_events(ts[0]), opts());
    EXPECT_EQ(j.get("sync"), "1") << j.text;
    EXPECT_EQ(j.get("fdatasync"), "");
}

// A device without FUA: 2 flush requests per write (dd oflag=direct,sync: the FUA emulation's post-flush and
// generic_write_sync's flush). fio libaio sync=1 alone gives 1 per write (measured), so the job adds fdatasync=1.
TEST(DistillFlush, TwoFlushesPerWriteAreSyncPlusFdatasync) {
    Events e;
    writes(e, 300, 1'000'000, 100'000);
    e.summary(600);
    auto ts = e.load();
    FioJob j = make_fio_job(profile_events(ts[0]), opts());
    EXPECT_EQ(j.get("sync"), "1") << j.text;
    EXPECT_EQ(j.get("fdatasync"), "1") << j.text;
    // One per write stays fdatasync=1 alone (fio sync=1 on libaio and fdatasync=1 look alike there).
    Events one;
    writes(one, 300, 1'000'000, 100'000);
    one.summary(300);
    ts = one.load();
    j = make_fio_job(profile_events(ts[0]), opts());
    EXPECT_EQ(j.get("sync"), "");
    EXPECT_EQ(j.get("fdatasync"), "1");
}

TEST(DistillTiming, PoissonArrivalsGetRateProcessPoisson) {
    Events e;
    std::mt19937_64 rng(7);
    std::exponential_distribution<double> gap(1.0 / 2e6);  // mean 2 ms: 500 IOPS
    uint64_t t = 1'000'000;
    for (int i = 0; i < 2000; ++i, t += 30'000 + uint64_t(gap(rng)))
        e.cmd("read", "R", uint64_t(i) * 7919 % 100000 * 8, 4096, t, 30'000);
    e.summary(0);
    auto ts = e.load();
    Profile p = profile_events(ts[0]);
    EXPECT_NEAR(p.arrivals.excess_cv, 1.0, 0.1);
    EXPECT_LT(p.arrivals.excess_ks, 0.05);
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("rate_process"), "poisson") << j.text;
    EXPECT_NEAR(std::stod(j.get("rate_iops")), 1e9 / (2e6 + 30'000), 15) << j.text;
    EXPECT_EQ(j.get("thinktime"), "");
    EXPECT_NE(j.text.find("timing model: Poisson arrivals"), std::string::npos);
}

// Poisson-like sync writes keep fdatasync and get no rate_process: fio 3.33 dies of SIGFPE with both (measured; a
// full-suite run of DistillPhases.SyncWritesStaySyncWrites hit it under load).
TEST(DistillTiming, PoissonSyncWritesKeepFdatasyncWithoutRateProcess) {
    Events e;
    std::mt19937_64 rng(7);
    std::exponential_distribution<double> gap(1.0 / 2e6);
    uint64_t t = 1'000'000;
    for (int i = 0; i < 2000; ++i, t += 30'000 + uint64_t(gap(rng)))
        e.cmd("write", "WS", uint64_t(i) * 8, 4096, t, 30'000);
    e.summary(2000);
    auto ts = e.load();
    FioJob j = make_fio_job(profile_events(ts[0]), opts());
    EXPECT_EQ(j.get("fdatasync"), "1") << j.text;
    EXPECT_EQ(j.get("rate_process"), "") << j.text;
    EXPECT_NE(j.text.find("crashes (SIGFPE) with rate_process=poisson and fdatasync"), std::string::npos) << j.text;
}

TEST(DistillTiming, RegularBurstsKeepThinktime) {
    Events e;
    uint64_t t = 1'000'000;
    for (int i = 0; i < 2000; ++i) {
        e.cmd("read", "R", uint64_t(i) * 7919 % 100000 * 8, 4096, t, 30'000);
        t += i % 4 == 3 ? 2'000'000 : 40'000;  // bursts of 4, then 2 ms
    }
    e.summary(0);
    auto ts = e.load();
    FioJob j = make_fio_job(profile_events(ts[0]), opts());
    EXPECT_EQ(j.get("rate_process"), "") << j.text;
    EXPECT_EQ(j.get("thinktime_blocks"), "4") << j.text;
    EXPECT_NE(j.text.find("timing model: thinktime (regular bursts), not Poisson"), std::string::npos) << j.text;
}

// A think-time stream on a loaded VM also stalls inside its bursts (fio thinktime=2000 thinktime_blocks=4 on a tmpfs
// loop device: gap p10 122-155 µs, p90 2.1 ms). The stalls are not think gaps and do not cut a burst.
TEST(DistillTiming, StallsInsideBurstsKeepThinktime) {
    Events e;
    std::mt19937_64 rng(11);
    uint64_t t = 1'000'000;
    for (int i = 0; i < 2000; ++i) {
        e.cmd("read", "R", uint64_t(i) * 7919 % 100000 * 8, 4096, t, 30'000);
        if (i % 4 == 3)
            t += 2'000'000 + rng() % 150'000;  // the think gap, with usleep's jitter
        else
            t += rng() % 100 < 15 ? 150'000 + rng() % 60'000 : 40'000;  // 15 % of the gaps inside a burst: a stall
    }
    e.summary(0);
    auto ts = e.load();
    Profile p = profile_events(ts[0]);
    ASSERT_GT(p.think_gaps_ns[p.think_gaps_ns.size() / 10], 0u);
    EXPECT_LT(p.think_gaps_ns[p.think_gaps_ns.size() / 10], 500'000u);  // the old p90 <= 4 x p10 rule fails here
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("rate_process"), "") << j.text;
    ASSERT_FALSE(j.get("thinktime").empty()) << j.text;
    EXPECT_NEAR(std::stod(j.get("thinktime")), 2045.0, 60.0) << j.text;
    EXPECT_EQ(j.get("thinktime_blocks"), "4") << j.text;
    EXPECT_NE(j.text.find("(the others: stalls inside bursts)"), std::string::npos) << j.text;
}

TEST(DistillTrim, RunOfDiscardsIsAStonewalledTrimSection) {
    Events e;
    uint64_t t = writes(e, 300, 1'000'000, 100'000);
    for (int i = 0; i < 200; ++i, t += 100'000)
        e.cmd("discard", i < 20 ? "DE" : "D", uint64_t(i) * 1024, 524288, t, 20'000);
    writes(e, 300, t, 100'000);
    e.summary(0);
    auto ts = e.load();
    ASSERT_EQ(trim_runs(ts[0].cmds).size(), 1u);
    std::vector<Profile> ps;
    std::vector<DevicePlan> plans;
    FioJob j = job_of(ts, ps, {"/dev/loop9"}, &plans);
    auto s = io_sections(j);
    ASSERT_EQ(s.size(), 3u) << j.text;
    EXPECT_EQ(s[0]->get("rw"), "write");
    EXPECT_EQ(s[1]->get("rw"), "trim") << j.text;  // every discard starts where the previous one ended
    EXPECT_EQ(s[1]->get("bssplit"), "512k/100");
    EXPECT_EQ(s[1]->get("number_ios"), "200");
    EXPECT_EQ(s[1]->get("fdatasync"), "");
    EXPECT_TRUE(has(*s[1], "stonewall"));
    EXPECT_TRUE(has(*s[2], "stonewall"));
    EXPECT_EQ(j.get("filename"), "/dev/loop9");  // one device: [global]
    EXPECT_NE(j.text.find("20 of them secure erases"), std::string::npos) << j.text;
    EXPECT_NE(j.text.find("200 discard commands in the trace"), std::string::npos) << j.text;  // not "read/write"
    EXPECT_EQ(plans[0].trims[0].discards, 200u);
}

// Discards scattered among writes do not form a trim phase (fio 3.33 mixes trims with writes only as trimwrite).
TEST(DistillTrim, InterleavedDiscardsAreNoTrimPhase) {
    Events e;
    uint64_t t = 1'000'000;
    for (int i = 0; i < 1000; ++i, t += 100'000) {
        if (i % 10 == 9)
            e.cmd("discard", "D", uint64_t(i) * 8, 4096, t, 20'000);
        else
            e.cmd("write", "WS", uint64_t(i) * 8, 4096, t, 30'000);
    }
    e.summary(0);
    auto ts = e.load();
    EXPECT_TRUE(trim_runs(ts[0].cmds).empty());
    std::vector<Profile> ps;
    FioJob j = job_of(ts, ps, {"/dev/loop9"});
    EXPECT_NE(j.text.find("100 discard/other commands are not reproduced"), std::string::npos) << j.text;
}

// Two devices at the same time: one section each, each on its own target, running together.
TEST(DistillDevices, OverlappingDevicesRunTogether) {
    Events e;
    writes(e, 300, 1'000'000, 100'000, "WS", "7:1");
    writes(e, 300, 1'050'000, 100'000, "WS", "7:2");
    e.summary(0);
    auto ts = e.load();
    ASSERT_EQ(ts.size(), 2u);
    std::vector<Profile> ps;
    std::vector<DevicePlan> plans;
    FioJob j = job_of(ts, ps, {"/dev/loop8", ""}, &plans);
    ASSERT_EQ(j.sections.size(), 2u) << j.text;
    EXPECT_EQ(j.sections[0].get("filename"), "/dev/loop8");
    EXPECT_FALSE(has(j.sections[1], "filename"));  // unmapped: fio's command line
    EXPECT_FALSE(has(j.sections[1], "stonewall")) << j.text;
    EXPECT_EQ(j.get("filename"), "");
    EXPECT_EQ(plans[0].group, plans[1].group);
    EXPECT_NE(j.text.find("filename is left to fio's command line for 7:2"), std::string::npos) << j.text;
}

// One device after the other: stonewalled; a device of several phases beside another keeps its order with wait_for.
TEST(DistillDevices, SequentialDevicesAreStonewalledAndPhasesUseWaitFor) {
    Events e;
    uint64_t t = writes(e, 300, 1'000'000, 100'000, "WS", "7:1");
    writes(e, 300, t + 200'000'000, 100'000, "WS", "7:2");
    e.summary(0);
    auto ts = e.load();
    std::vector<Profile> ps;
    FioJob j = job_of(ts, ps, {"/dev/loop8", "/dev/loop9"});
    auto s = io_sections(j);
    ASSERT_EQ(s.size(), 2u) << j.text;
    EXPECT_TRUE(has(*s[1], "stonewall")) << j.text;
    EXPECT_EQ(j.sections.size(), 3u) << j.text;  // and the 200 ms idle gap between them

    Events f;  // 7:1: 64 KiB writes then 4 KiB reads (two phases); 7:2 writes all the while
    t = 1'000'000;
    for (int i = 0; i < 400; ++i, t += 100'000) f.cmd("write", "WS", uint64_t(i) * 128, 65536, t, 30'000, "7:1");
    for (int i = 0; i < 400; ++i, t += 100'000)
        f.cmd("read", "R", uint64_t(i) * 7919 % 10000 * 8, 4096, t, 30'000, "7:1");
    writes(f, 800, 1'050'000, 100'000, "WS", "7:2");
    f.summary(0);
    ts = f.load();
    j = job_of(ts, ps, {"/dev/loop8", "/dev/loop9"});
    s = io_sections(j);
    ASSERT_EQ(s.size(), 3u) << j.text;
    for (const auto* x : s) EXPECT_FALSE(has(*x, "stonewall")) << j.text;
    EXPECT_EQ(s[1]->get("wait_for"), s[0]->name) << j.text;
    EXPECT_EQ(s[1]->get("filename"), "/dev/loop8");
    EXPECT_EQ(s[2]->get("filename"), "/dev/loop9");
}

// derive_section's table of derivers: one row per option, in the order a section writes them. A new option is
// added to the table, not written around it; a job's options follow the table's order in every section.
TEST(DistillTable, DeriversInFileOrder) {
    const std::vector<std::string> want = {"stonewall",
                                           "ioengine",
                                           "cmd_type",
                                           "filename",
                                           "direct",
                                           "rw",
                                           "rwmixread",
                                           "percentage_random",
                                           "norandommap",
                                           "bssplit",
                                           "bs_unaligned",
                                           "blockalign",
                                           "iodepth",
                                           "numjobs",
                                           "group_reporting",
                                           "iomem",
                                           "hugepage-size",
                                           "offset",
                                           "size",
                                           "rate_iops",
                                           "rate_process",
                                           "thinktime",
                                           "thinktime_blocks",
                                           "sync",
                                           "fdatasync",
                                           "flow_id",
                                           "flow",
                                           "io_size",
                                           "number_ios",
                                           "loops",
                                           "randrepeat",
                                           "time_based",
                                           "runtime"};
    const std::vector<std::string> got = derived_options();
    EXPECT_EQ(got, want);
    Events e;
    uint64_t t = writes(e, 300, 1'000'000, 100'000, "WFS");
    for (int i = 0; i < 300; ++i, t += 50'000) e.cmd("read", "R", uint64_t(i) * 64, 32768, t, 40'000);
    e.summary(0);
    auto ts = e.load();
    std::vector<Profile> ps;
    for (JobMode mode : {JobMode::Count, JobMode::Time}) {
        JobOptions o = opts();
        o.mode = mode;
        SectionSpec spec;
        std::vector<std::string> ni;
        const FioSection s = derive_section(profile_events(ts[0]), o, spec, ni);
        size_t at = 0;
        for (const auto& [k, v] : s.options) {
            const auto it = std::find(got.begin() + long(at), got.end(), k);
            ASSERT_NE(it, got.end()) << k << " is not in the table, or out of its order";
            at = size_t(it - got.begin()) + 1;
        }
    }
    FioJob j = job_of(ts, ps, {"/dev/loop9"});
    for (const auto& s : j.sections) {
        size_t at = 0;
        for (const auto& [k, v] : s.options) {
            if (s.get("ioengine") == "null") break;  // idle sections are not derived
            const auto it = std::find(got.begin() + long(at), got.end(), k);
            ASSERT_NE(it, got.end()) << s.name << ": " << k << " out of the table's order";
            at = size_t(it - got.begin()) + 1;
        }
    }
}

// Commands above max_segments x 4 KiB (128 x 4 KiB = 512 KiB when the target is unknown) get huge-page buffers, and
// the job header says the level and what a target needs; at 512 KiB a buffer of scattered pages suffices.
TEST(DistillTargetLimits, LargeCommandsGetHugePageBuffers) {
    for (uint64_t kib : {512ull, 1280ull}) {
        Events e;
        for (int i = 0; i < 300; ++i)
            e.cmd("read", "R", uint64_t(i) * 7919 % 100 * (kib * 2), kib << 10, 1'000'000 + uint64_t(i) * 1'000'000,
                  500'000);
        e.summary(0);
        auto ts = e.load();
        const FioJob job = make_fio_job(profile_events(ts[0]), opts());
        EXPECT_EQ(job.get("iomem"), kib > 512 ? "shmhuge" : "") << job.text;
        EXPECT_EQ(job.get("hugepage-size"), kib > 512 ? "2m" : "") << job.text;
        EXPECT_EQ(huge_pages_needed(job), kib > 512 ? 2u : 0u) << job.text;  // iodepth 1: ceil(1284 KiB / 2 MiB) + 1
        EXPECT_NE(job.text.find("; level: device"), std::string::npos) << job.text;
        EXPECT_NE(job.text.find("; target needs: max_sectors_kb >= " + std::to_string(kib)), std::string::npos)
            << job.text;
    }
}

// The device-level header says what a target with other limits will not reproduce and what to set: 1280 KiB and
// 6 KiB commands need max_sectors_kb >= 1280 and a logical block size <= 2048 (the largest power of 2 dividing both).
TEST(DistillTargetLimits, HeaderSaysWhatATargetWithOtherLimitsWillNotReproduce) {
    Events e;
    for (int i = 0; i < 100; ++i)
        e.cmd("read", "R", uint64_t(i) * 4096, (i % 2 ? 1280ull : 6ull) << 10, 1'000'000 + uint64_t(i) * 1'000'000,
              500'000);
    e.summary(0);
    auto ts = e.load();
    const FioJob job = make_fio_job(profile_events(ts[0]), opts("/tmp/kvio-not-a-block-device"));
    for (const char* says :
         {"; target needs: max_sectors_kb >= 1280 (the largest command, 1280k), max_segments x max_segment_size >= "
          "that, logical_block_size <= 2048 (the sizes' largest power-of-2 divisor)",
          "; on a target with smaller limits the commands above them are split (the replay's size TV counts them): "
          "raise `/sys/block/DEV/queue/max_sectors_kb` up to its max_hw_sectors_kb; a drive whose max_hw_sectors_kb, "
          "max_segments x max_segment_size or logical block size does not allow them will not reproduce those sizes"})
        EXPECT_NE(job.text.find(says), std::string::npos) << says << "\n" << job.text;
}

// fio 3.33's huge pages per job (measured: the fewest it started with) and a job's need: the largest sum over the
// sections that run together (a stonewall starts a group).
TEST(DistillTargetLimits, HugePagesNeeded) {
    EXPECT_EQ(huge_pages_for(1, 1 << 20, 1), 2u);
    EXPECT_EQ(huge_pages_for(2, 1 << 20, 1), 3u);
    EXPECT_EQ(huge_pages_for(8, 1 << 20, 1), 6u);
    EXPECT_EQ(huge_pages_for(4, 512 << 10, 1), 3u);
    EXPECT_EQ(huge_pages_for(4, 1280 << 10, 1), 4u);
    EXPECT_EQ(huge_pages_for(4, 1280 << 10, 3), 12u);
    FioJob job;
    job.sections.push_back({"a", "", {{"bssplit", "256k/26:1280k/74"}, {"iodepth", "4"}, {"iomem", "shmhuge"}}, {}});
    job.sections.push_back({"b", "", {{"bssplit", "1m/100"}, {"iodepth", "2"}, {"iomem", "shmhuge"}}, {}});
    job.sections.push_back({"c",
                            "",
                            {{"stonewall", ""},
                             {"bssplit", "4k/50:8k/50,1m/100"},
                             {"iodepth", "8"},
                             {"numjobs", "2"},
                             {"iomem", "shmhuge"}},
                            {}});
    job.sections.push_back({"d", "", {{"stonewall", ""}, {"bs", "4k"}, {"iodepth", "32"}}, {}});
    EXPECT_EQ(huge_pages_needed(job), 12u);  // a + b = 4 + 3 = 7; c = 6 x 2 = 12; d needs none
}
