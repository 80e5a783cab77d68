// Known-answer tests of the distiller: synthetic kvio.events/1 streams with a known shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/event_trace.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "distiller/phased_job.h"
#include "distiller/rounding.h"
#include "distiller/timeline.h"
#include "distiller/verify.h"
#include "tests/event_lines.h"

using namespace kvio;
using namespace kvio::distiller;
using nlohmann::json;

namespace {

// A kvio.events/1 file under /tmp, removed at destruction.
struct EventsFile {
    std::string path;
    std::ofstream out;
    EventsFile() {
        char t[] = "/tmp/kvio-distill-XXXXXX";
        int fd = mkstemp(t);
        close(fd);
        path = t;
        out.open(path);
    }
    ~EventsFile() { std::remove(path.c_str()); }
    void cmd(const char* op, uint64_t sector, uint64_t bytes, uint64_t issue, uint64_t complete, uint32_t tid = 100,
             const char* dev = "7:0", const char* comm = "fio") {
        out << kvio::test::cmd_line(op, sector, bytes, issue, complete, tid, dev, "loop0", comm) << "\n";
    }
    void raw(const std::string& line) { out << line << "\n"; }
    EventTrace load(const EventFilter& f = {}) {
        out.flush();
        return load_events(path, f);
    }
};

JobOptions opts() {
    JobOptions o;
    o.filename = "/dev/loop9";
    o.nr_requests = 128;
    o.nr_requests_source = "test";
    return o;
}

// Closed loop at queue depth `qd`: each slot reissues the moment its command completes.
// Command i is a read (128 KiB, 200 µs) when i % 10 < 7, else a write (512 KiB, 600 µs); random offsets.
void closed_loop_70_30(EventsFile& ef, int n, int qd) {
    std::vector<uint64_t> slot_free(qd, 1'000'000);
    uint64_t lcg = 12345;
    for (int i = 0; i < n; ++i) {
        int s = 0;
        for (int k = 1; k < qd; ++k)
            if (slot_free[k] < slot_free[s]) s = k;
        bool rd = i % 10 < 7;
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t sector = ((lcg >> 33) % 8192) * 1024;  // 512 KiB aligned, within 4 GiB
        uint64_t t = slot_free[s], d2c = rd ? 200'000 : 600'000;
        ef.cmd(rd ? "read" : "write", sector, rd ? 131072 : 524288, t, t + d2c);
        slot_free[s] = t + d2c;
    }
}

}  // namespace

TEST(LargestRemainder, SumsToExactly100) {
    EXPECT_EQ(largest_remainder({1, 1, 1}), (std::vector<uint32_t>{34, 33, 33}));
    EXPECT_EQ(largest_remainder({7, 3}), (std::vector<uint32_t>{70, 30}));
    EXPECT_EQ(largest_remainder({0, 0}), (std::vector<uint32_t>{0, 0}));
    auto v = largest_remainder({1, 2, 3, 4, 5, 6, 7});  // 28 parts: naive rounding sums to 101
    uint32_t sum = 0;
    for (auto x : v) sum += x;
    EXPECT_EQ(sum, 100u);
    EXPECT_EQ(v, (std::vector<uint32_t>{4, 7, 11, 14, 18, 21, 25}));
}

TEST(Bssplit, MeasuredSizesNotLog2Floors) {
    // 96 KiB and 160 KiB share no log2 floor with their neighbours; they must appear as measured.
    Dist d{{98304, 3}, {163840, 1}, {4096, 0}};
    EXPECT_EQ(bssplit_list(d), "96k/75:160k/25");
    EXPECT_EQ(bssplit_list(Dist{{1536, 1}, {4096, 1}, {8192, 1}}), "1536/34:4k/33:8k/33");
}

TEST(Distill, SeventyThirtyAtQd4) {
    EventsFile ef;
    closed_loop_70_30(ef, 2000, 4);
    Profile p = profile_events(ef.load());
    EXPECT_EQ(p.read.cmds, 1400u);
    EXPECT_EQ(p.write.cmds, 600u);
    EXPECT_EQ(p.max_inflight, 4u);
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("bssplit"), "128k/100,512k/100");
    EXPECT_EQ(j.get("rwmixread"), "70");
    EXPECT_EQ(j.get("iodepth"), "4");
    EXPECT_EQ(j.get("numjobs"), "1");
    EXPECT_EQ(j.get("rw"), "randrw");
    EXPECT_EQ(j.get("ioengine"), "libaio");
    EXPECT_EQ(j.get("direct"), "1");
    // The trace's amount of I/O, not a rounded-up runtime; --mode time keeps the duration instead.
    EXPECT_EQ(j.get("number_ios"), "2000");
    EXPECT_EQ(j.get("time_based"), "");
    EXPECT_EQ(j.get("runtime"), "");
    JobOptions time = opts();
    time.mode = JobMode::Time;
    FioJob tj = make_fio_job(p, time);
    EXPECT_EQ(tj.get("time_based"), "1");
    EXPECT_EQ(tj.get("number_ios"), "");
    EXPECT_EQ(tj.get("thinktime"), "");  // a busy device has no think time
    EXPECT_EQ(j.get("filename"), "/dev/loop9");
    // Little's law over busy time agrees with the sweep: 4 in flight all the time.
    EXPECT_NEAR(p.little_busy(), 4.0, 0.05);
    // Byte ratio comment: 1400·128K / (1400·128K + 600·512K) = 36.8 %.
    EXPECT_NE(j.text.find("by bytes: 36.8 %"), std::string::npos) << j.text;
    EXPECT_NE(j.text.find("not inferred"), std::string::npos);
}

TEST(Distill, ThinkTimeFromIdleGaps) {
    EventsFile ef;
    // 1-command bursts: 100 µs of I/O, then 5 ms idle.
    for (int i = 0; i < 200; ++i) {
        uint64_t t = 1'000'000 + uint64_t(i) * 5'100'000;
        ef.cmd("read", uint64_t(i) * 77777 % 100000 * 8, 4096, t, t + 100'000);
    }
    Profile p = profile_events(ef.load());
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("thinktime"), "5000");
    EXPECT_EQ(j.get("thinktime_blocks"), "1");
    EXPECT_EQ(j.get("iodepth"), "1");
    EXPECT_EQ(j.get("rw"), "randread");
    EXPECT_EQ(j.get("rwmixread"), "");  // single direction
}

TEST(Distill, SequentialStream) {
    EventsFile ef;
    uint64_t rs = 0, ws = 1 << 20, t = 1000;
    for (int i = 0; i < 300; ++i, t += 50'000) {
        if (i % 3 == 2) {
            ef.cmd("write", ws, 65536, t, t + 40'000);
            ws += 128;
        } else {
            ef.cmd("read", rs, 65536, t, t + 40'000);
            rs += 128;
        }
    }
    Profile p = profile_events(ef.load());
    EXPECT_DOUBLE_EQ(p.read.seq_share(), 1.0);
    EXPECT_DOUBLE_EQ(p.write.seq_share(), 1.0);
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("rw"), "rw");
    EXPECT_EQ(j.get("percentage_random"), "0");
    EXPECT_EQ(j.get("rwmixread"), "67");
    EXPECT_EQ(j.get("offset"), "0");
    EXPECT_EQ(j.get("size"), std::to_string((1ull << 20) * 512 + 100 * 65536));
}

TEST(Distill, SequentialMixedSizesRestartPassesInsteadOfWrapping) {
    // kvio gen's slot stream: a 4 KiB header, then 512 KiB transfers, all contiguous; reads load it back.
    // A time-based job would wrap at the region's end and fill its tail with 4 KiB writes.
    EventsFile ef;
    uint64_t ws = 0, rs = 0, t = 1000;
    for (int obj = 0; obj < 50; ++obj) {
        ef.cmd("write", ws, 4096, t, t + 20'000), ws += 8, t += 30'000;
        for (int k = 0; k < 4; ++k) ef.cmd("write", ws, 524288, t, t + 90'000), ws += 1024, t += 100'000;
    }
    for (int obj = 0; obj < 50; ++obj)
        for (int k = 0; k < 4; ++k)
            ef.cmd("read", rs + 8, 524288, t, t + 90'000), rs += 1024 + (k == 3 ? 8 : 0), t += 100'000;
    Profile p = profile_events(ef.load());
    JobOptions time = opts();
    time.mode = JobMode::Time;
    FioJob j = make_fio_job(p, time);
    // Count mode: number_ios restarts with each pass, so the trace's 450 commands are spread over 2 passes.
    FioJob c = make_fio_job(p, opts());
    EXPECT_EQ(c.get("loops"), "2");
    EXPECT_EQ(c.get("number_ios"), "225");
    EXPECT_EQ(c.get("io_size"), j.get("io_size"));
    EXPECT_EQ(j.get("bssplit"), "512k/100,4k/20:512k/80");
    EXPECT_EQ(j.get("percentage_random"), "25,0");  // each object's first read follows a skipped header
    EXPECT_EQ(j.get("time_based"), "");
    EXPECT_EQ(j.get("loops"), "1000000");
    EXPECT_EQ(j.get("randrepeat"), "0");
    const uint64_t size = std::stoull(j.get("size")), io_size = std::stoull(j.get("io_size"));
    EXPECT_EQ(size, 50ull * (4096 + 4 * 524288));
    // Writes: 250 of 450 commands (q = 5/9), 50.2 % of the bytes. A pass of `size` bytes holds size / mean size
    // = 225.9 commands, so the margin is 4·sqrt((1 - q) / (225.9·q)) = 23.8 %, and
    // io_size = (size - 512 KiB) / (0.502 · 1.238), rounded down to 4 KiB.
    const double wshare = double(50 * (4096 + 4 * 524288)) / double(50 * (4096 + 8 * 524288));
    const double m = double(size) / (double(50 * (4096 + 8 * 524288)) / 450.0), q = 250.0 / 450.0;
    const double margin = 4.0 * std::sqrt((1.0 - q) / (m * q));
    EXPECT_NEAR(margin, 0.238, 0.001);
    EXPECT_EQ(io_size, uint64_t(double(size - 524288) / (wshare * (1.0 + margin))) / 4096 * 4096);
    EXPECT_LE(uint64_t(double(io_size) * wshare * (1.0 + margin)), size - 524288);  // writes stay off the end
    EXPECT_NE(j.text.find("sequential writes (2 sizes"), std::string::npos) << j.text;

    // The same sizes in random order never run into the tail often: time-based as usual.
    EventsFile rf;
    t = 1000;
    for (int i = 0; i < 400; ++i, t += 100'000)
        rf.cmd("write", uint64_t(i) * 7919 % 400 * 1032, i % 5 ? 524288 : 4096, t, t + 90'000);
    FioJob r = make_fio_job(profile_events(rf.load()), time);
    EXPECT_EQ(r.get("time_based"), "1");
    EXPECT_EQ(r.get("io_size"), "");
    EXPECT_EQ(r.get("loops"), "");
}

// In count mode a pass ends when a stream reaches the region's end, and a random jump of a mostly sequential stream
// can land it there: fio 3.33 issued 546-829 of a section's 948 commands with percentage_random=1, all 948 with 0. So a
// direction at most 5 % random is written all sequential in passes; a time-based job keeps its randomness.
TEST(Distill, MostlySequentialStreamInPassesIsWrittenSequential) {
    EventsFile ef;
    uint64_t ws = 0, t = 1000;
    for (int i = 0; i < 500; ++i, t += 100'000) {
        if (i % 50 == 49) ws = uint64_t(i) * 7919 % 300 * 2048;  // a jump: 2 % random
        const uint64_t bytes = i % 5 ? 524288 : 4096;
        ef.cmd("write", ws, bytes, t, t + 90'000), ws += bytes / 512;
    }
    Profile p = profile_events(ef.load());
    FioJob c = make_fio_job(p, opts());
    ASSERT_EQ(c.get("randrepeat"), "0") << c.text;  // sequential with two sizes: passes of io_size
    EXPECT_EQ(c.get("percentage_random"), "0") << c.text;
    EXPECT_EQ(c.get("rw"), "write");
    EXPECT_NE(c.text.find("written all sequential (writes 2 % random in the trace)"), std::string::npos) << c.text;
    JobOptions time = opts();
    time.mode = JobMode::Time;
    EXPECT_EQ(make_fio_job(p, time).get("percentage_random"), "2");
}

// fio rounds every size down to a multiple of the smallest size in bssplit: the check is over the sizes bssplit holds.
// A 4 KiB size below 0.5 % is left out, so 488k is the smallest and 512k is not a multiple of it: without
// bs_unaligned fio issued 488k and 504k for the 512k commands (window size TV 0.995 on the serving workload).
TEST(Distill, UnalignedSizesJudgedOnTheSizesBssplitHolds) {
    EventsFile ef;
    uint64_t t = 1000, lcg = 5;
    for (int i = 0; i < 1000; ++i, t += 100'000) {
        const uint64_t bytes = i == 500 ? 4096 : i % 100 == 7 ? 499712 : 524288;
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        ef.cmd("read", (lcg >> 33) % 1000 * 1024, bytes, t, t + 90'000);
    }
    FioJob j = make_fio_job(profile_events(ef.load()), opts());
    EXPECT_EQ(j.get("bssplit"), "488k/1:512k/99") << j.text;
    EXPECT_EQ(j.get("bs_unaligned"), "1") << j.text;
    EXPECT_EQ(j.get("blockalign"), "8k") << j.text;
}

TEST(Distill, FilenameColonsAreEscapedAndTheRegionSizeIsKnown) {
    EventsFile ef;
    for (int i = 0; i < 20; ++i)
        ef.cmd("write", 2048 + uint64_t(i) * 8, 4096, 1000 + uint64_t(i) * 100'000, 51'000 + uint64_t(i) * 100'000);
    JobOptions o = opts();
    o.filename = "/dev/disk/by-path/pci-0000:00:04.0-nvme-1";
    FioJob j = make_fio_job(profile_events(ef.load()), o);
    EXPECT_EQ(j.get("filename"), "/dev/disk/by-path/pci-0000\\:00\\:04.0-nvme-1");  // fio splits filename= at ':'
    EXPECT_EQ(fio_filename_escape("/dev/loop3"), "/dev/loop3");
    EXPECT_EQ(j.get("offset"), std::to_string(2048 * 512));
    EXPECT_EQ(j.needs_bytes(), 2048u * 512 + 20 * 4096);
}

TEST(Distill, ThreadsBecomeNumjobs) {
    EventsFile ef;
    // Two threads, each at QD 2, overlapping in time: numjobs=2, iodepth=2.
    for (int i = 0; i < 400; ++i) {
        uint64_t t = 1000 + uint64_t(i / 4) * 100'000 + (i % 4) * 10;
        ef.cmd("read", uint64_t(i) * 4099 % 50000 * 8, 4096, t, t + 99'000, i % 2 ? 201 : 202);
    }
    Profile p = profile_events(ef.load());
    EXPECT_EQ(p.distinct_tids, 2u);
    EXPECT_EQ(p.concurrent_tids, 2u);
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("numjobs"), "2");
    EXPECT_EQ(j.get("iodepth"), "2");
}

TEST(Distill, FiltersByPidAndComm) {
    EventsFile ef;
    ef.cmd("read", 0, 4096, 1000, 2000, 7, "7:0", "vllm");
    ef.cmd("write", 8, 8192, 3000, 4000, 8, "7:0", "kworker");
    ef.cmd("read", 16, 4096, 5000, 6000, 7, "7:1", "vllm");
    auto t = ef.load({"7:0", 0, "vllm"});
    ASSERT_EQ(t.cmds.size(), 1u);
    EXPECT_EQ(t.filtered_out, 1u);
    EXPECT_EQ(ef.load({"7:0", 8, ""}).cmds.size(), 1u);  // by pid
    // Two devices and no --dev: a clear message listing them.
    try {
        ef.load();
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("choose one with --dev"), std::string::npos) << e.what();
    }
}

TEST(Distill, RefusesQueueDepthAboveTags) {
    EventsFile ef;
    for (int i = 0; i < 300; ++i) ef.cmd("read", uint64_t(i) * 8, 4096, 1000 + i, 10'000'000);  // 300 in flight
    Profile p = profile_events(ef.load());
    try {
        make_fio_job(p, opts());
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("only 128 tags"), std::string::npos) << e.what();
    }
}

TEST(Distill, RefusesLossyTrace) {
    EventsFile ef;
    closed_loop_70_30(ef, 100, 2);
    ef.raw(R"({"type":"summary","events":100,"dropped":900,"unmatched_completes":0,"negative_deltas":0})");
    Profile p = profile_events(ef.load());
    try {
        make_fio_job(p, opts());
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("completions ≪ issues"), std::string::npos) << e.what();
    }
}

TEST(Distill, LostCompletionsCountAsCommandsWithoutD2C) {
    EventsFile ef;
    closed_loop_70_30(ef, 100, 2);
    ef.raw(
        R"({"type":"cmd","src":"block","dev":"7:0","disk":"loop0","op":"read","rwbs":"R","sector":8,"bytes":4096,"ts_issue":5,"complete_lost":true,"qd":1,"pid":100,"tid":100,"comm":"fio"})");
    EventTrace t = ef.load();
    EXPECT_EQ(t.lost_completes, 1u);
    size_t lost = 0;
    for (const auto& c : t.cmds) lost += !c.completion_seen();
    EXPECT_EQ(lost, 1u);
    Profile p = profile_events(t);
    EXPECT_EQ(p.lost_completes, 1u);
    EXPECT_EQ(p.cmds(), 101u);         // its size and direction count
    EXPECT_EQ(p.d2c_ns.size(), 100u);  // its latency does not
}

TEST(Distill, RefusesEmptyInput) {
    EventsFile ef;
    ef.cmd("read", 0, 4096, 1000, 2000, 7, "7:0", "other");
    try {
        profile_events(ef.load({"", 0, "vllm"}));
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("empty input"), std::string::npos) << e.what();
    }
    EventsFile empty;
    EXPECT_THROW(empty.load(), kvio::Error);
}

TEST(Distill, MalformedLineNamesFileLineField) {
    EventsFile ef;
    ef.cmd("read", 0, 4096, 1000, 2000);
    ef.raw(
        R"({"type":"cmd","src":"block","dev":"7:0","op":"read","sector":8,"bytes":4096,"ts_issue":5000,"ts_complete":4000})");
    try {
        ef.load();
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find(ef.path + ":2: field 'ts_complete'"), std::string::npos) << e.what();
    }
}

TEST(Distill, ImplausibleOffsetsAndSizesNameTheField) {
    for (auto [field, value, msg] : {std::tuple{"sector", uint64_t(1) << 62, "× 512 bytes is beyond any device"},
                                     std::tuple{"bytes", uint64_t(1) << 63, "is not a command size (at most 4 GiB)"}}) {
        EventsFile ef;
        ef.cmd("write", 0, 4096, 1000, 2000);
        json bad = {{"type", "cmd"},    {"src", "block"},      {"dev", "7:0"}, {"disk", "loop0"},
                    {"op", "write"},    {"rwbs", "W"},         {"sector", 8},  {"bytes", 4096},
                    {"ts_issue", 3000}, {"ts_complete", 4000}, {"pid", 1},     {"tid", 1}};
        bad[field] = value;
        ef.raw(bad.dump());
        try {
            ef.load();
            FAIL() << field << " " << value << " accepted";
        } catch (const kvio::Error& e) {
            EXPECT_EQ(std::string(e.what()),
                      ef.path + ":2: field '" + field + "': " + std::to_string(value) + " " + msg);
        }
    }
    // A flush has no sector: the kernel reports sector -1 (2^64 - 1) and 0 bytes. It is not a corrupt record.
    EventsFile ef;
    ef.cmd("write", 0, 4096, 1000, 2000);
    ef.raw(
        R"({"type":"cmd","src":"block","dev":"7:0","disk":"loop0","op":"flush","rwbs":"FF","sector":18446744073709551615,)"
        R"("bytes":0,"ts_issue":3000,"ts_complete":4000,"pid":1,"tid":1})");
    Profile p = profile_events(ef.load());
    EXPECT_EQ(p.cmds(), 1u);
    EXPECT_EQ(p.other_cmds, 1u);
}

TEST(Distill, WriteJobOnBlockDeviceWarns) {
    EventsFile ef;
    closed_loop_70_30(ef, 50, 2);
    Profile p = profile_events(ef.load());
    JobOptions o = opts();
    o.target_is_block = true;
    EXPECT_NE(make_fio_job(p, o).text.find("WARNING: this job WRITES to the block device /dev/loop9"),
              std::string::npos);
}

TEST(Iolog, Version3Format) {
    std::vector<Cmd> cmds(3);
    cmds[0] = {.sector = 2048, .bytes = 8192, .ts_issue = 5'000'000, .ts_complete = 5'100'000, .op = Op::Write};
    cmds[1] = {.sector = 16, .bytes = 4096, .ts_issue = 1'000'000, .ts_complete = 1'050'000, .op = Op::Read};
    cmds[2] = {.sector = 0, .bytes = 0, .ts_issue = 6'000'000, .ts_complete = 6'000'100, .op = Op::Flush};
    std::ostringstream os;
    EXPECT_EQ(write_iolog(os, cmds, "/dev/loop5"), 2u);
    EXPECT_EQ(os.str(),
              "fio version 3 iolog\n"
              "1 /dev/loop5 add\n"
              "1 /dev/loop5 open\n"
              "1 /dev/loop5 read 8192 4096\n"
              "4001 /dev/loop5 write 1048576 8192\n"
              "4001 /dev/loop5 close\n");
    EXPECT_THROW(write_iolog(os, cmds, "/tmp/a b"), kvio::Error);
}

TEST(Fidelity, TotalVariation) {
    EXPECT_DOUBLE_EQ(tv_distance({{1, 5}}, {{1, 50}}), 0.0);
    EXPECT_DOUBLE_EQ(tv_distance({{1, 1}}, {{2, 1}}), 1.0);
    EXPECT_DOUBLE_EQ(tv_distance({{1, 3}, {2, 1}}, {{1, 1}, {2, 1}}), 0.25);
    EXPECT_DOUBLE_EQ(tv_distance({}, {}), 0.0);
    EXPECT_DOUBLE_EQ(tv_distance({{1, 1}}, {}), 1.0);
}

TEST(Fidelity, ScoresShapeDifferences) {
    EventsFile a, b;
    closed_loop_70_30(a, 1000, 4);
    closed_loop_70_30(b, 1000, 2);
    Profile pa = profile_events(a.load()), pb = profile_events(b.load());
    Fidelity same = score(pa, pa);
    EXPECT_DOUBLE_EQ(same.size_tv_read, 0.0);
    EXPECT_DOUBLE_EQ(same.qd_tv, 0.0);
    EXPECT_DOUBLE_EQ(same.rwmix_err, 0.0);
    EXPECT_DOUBLE_EQ(same.d2c_p50_ratio, 1.0);
    Fidelity f = score(pa, pb);
    EXPECT_DOUBLE_EQ(f.size_tv_read, 0.0);  // same sizes
    EXPECT_DOUBLE_EQ(f.rwmix_err, 0.0);     // same mix
    // QD 4 vs QD 2: 4 in flight nearly all the busy time of a, 2 in b.
    EXPECT_GT(f.qd_tv, 0.99);
    auto j = to_json(f);
    EXPECT_TRUE(j.contains("qd_tv"));
    EXPECT_TRUE(j["size_tv"].contains("write"));
}

// New-user finding: a single 3.2 ms gap in a randread phase became thinktime=3243 thinktime_blocks=1858, and the
// replay split into extra phases. One gap (p10 = p90) looks "regular"; it takes several to be a pattern.
TEST(Distill, OneIdleGapIsNotThinkTime) {
    EventsFile ef;
    uint64_t t = 1'000'000;
    for (int i = 0; i < 2000; ++i, t += 10'000) {
        if (i == 1000) t += 3'200'000;  // the one stall: 3.2 ms, ~14 % of the 23 ms span
        ef.cmd("read", uint64_t(i) * 77777 % 100000 * 8, 4096, t, t + 10'000);
    }
    Profile p = profile_events(ef.load());
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("thinktime"), "") << j.text;
    EXPECT_NE(j.text.find("1 idle gap(s)"), std::string::npos) << j.text;
}

// New-user finding: fio io_uring QD 256 × 4 jobs (buffered) was refused, "iodepth × numjobs is 144 but the device has
// only 128 tags": 36 tids (32 of them iou-wrk workers) counted as 36 jobs, 128 / 36 rounded to 4 each. Workers count
// as their process; a rounded depth that would exceed the tags is rounded down, not refused.
TEST(Distill, IoUringWorkersCountAsTheirProcess) {
    EventsFile ef;
    uint64_t sector = 0;
    auto put = [&](uint32_t pid, uint32_t tid, const std::string& comm, uint64_t issue) {
        json j = {{"type", "cmd"},
                  {"src", "block"},
                  {"dev", "7:0"},
                  {"disk", "loop0"},
                  {"op", "read"},
                  {"rwbs", "R"},
                  {"sector", (sector += 8) % 2000000},
                  {"bytes", 4096},
                  {"ts_issue", issue},
                  {"ts_complete", issue + 90'000},
                  {"d2c_ns", 90'000},
                  {"pid", pid},
                  {"tid", tid},
                  {"comm", comm}};
        ef.raw(j.dump());
    };
    for (uint64_t r = 0; r < 100; ++r) {
        const uint64_t t = 1'000'000 + r * 100'000;
        for (uint32_t job = 0; job < 4; ++job) {
            const uint32_t pid = 1000 + job;
            for (int k = 0; k < 8; ++k) put(pid, pid, "fio", t + uint64_t(k));  // the job's own thread: 8 in flight
            for (uint32_t w = 0; w < 8; ++w)                                    // its 8 workers: 3 each
                for (int k = 0; k < 3; ++k)
                    put(pid, pid * 100 + w, "iou-wrk-" + std::to_string(pid), t + 10 + uint64_t(k));
        }
    }
    Profile p = profile_events(ef.load());
    EXPECT_EQ(p.concurrent_tids, 4u);
    FioJob j = make_fio_job(p, opts());  // refused before: 36 "jobs" × 4
    EXPECT_EQ(j.get("numjobs"), "4") << j.text;
    EXPECT_EQ(j.get("iodepth"), "32") << j.text;
}

TEST(Distill, IrregularIdleIsNotThinkTime) {
    EventsFile ef;
    // Bursts of 2..40 commands separated by 0.15..6 ms: a starved submitter, not an application's think time.
    uint64_t t = 1'000'000, lcg = 7;
    for (int b = 0; b < 200; ++b) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        int n = 2 + int((lcg >> 33) % 39);
        for (int k = 0; k < n; ++k, t += 100'000) ef.cmd("read", uint64_t(b * 64 + k) * 256, 131072, t, t + 100'000);
        t += 150'000 + (lcg >> 20) % 6'000'000;
    }
    Profile p = profile_events(ef.load());
    FioJob j = make_fio_job(p, opts());
    EXPECT_EQ(j.get("thinktime"), "");
    EXPECT_NE(j.text.find("are irregular"), std::string::npos) << j.text;
}

namespace {
// Appends n commands issued by a closed loop at depth `qd` from time t (ns): each slot reissues when its command
// completes (d2c later). Sequential: contiguous from `sector0`; else random `bytes`-aligned offsets below 1 GiB.
// Returns when the last one completes.
uint64_t closed_loop(EventsFile& ef, uint64_t t, int n, int qd, const char* op, uint64_t bytes, bool seq, uint64_t d2c,
                     uint32_t tid = 100, uint64_t sector0 = 0) {
    std::vector<uint64_t> slot(qd, t);
    uint64_t lcg = 777 + bytes, end = t;
    for (int i = 0; i < n; ++i) {
        int s = int(std::min_element(slot.begin(), slot.end()) - slot.begin());
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t sector =
            seq ? sector0 + uint64_t(i) * bytes / 512 : ((lcg >> 33) % ((1ull << 30) / bytes)) * bytes / 512;
        ef.cmd(op, sector, bytes, slot[s], slot[s] + d2c, tid);
        slot[s] += d2c;
        end = std::max(end, slot[s]);
    }
    return end;
}

// The phased job of `ef`'s commands, and its phases in `plan`.
FioJob phased(EventsFile& ef, PhasePlan& plan) {
    EventTrace tr = ef.load();
    return make_phased_job(tr, profile_events(tr), opts(), {}, &plan);
}
}  // namespace

// The issue's example: sequential 64 KiB writes at QD 1, then (stonewall) 4 KiB random reads at QD 4. One flat
// randrw section ran both at once and lost the read phase's depth; two stonewalled sections keep it.
TEST(Phases, TwoStonewalledPhasesBecomeTwoSections) {
    EventsFile ef;
    uint64_t t = closed_loop(ef, 1'000'000, 1000, 1, "write", 65536, true, 100'000);
    closed_loop(ef, t + 50'000, 3000, 4, "read", 4096, false, 80'000);
    EventTrace tr = ef.load();
    Profile p = profile_events(tr);
    PhasePlan plan;
    FioJob j = make_phased_job(tr, p, opts(), {}, &plan);
    ASSERT_EQ(plan.phases.size(), 2u) << j.text;
    EXPECT_EQ(plan.phases[0].cmds(), 1000u);  // the boundary is exact
    ASSERT_EQ(j.sections.size(), 2u) << j.text;
    const auto& a = j.sections[0];
    const auto& b = j.sections[1];
    EXPECT_EQ(a.get("rw"), "write");
    EXPECT_EQ(a.get("bssplit"), "64k/100");
    EXPECT_EQ(a.get("iodepth"), "1");
    EXPECT_EQ(a.get("number_ios"), "1000");
    EXPECT_EQ(a.get("stonewall"), "");
    EXPECT_EQ(b.get("rw"), "randread");
    EXPECT_EQ(b.get("iodepth"), "4");
    EXPECT_EQ(b.get("number_ios"), "3000");
    EXPECT_EQ(b.get("time_based"), "");
    EXPECT_NE(j.text.find("[kvio-distilled-phase2]\nstonewall\n"), std::string::npos) << j.text;
    EXPECT_EQ(j.get("filename"), "/dev/loop9");  // [global]
    EXPECT_EQ(j.get("ioengine"), "libaio");

    // --mode time: each section runs for its phase's duration, in ms (not a span rounded up to 1 s).
    JobOptions o = opts();
    o.mode = JobMode::Time;
    FioJob tj = make_phased_job(tr, p, o);
    ASSERT_EQ(tj.sections.size(), 2u);
    EXPECT_EQ(tj.sections[0].get("runtime"), "100ms");
    EXPECT_EQ(tj.sections[0].get("number_ios"), "");
    EXPECT_EQ(tj.sections[1].get("time_based"), "1");

    // --max-phases 1: the flat job of old.
    PhaseOptions one;
    one.max_phases = 1;
    FioJob flat = make_phased_job(tr, p, opts(), one);
    EXPECT_TRUE(flat.sections.empty());
    EXPECT_EQ(flat.get("rw"), "randrw");
    EXPECT_EQ(flat.get("number_ios"), "4000");
}

TEST(Phases, IdleGapsEndPhasesAndBecomeIdleSections) {
    EventsFile ef;
    uint64_t t = closed_loop(ef, 1'000'000, 500, 2, "read", 16384, false, 100'000);
    t = closed_loop(ef, t + 300'000'000, 500, 1, "write", 131072, true, 200'000);
    closed_loop(ef, t + 150'000'000, 500, 8, "read", 4096, false, 100'000);
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    ASSERT_EQ(plan.phases.size(), 3u) << j.text;
    ASSERT_EQ(j.sections.size(), 5u) << j.text;  // phase, idle, phase, idle, phase
    EXPECT_EQ(j.sections[1].get("ioengine"), "null");
    EXPECT_EQ(j.sections[1].get("thinktime"), "300000");
    EXPECT_EQ(j.sections[3].get("thinktime"), "150000");
    EXPECT_EQ(j.sections[2].get("rw"), "write");
    EXPECT_EQ(j.sections[4].get("iodepth"), "8");
}

TEST(Phases, RepeatedPhaseBecomesLoops) {
    EventsFile ef;
    uint64_t t = 1'000'000;
    for (int r = 0; r < 4; ++r) t = closed_loop(ef, t, 200, 4, "read", 65536, false, 100'000) + 120'000'000;
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    EXPECT_EQ(plan.phases.size(), 4u);
    EXPECT_EQ(plan.period, 1u);
    ASSERT_EQ(j.sections.size(), 1u) << j.text;
    EXPECT_EQ(j.sections[0].get("loops"), "4");
    EXPECT_EQ(j.sections[0].get("number_ios"), "200");
    EXPECT_EQ(j.sections[0].get("thinktime"), "120000");
    EXPECT_EQ(j.sections[0].get("thinktime_blocks"), "200");
}

// A steady randread trace at depth 8 with a stall too short to be a phase (56 commands at depth 1): the stall,
// merged into one side, left two phases of one kind, and the job was one section of loops=2 with thinktime=0.
TEST(Phases, NeighboursOfOneKindAreOnePhase) {
    EventsFile ef;
    uint64_t t = 1'000'000;
    auto reads = [&](int n, int qd) {  // staggered slots: every issue finds qd - 1 others in flight
        const uint64_t d2c = 400'000;
        for (int i = 0; i < n; ++i) {
            const uint64_t at = t + uint64_t(i / qd) * d2c + uint64_t(i % qd) * d2c / uint64_t(qd);
            ef.cmd("read", (uint64_t(i) * 7919 % 100000) * 8, 4096, at, at + d2c);
        }
        t += uint64_t((n + qd - 1) / qd) * d2c + d2c;
    };
    reads(1600, 8);
    reads(56, 1);
    reads(1600, 8);
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    EXPECT_EQ(plan.phases.size(), 1u) << j.text;
    EXPECT_TRUE(j.sections.empty()) << j.text;
    EXPECT_EQ(j.get("loops"), "") << j.text;
    EXPECT_EQ(j.get("number_ios"), "3256") << j.text;
}

TEST(Phases, ConcurrentStreamsBecomeConcurrentSections) {
    EventsFile ef;
    // A reader thread at QD 8 (4 KiB) and a writer thread at QD 1 (64 KiB) over the same second.
    closed_loop(ef, 1'000'000, 8000, 8, "read", 4096, false, 800'000, 201);
    closed_loop(ef, 1'000'000, 2000, 1, "write", 65536, false, 400'000, 202);
    EventTrace tr = ef.load();
    FioJob j = make_phased_job(tr, profile_events(tr), opts());
    ASSERT_EQ(j.sections.size(), 2u) << j.text;
    EXPECT_EQ(j.sections[0].get("rw"), "randread");
    EXPECT_EQ(j.sections[0].get("bssplit"), "4k/100");
    EXPECT_EQ(j.sections[0].get("number_ios"), "8000");
    EXPECT_EQ(j.sections[0].get("flow"), "4");  // 8000 : 2000
    EXPECT_EQ(j.sections[1].get("rw"), "randwrite");
    EXPECT_EQ(j.sections[1].get("iodepth"), "1");
    EXPECT_EQ(j.sections[1].get("flow"), "1");
    EXPECT_EQ(j.sections[1].get("stonewall"), "");
    EXPECT_EQ(j.text.find("[kvio-distilled-phase1-writes]\nstonewall"), std::string::npos) << j.text;  // runs alongside
}

// A reader and a writer side by side, the writer silent for the middle third (starved of CPU): that stretch is one
// read section without flow= (a flow of one job has no ratio to hold); the others stay pairs of one flow_id each.
TEST(Phases, StretchWithOneStreamIsOneSectionWithoutAFlow) {
    EventsFile ef;
    closed_loop(ef, 1'000'000, 9000, 8, "read", 4096, false, 800'000, 201);
    closed_loop(ef, 1'000'000, 750, 1, "write", 65536, false, 400'000, 202);
    closed_loop(ef, 601'000'000, 750, 1, "write", 65536, false, 400'000, 202);
    EventTrace tr = ef.load();
    FioJob j = make_phased_job(tr, profile_events(tr), opts());
    std::map<std::string, std::vector<std::string>> flows;
    size_t lone = 0;
    for (const auto& sec : j.sections) {
        if (sec.get("flow_id").empty()) {
            EXPECT_EQ(sec.get("rw"), "randread") << j.text;
            EXPECT_EQ(sec.get("flow"), "") << j.text;
            ++lone;
        } else {
            flows[sec.get("flow_id")].push_back(sec.get("rw"));
        }
    }
    EXPECT_EQ(lone, 1u) << j.text;
    EXPECT_GE(flows.size(), 2u) << j.text;
    for (const auto& [id, rws] : flows)
        EXPECT_EQ(rws, (std::vector<std::string>{"randread", "randwrite"})) << id << "\n" << j.text;
}

// Two reader threads and one writer thread side by side: fio weighs every job of a flow, so each reader clone
// (numjobs=2) carries half the reads' weight (reads per job 4000 : writes 2000 = 2 : 1; 4 : 1 per clone gave the
// readers 8 : 1 of the I/O).
TEST(Phases, ConcurrentStreamFlowWeightsArePerJob) {
    EventsFile ef;
    closed_loop(ef, 1'000'000, 4000, 4, "read", 4096, false, 400'000, 201);
    closed_loop(ef, 1'000'000, 4000, 4, "read", 4096, false, 400'000, 203);
    closed_loop(ef, 1'000'000, 2000, 1, "write", 65536, false, 200'000, 202);
    EventTrace tr = ef.load();
    FioJob j = make_phased_job(tr, profile_events(tr), opts());
    ASSERT_EQ(j.sections.size(), 2u) << j.text;
    EXPECT_EQ(j.sections[0].get("numjobs"), "2");
    EXPECT_EQ(j.sections[0].get("number_ios"), "4000");
    EXPECT_EQ(j.sections[0].get("flow"), "2");
    EXPECT_EQ(j.sections[1].get("numjobs"), "1");
    EXPECT_EQ(j.sections[1].get("flow"), "1");
}

// Three threads that each read and write (70 % reads, interleaved evenly), side by side: a randrw section of 3
// clones draws each direction per clone and misses the counts, so the reads and the writes become a flow pair of 3
// jobs in all (2 readers, 1 writer: the threads' concurrency), with the exact commands of each.
TEST(Phases, ThreadsThatEachReadAndWriteBecomeAnExactFlowPair) {
    EventsFile ef;
    uint64_t end = 0;
    for (uint32_t th = 0; th < 3; ++th)
        for (int i = 0; i < 2000; ++i) {
            const uint64_t t = 1'000'000 + uint64_t(i) * 300'000 + th * 100'000;
            ef.cmd((i * 3 + th) % 10 < 7 ? "read" : "write", (uint64_t(i) * 7919 + th * 104729) % 100000 * 8, 4096, t,
                   t + 90'000, 301 + th);
            end = std::max(end, t + 90'000);
        }
    closed_loop(ef, end + 1'000'000, 1000, 1, "write", 65536, true, 100'000);  // a second phase
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    ASSERT_EQ(plan.phases.size(), 2u) << j.text;
    ASSERT_EQ(j.sections.size(), 3u) << j.text;
    EXPECT_EQ(j.sections[0].get("rw"), "randread");
    EXPECT_EQ(j.sections[0].get("numjobs"), "2");
    EXPECT_EQ(j.sections[0].get("number_ios"), "2100");  // 4200 reads over 2 jobs
    EXPECT_EQ(j.sections[1].get("rw"), "randwrite");
    EXPECT_EQ(j.sections[1].get("numjobs"), "1");
    EXPECT_EQ(j.sections[1].get("number_ios"), "1800");
    EXPECT_EQ(j.sections[1].get("stonewall"), "");
    EXPECT_EQ(j.sections[0].get("flow"), "7");  // per job 2100 : 1800
    EXPECT_EQ(j.sections[1].get("flow"), "6");
}

// One thread whose read share drifts from 90 % to 70 % inside a phase (20 points: below the detector's 25, one
// phase): one section at the phase's 80 % put 10 points of error in every score window; the drift becomes a
// section per stretch of a steady share, with the stretches' exact commands.
TEST(Phases, DriftingReadShareBecomesOneSectionPerSteadyStretch) {
    EventsFile ef;
    uint64_t t = 1'000'000, lcg = 99;
    for (int i = 0; i < 6000; ++i, t += 100'000) {
        const bool rd = i % 10 < (i < 3000 ? 9 : 7);
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        ef.cmd(rd ? "read" : "write", (lcg >> 33) % 100000 * 8, 4096, t, t + 80'000);
    }
    closed_loop(ef, t + 1'000'000, 1000, 1, "write", 65536, true, 100'000);  // a second phase
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    ASSERT_EQ(plan.phases.size(), 2u) << j.text;
    ASSERT_GE(j.sections.size(), 3u) << j.text;
    ASSERT_LE(j.sections.size(), 4u) << j.text;  // a short stretch where the change point falls inside a block
    const size_t last = j.sections.size() - 2;   // phase 1's last stretch
    EXPECT_EQ(j.sections[0].get("rwmixread"), "90");
    EXPECT_EQ(j.sections[last].get("rwmixread"), "70");
    EXPECT_EQ(j.sections[1].get("stonewall"), "");
    EXPECT_NE(j.text.find("[kvio-distilled-phase1-part2]\nstonewall\n"), std::string::npos) << j.text;
    uint64_t ios = 0;
    for (size_t k = 0; k <= last; ++k) ios += std::stoull(j.sections[k].get("number_ios"));
    EXPECT_EQ(ios, 6000u);
    EXPECT_EQ(j.sections.back().get("rw"), "write");
}

namespace {
// kvio gen's stores, then its loads: `objects` objects of a 4 KiB slot header and 49 transfers of 512 KiB written
// contiguously at QD 1, then their 512 KiB transfers read back. `placed`: each header at its object's start (as gen
// writes them); else the 4 KiB writes, as many, at pseudo-random places among the others.
void store_then_load(EventsFile& ef, int objects, bool placed) {
    uint64_t t = 1'000'000, sector = 0, lcg = 5;
    std::vector<int> small;
    for (int o = 0; o < objects; ++o) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        small.push_back(o * 50 + (placed ? 0 : int((lcg >> 33) % 50)));
    }
    for (int i = 0; i < objects * 50; ++i, t += 300'000) {
        const uint64_t bytes = std::find(small.begin(), small.end(), i) != small.end() ? 4096 : 524288;
        ef.cmd("write", sector, bytes, t, t + 250'000);
        sector += bytes / 512;
    }
    closed_loop(ef, t + 1'000'000, objects * 49, 1, "read", 524288, true, 200'000);
}
}  // namespace

// The 4 KiB headers of kvio gen's stores are 2 % of its writes, one at each object's start: bssplit=4k/2:512k/98
// draws them at random (Binomial(100, 0.02) in a window of 100 writes: size TV up to 0.04-0.07 in one run of five),
// so they get a job of their own in a flow pair with the 512 KiB writes, weights 49 : 1, placing one every 50.
TEST(Phases, SizeAtFixedPlacesGetsAJobOfItsOwn) {
    EventsFile ef;
    store_then_load(ef, 20, true);
    PhasePlan plan;
    FioJob j = phased(ef, plan);
    ASSERT_EQ(plan.phases.size(), 2u) << j.text;
    ASSERT_EQ(j.sections.size(), 3u) << j.text;
    const auto &rest = j.sections[0], &hdr = j.sections[1], &load = j.sections[2];
    EXPECT_EQ(rest.name, "kvio-distilled-phase1");
    EXPECT_EQ(rest.get("rw"), "write");
    EXPECT_EQ(rest.get("bssplit"), "512k/100");
    EXPECT_EQ(rest.get("number_ios"), "980");
    EXPECT_EQ(rest.get("flow"), "49");
    EXPECT_EQ(hdr.name, "kvio-distilled-phase1-4k");
    EXPECT_EQ(hdr.get("bssplit"), "4k/100");
    EXPECT_EQ(hdr.get("number_ios"), "20");
    EXPECT_EQ(hdr.get("iodepth"), "1");
    EXPECT_EQ(hdr.get("flow"), "1");
    EXPECT_EQ(hdr.get("flow_id"), rest.get("flow_id"));
    EXPECT_EQ(hdr.get("thinktime"), "") << j.text;  // the flow times it: the idle between headers is the others' I/O
    EXPECT_EQ(j.text.find("[kvio-distilled-phase1-4k]\nstonewall"), std::string::npos) << j.text;  // runs alongside
    EXPECT_EQ(load.get("rw"), "read");
    EXPECT_NE(j.text.find("[kvio-distilled-phase2]\nstonewall"), std::string::npos) << j.text;

    // The same share at random places: bssplit draws them as the trace has them.
    EventsFile rnd;
    store_then_load(rnd, 20, false);
    j = phased(rnd, plan);
    ASSERT_EQ(j.sections.size(), 2u) << j.text;
    EXPECT_EQ(j.sections[0].get("bssplit"), "4k/2:512k/98");
    EXPECT_EQ(j.sections[0].get("flow"), "");
}

// Issue 16 row 13: a 1000-byte or 0-byte command among 64 KiB ones gave bssplit=1000/2:64k/98, which fio refuses
// with direct=1 (EINVAL).
TEST(Distill, NonSectorSizesAreLeftOutWithANote) {
    EventsFile ef;
    uint64_t t = 1000;
    for (int i = 0; i < 100; ++i, t += 100'000)
        ef.cmd("write", uint64_t(i) * 128, i == 10 ? 1000 : i == 20 ? 0 : 65536, t, t + 50'000);
    FioJob j = make_fio_job(profile_events(ef.load()), opts());
    EXPECT_EQ(j.get("bssplit"), "64k/100");
    EXPECT_EQ(j.get("bs_unaligned"), "");
    EXPECT_NE(j.text.find("2 commands of 0 bytes or of a size that is not a whole number of 512-byte sectors left out"),
              std::string::npos)
        << j.text;
}

TEST(Distill, FlushesBecomeFdatasync) {
    EventsFile ef;
    uint64_t t = 1000;
    for (int i = 0; i < 100; ++i, t += 200'000) {
        ef.cmd("write", uint64_t(i) * 8, 4096, t, t + 50'000);
        ef.raw(json{{"type", "cmd"},
                    {"src", "block"},
                    {"dev", "7:0"},
                    {"disk", "loop0"},
                    {"op", "flush"},
                    {"rwbs", "F"},
                    {"sector", 0},
                    {"bytes", 0},
                    {"ts_issue", t + 60'000},
                    {"ts_complete", t + 90'000},
                    {"d2c_ns", 30'000},
                    {"pid", 100},
                    {"tid", 100},
                    {"comm", "fio"}}
                   .dump());
    }
    FioJob j = make_fio_job(profile_events(ef.load()), opts());
    EXPECT_EQ(j.get("fdatasync"), "1") << j.text;
}

TEST(Distill, NoFilenameLeavesItToFiosCommandLine) {
    EventsFile ef;
    closed_loop(ef, 1000, 100, 1, "read", 4096, false, 50'000);
    JobOptions o = opts();
    o.filename = "";
    FioJob j = make_fio_job(profile_events(ef.load()), o);
    EXPECT_EQ(j.get("filename"), "");
    EXPECT_NE(j.text.find("no filename in this job: give the target on fio's command line"), std::string::npos)
        << j.text;
}

// The negative control: a flattened job (the same commands in random order, as one randrw section issues them)
// has the right whole-run distributions but the wrong shape over time, and only the time-resolved score sees it.
TEST(TimeFidelity, FlattenedTwoPhaseTraceScoresWellWholeRunAndBadlyOverTime) {
    EventsFile a, b;
    uint64_t t = closed_loop(a, 1'000'000, 1000, 1, "write", 65536, true, 100'000);
    closed_loop(a, t, 3000, 1, "read", 4096, false, 100'000);
    EventTrace ta = a.load();
    // The flattened replay: the same sizes and directions, interleaved 1 write : 3 reads.
    uint64_t ws = 0;
    t = 1'000'000;
    for (int i = 0; i < 4000; ++i, t += 100'000) {
        bool w = i % 4 == 0;
        b.cmd(w ? "write" : "read", w ? ws : uint64_t(i) * 7919 % 100000 * 8, w ? 65536 : 4096, t, t + 100'000);
        if (w) ws += 128;
    }
    EventTrace tb = b.load();
    Fidelity whole = score(profile_events(ta), profile_events(tb));
    EXPECT_LT(whole.rwmix_err, 0.5);
    EXPECT_LT(whole.size_tv_read, 0.01);
    EXPECT_LT(whole.size_tv_write, 0.01);
    TimeFidelity tf = score_over_time(data_cmds(ta.cmds), data_cmds(tb.cmds));
    EXPECT_EQ(tf.windows, 20u);
    EXPECT_GT(tf.worst_read_err, 50.0);
    EXPECT_EQ(tf.phases.orig, 2u);
    EXPECT_EQ(tf.phases.replay, 1u);
    EXPECT_FALSE(tf.phases.in_order);
    // And the trace against itself is perfect.
    TimeFidelity self = score_over_time(data_cmds(ta.cmds), data_cmds(ta.cmds));
    EXPECT_EQ(self.worst_read_err, 0.0);
    EXPECT_EQ(self.worst_size_tv, 0.0);
    EXPECT_TRUE(self.phases.in_order);
    EXPECT_EQ(self.worst_volume_err, 0.0);
    EXPECT_NE(summary_line(whole, tf).find("phases 2 -> 1 NOT matching"), std::string::npos) << summary_line(whole, tf);
}

// The replay's phases are judged against the trace's at the same place, not re-detected freely: a steady 4 KiB reader
// whose depth sags to 3 for a while is one phase (5 -> 3 is below the detector's factor 2), and a replay that sags to 2
// there (5 -> 2 is above it) follows it: 1 -> 1 in order, where the two free detections gave 1 -> 3 (the concurrent e2e
// test's replays: 5 -> 2 against 5 -> 3 in 1 run of 2 under load). A replay that sags to 1 where the trace was at 3
// departs from it and keeps its phases; and a trace boundary the replay's detector missed is placed where the replay
// follows both sides.
TEST(TimeFidelity, ReplayPhasesAreJudgedAgainstTheTraceAtTheSamePlace) {
    // 3000 reads at depth 5, 1000 at depth `sag_qd`, 3000 at 5: one issue every 60 µs / depth, each taking 60 µs, so
    // every read finds exactly `depth` in flight (closed_loop's slots start together and cycle 1..5).
    auto reader = [](int sag_qd) {
        EventsFile ef;
        uint64_t t = 1'000'000, i = 0;
        for (auto [n, qd] : {std::pair{3000, 5}, {1000, sag_qd}, {3000, 5}})
            for (int k = 0; k < n; ++k, ++i, t += 60'000 / uint64_t(qd))
                ef.cmd("read", i * 7919 % 100000 * 8, 4096, t, t + 60'000);
        return data_cmds(ef.load().cmds);
    };
    const auto sag3 = reader(3), sag2 = reader(2), sag1 = reader(1);
    ASSERT_EQ(detect_phases(sag3).size(), 1u);  // the premise: 5 -> 3 is no phase, 5 -> 2 and 5 -> 1 are
    ASSERT_EQ(detect_phases(sag2).size(), 3u);
    ASSERT_EQ(detect_phases(sag1).size(), 3u);

    TimeFidelity follows = score_over_time(sag3, sag2);
    EXPECT_EQ(follows.phases.orig, 1u);
    EXPECT_EQ(follows.phases.replay_detected, 3u);
    EXPECT_EQ(follows.phases.replay, 1u);
    EXPECT_TRUE(follows.phases.in_order);
    EXPECT_EQ(follows.worst_volume_err, 0.0);

    TimeFidelity departs = score_over_time(sag3, sag1);  // depth 1 where the trace had 3: a factor 3
    EXPECT_EQ(departs.phases.orig, 1u);
    EXPECT_EQ(departs.phases.replay, 3u);
    EXPECT_FALSE(departs.phases.in_order);
    EXPECT_EQ(departs.worst_volume_err, 100.0);

    TimeFidelity reversed = score_over_time(sag2, sag3);  // the trace has the phases, the replay's detector does not
    EXPECT_EQ(reversed.phases.orig, 3u);
    EXPECT_EQ(reversed.phases.replay_detected, 1u);
    EXPECT_EQ(reversed.phases.replay, 3u);
    EXPECT_TRUE(reversed.phases.in_order);
    ASSERT_EQ(reversed.phases.volume_err_pct.size(), 3u);
    for (double e : reversed.phases.volume_err_pct) EXPECT_LE(e, 1.0);
    EXPECT_FALSE(score_over_time(sag1, sag3).phases.in_order);  // depth 3 where the trace had 1 is not placed
}

// Found by tests/fuzz/fuzz_trace_json.cpp: a d2c or lba histogram of the wrong shape escaped as nlohmann's
// type_error / out_of_range ("internal error") instead of a field error naming the histogram.
TEST(Distill, MalformedTraceJsonHistogramNamesTheField) {
    auto hist = [](json buckets) { return json{{"unit", "ns"}, {"count", 1}, {"sum", 4096}, {"buckets", buckets}}; };
    json doc = {{"schema", "kvio.trace/1"},
                {"duration_s", 1.0},
                {"devices",
                 {{{"dev", "7:0"},
                   {"disk", "loop0"},
                   {"write", {{"cmds", 1}, {"bytes", 4096}}},
                   {"histograms",
                    {{"bssplit_write", hist({{4096, 8191, 1}})},
                     {"d2c_write", hist({{1024, 2047, 1}})},
                     {"lba_write", hist({{0, 4095, 1}})}}}}}}};
    EventsFile f;
    auto profile = [&](const json& d) {
        std::ofstream(f.path, std::ios::trunc) << d.dump();
        return profile_trace_json(f.path, "");
    };
    EXPECT_EQ(profile(doc).write.cmds, 1u);
    auto expect_field = [&](json d, const std::string& field) {
        try {
            profile(d);
            ADD_FAILURE() << "accepted " << d.dump();
        } catch (const kvio::Error& e) {
            EXPECT_NE(std::string(e.what()).find("field '" + field + "'"), std::string::npos) << e.what();
        }
    };
    json d = doc;
    d["devices"][0]["histograms"]["d2c_write"]["buckets"][0][0] = "x";
    expect_field(d, "histograms.d2c_write");
    d = doc;
    d["devices"][0]["histograms"]["d2c_write"].erase("buckets");
    expect_field(d, "histograms.d2c_write");
    d = doc;
    d["devices"][0]["histograms"]["d2c_write"]["unit"] = 1;
    expect_field(d, "histograms.d2c_write.unit");
    d = doc;
    d["devices"][0]["histograms"]["lba_write"]["buckets"][0][1] = -1;
    expect_field(d, "histograms.lba_write");
}

// The replay's fio runs raised in CFS niceness, never in a real-time class (docs/distill.md, "A replay under load"):
// the command is nice(1) with a negative increment in front of fio, and nothing names chrt or SCHED_FIFO.
TEST(Verify, ReplayFioRunsNicedNotRealTime) {
    const auto cmd = replay_fio_command();
    ASSERT_EQ(cmd.size(), 4u);
    EXPECT_EQ(cmd[0], "nice");
    EXPECT_EQ(cmd[1], "-n");
    EXPECT_LT(std::stoi(cmd[2]), 0);
    EXPECT_GE(std::stoi(cmd[2]), -20);
    EXPECT_EQ(cmd[3], "fio");
}
