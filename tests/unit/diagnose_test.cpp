// diagnose/: each rule fires on a trace made to trigger it, with its figures, and stays quiet on one that does not
// (docs/diagnose.md); report/'s breakdown section shows a --breakdown summary's stage figures and nothing without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/histogram.h"
#include "diagnose/diagnose.h"
#include "report/report_breakdown.h"
#include "report/svg_chart.h"
#include "tests/error_of.h"
#include "tests/event_lines.h"

using nlohmann::json;
using namespace kvio;

namespace {

/// A log2 latency histogram (kvio.trace/1 shape) of `n` values of `v` ns each.
json hist(uint64_t n, uint64_t v) {
    Histogram h(HistKind::Log2, "ns", 64);
    if (n) h.add(v, n);
    json j = h.to_json();
    j["percentiles"] = h.percentiles_json();
    return j;
}

/// A kvio.trace/1 document with one device (loop7, 7:7) with histograms `hs` and these counts and limits.
json trace_doc(const json& hs, uint64_t reads = 0, uint64_t read_bytes = 0, uint64_t max_kb = 1280,
               uint64_t hw_kb = 1280) {
    return {{"schema", "kvio.trace/1"},
            {"duration_s", 1.0},
            {"devices",
             {{{"dev", "7:7"},
               {"disk", "loop7"},
               {"max_sectors_kb", max_kb},
               {"max_hw_sectors_kb", hw_kb},
               {"nr_requests", 128},
               {"read", {{"cmds", reads}, {"bytes", read_bytes}}},
               {"write", {{"cmds", 0}, {"bytes", 0}}},
               {"histograms", hs}}}},
            {"process", json::object()}};
}

std::vector<diagnose::Finding> with_id(const std::vector<diagnose::Finding>& fs, const std::string& id) {
    std::vector<diagnose::Finding> out;
    for (const auto& f : fs)
        if (f.id == id) out.push_back(f);
    return out;
}

/// A temporary file holding `text`, removed at destruction.
struct TmpText {
    explicit TmpText(const std::string& text) {
        char t[] = "/tmp/kvio-diag-XXXXXX";
        int fd = mkstemp(t);
        close(fd);
        path = t;
        std::ofstream(path) << text;
    }
    ~TmpText() { std::remove(path.c_str()); }
    std::string path;
};

/// Read commands on 7:7: `per_ms` of `bytes` each issued every ms for `ms` ms from `t0` ns, each taking `d2c` ns,
/// at sectors from `sector` on.
std::string reads(uint64_t t0, uint64_t ms, uint64_t per_ms, uint64_t bytes, uint64_t d2c, uint64_t& sector) {
    std::string s;
    for (uint64_t i = 0; i < ms; ++i)
        for (uint64_t k = 0; k < per_ms; ++k) {
            const uint64_t t = t0 + i * 1'000'000 + k;
            s += test::cmd_line("read", sector, bytes, t, t + d2c, 9, "7:7", "loop7", "app") + "\n";
            sector += bytes / 512 + 8;
        }
    return s;
}

}  // namespace

TEST(Diagnose, FsyncDominatedWritesNeedManyLongFsyncs) {
    json t = trace_doc(json::object());
    t["process"] = {{"fsync", hist(32, 2'000'000)}, {"vfs_write", hist(64, 10'000)}};
    auto f = with_id(diagnose::diagnose({t, ""}), "fsync_dominated_writes");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].figures["fsync_calls"], 32);
    EXPECT_EQ(f[0].figures["write_calls"], 64);
    EXPECT_NEAR(f[0].figures["fsync_share_pct"].get<double>(), 100.0 * 64e6 / (64e6 + 640e3), 1e-6);
    EXPECT_NE(f[0].summary.find("32 fsync"), std::string::npos) << f[0].summary;
    // one fsync per 100 writes: not fsync-dominated
    t["process"] = {{"fsync", hist(32, 2'000'000)}, {"vfs_write", hist(3200, 10'000)}};
    EXPECT_TRUE(with_id(diagnose::diagnose({t, ""}), "fsync_dominated_writes").empty());
}

TEST(Diagnose, QueueWaitWhenQ2DExceedsD2C) {
    auto f = with_id(
        diagnose::diagnose({trace_doc({{"q2d_read", hist(100, 3'000'000)}, {"d2c_read", hist(100, 200'000)}}), ""}),
        "queue_wait");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].op, "read");
    EXPECT_EQ(f[0].figures["requests"], 100);
    EXPECT_DOUBLE_EQ(f[0].figures["wait_ns_mean"].get<double>(), 3e6);
    EXPECT_DOUBLE_EQ(f[0].figures["d2c_ns_mean"].get<double>(), 2e5);
    EXPECT_TRUE(with_id(diagnose::diagnose(
                            {trace_doc({{"q2d_read", hist(100, 100'000)}, {"d2c_read", hist(100, 200'000)}}), ""}),
                        "queue_wait")
                    .empty());
    // with the breakdown: the stages of the same requests, the largest named (Q2G: waiting for a tag)
    json hs = {{"bt_q2g_read", hist(50, 5'000'000)},
               {"bt_g2d_read", hist(50, 1'000)},
               {"bt_d2c_read", hist(50, 100'000)},
               {"bt_q2c_read", hist(50, 5'101'000)}};
    f = with_id(diagnose::diagnose({trace_doc(hs), ""}), "queue_wait");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].figures["largest_stage"], "Q2G");
    EXPECT_NE(f[0].action.find("nr_requests 128"), std::string::npos) << f[0].action;
}

TEST(Diagnose, RequeuesAndMergesFromBlockEvents) {
    json t = trace_doc(json::object(), 100, 100 * 4096);
    t["block_events"] = {{{"dev", "7:7"},
                          {"disk", "loop7"},
                          {"read", {{"requeues", 3}, {"bio_backmerges", 300}, {"rq_merges", 0}}},
                          {"write", {{"requeues", 0}}},
                          {"other", {{"requeues", 0}}}}};
    auto fs = diagnose::diagnose({t, ""});
    auto rq = with_id(fs, "requeues");
    ASSERT_EQ(rq.size(), 1u);
    EXPECT_EQ(rq[0].figures["requeues"], 3);
    auto mg = with_id(fs, "merged_small_io");
    ASSERT_EQ(mg.size(), 1u);
    EXPECT_DOUBLE_EQ(mg[0].figures["bios_per_cmd"].get<double>(), 4.0);
    EXPECT_DOUBLE_EQ(mg[0].figures["bio_bytes_mean"].get<double>(), 1024.0);
    t["block_events"][0]["read"] = {{"requeues", 0}, {"bio_backmerges", 10}};
    fs = diagnose::diagnose({t, ""});
    EXPECT_TRUE(with_id(fs, "requeues").empty());
    EXPECT_TRUE(with_id(fs, "merged_small_io").empty());
}

TEST(Diagnose, SplitByMaxSectorsFromBssplitAndSplits) {
    Histogram bs(HistKind::Log2, "bytes", 64);
    bs.add(4096, 128);
    json t = trace_doc({{"bssplit_read", bs.to_json()}}, 128, 128 * 4096, 4, 1280);
    t["block_events"] = {{{"dev", "7:7"}, {"read", {{"splits", 120}}}, {"write", json::object()}}};
    auto f = with_id(diagnose::diagnose({t, ""}), "split_by_max_sectors");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].figures["cmds_at_limit"], 128);
    EXPECT_EQ(f[0].figures["splits"], 120);
    EXPECT_NE(f[0].action.find("echo 1280 > /sys/block/loop7/queue/max_sectors_kb"), std::string::npos);
    // 4 KiB commands but no split and no events: the application's own size, no finding
    t["block_events"][0]["read"]["splits"] = 0;
    EXPECT_TRUE(with_id(diagnose::diagnose({t, ""}), "split_by_max_sectors").empty());
}

// Runs of contiguous 4 KiB commands, each issued before the previous completed: 64 KiB transfers split at a 4 KiB
// limit, found from the events alone; the same commands one after the other (QD 1) are the application's own size.
TEST(Diagnose, SplitRunsFromEvents) {
    std::string split, serial;
    for (uint64_t x = 0; x < 32; ++x)
        for (uint64_t k = 0; k < 16; ++k) {
            const uint64_t sector = x * 1024 + k * 8, t = x * 1'000'000 + k * 1000;
            split += test::cmd_line("read", sector, 4096, t, t + 50'000, 9, "7:7", "loop7", "app") + "\n";
            const uint64_t ts = (x * 16 + k) * 100'000;
            serial += test::cmd_line("read", sector, 4096, ts, ts + 50'000, 9, "7:7", "loop7", "app") + "\n";
        }
    Histogram bs(HistKind::Log2, "bytes", 64);
    bs.add(4096, 512);
    json t = trace_doc({{"bssplit_read", bs.to_json()}}, 512, 512 * 4096, 4, 4);
    TmpText a(split), b(serial);
    auto f = with_id(diagnose::diagnose({t, a.path}), "split_by_max_sectors");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_DOUBLE_EQ(f[0].figures["transfer_bytes_mean"].get<double>(), 65536.0);
    EXPECT_DOUBLE_EQ(f[0].figures["chained_share_pct"].get<double>(), 100.0);
    EXPECT_NE(f[0].action.find("MDTS"), std::string::npos) << "max_hw_sectors_kb = max_sectors_kb: " << f[0].action;
    EXPECT_TRUE(with_id(diagnose::diagnose({t, b.path}), "split_by_max_sectors").empty());
}

// A loop-like device: max_sectors_kb 1280 but max_segments 128, so buffered transfers of 2 MiB reach it as runs of
// four 512 KiB commands in flight together. The finding is split_by_max_segments with the 512 KiB cap, and its action
// does not tell to raise max_sectors_kb; without max_segments in the summary, 512 KiB is no limit and nothing is found.
TEST(Diagnose, SplitAtMaxSegmentsPagesBelowMaxSectors) {
    std::string ev;
    for (uint64_t x = 0; x < 16; ++x)
        for (uint64_t k = 0; k < 4; ++k) {
            const uint64_t sector = x * 8192 + k * 1024, t = x * 10'000'000 + k * 1000;
            ev += test::cmd_line("write", sector, 524288, t, t + 2'000'000, 9, "7:7", "loop7", "app") + "\n";
        }
    json t = trace_doc(json::object(), 0, 0, 1280, 1280);
    t["devices"][0]["write"] = {{"cmds", 64}, {"bytes", 64 * 524288}};
    t["devices"][0]["max_segments"] = 128;
    TmpText a(ev);
    auto f = with_id(diagnose::diagnose({t, a.path}), "split_by_max_segments");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].op, "write");
    EXPECT_EQ(f[0].figures["limit_bytes"], 524288);
    EXPECT_EQ(f[0].figures["max_segments"], 128);
    EXPECT_EQ(f[0].figures["cmds_at_limit"], 64);
    EXPECT_DOUBLE_EQ(f[0].figures["transfer_bytes_mean"].get<double>(), 2097152.0);
    EXPECT_NE(f[0].summary.find("max_segments (128) pages of 4 KiB, below max_sectors_kb (1280)"), std::string::npos)
        << f[0].summary;
    EXPECT_NE(f[0].action.find("raising max_sectors_kb does not help"), std::string::npos) << f[0].action;
    EXPECT_TRUE(with_id(diagnose::diagnose({t, a.path}), "split_by_max_sectors").empty());
    EXPECT_TRUE(with_id(diagnose::diagnose({t, ""}), "split_by_max_segments").empty()) << "needs the events";
    t["devices"][0].erase("max_segments");
    EXPECT_TRUE(with_id(diagnose::diagnose({t, a.path}), "split_by_max_segments").empty());
    EXPECT_TRUE(with_id(diagnose::diagnose({t, a.path}), "split_by_max_sectors").empty());
}

// 1 s at depth 8 (128 KiB commands of 1 ms: ~1 GB/s), then 2 s at depth 1 (4 KiB of 1 ms: ~4 MB/s): the low-depth
// reads are found with both figures; the depth-8 second alone, or the depth-1 seconds alone (no better window in
// the trace to compare with), are not.
TEST(Diagnose, LowQueueDepthAgainstTheDevicesBestInTheSameTrace) {
    uint64_t sector = 0;
    const std::string deep = reads(0, 1000, 8, 131072, 1'000'000, sector);
    const std::string shallow = reads(1'000'000'000, 2000, 1, 4096, 999'000, sector);
    json t = trace_doc(json::object(), 10000, 1 << 30);
    TmpText both(deep + shallow), only_deep(deep), only_shallow(shallow);
    auto f = with_id(diagnose::diagnose({t, both.path}), "low_queue_depth");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NEAR(f[0].figures["read_depth"].get<double>(), 1.0, 0.01);
    EXPECT_NEAR(f[0].figures["read_bps"].get<double>(), 4096e3, 4096e3 * 0.05);
    EXPECT_NEAR(f[0].figures["device_best_bps"].get<double>(), 8 * 131072e3, 8 * 131072e3 * 0.05);
    EXPECT_NEAR(f[0].figures["device_best_depth"].get<double>(), 8.0, 0.1);
    EXPECT_NE(f[0].summary.find("depth 1.0"), std::string::npos) << f[0].summary;
    // a summary counting each part's own commands (the events must be the summary's trace)
    EXPECT_TRUE(
        with_id(diagnose::diagnose({trace_doc(json::object(), 8000, 1 << 30), only_deep.path}), "low_queue_depth")
            .empty());
    EXPECT_TRUE(
        with_id(diagnose::diagnose({trace_doc(json::object(), 2000, 1 << 30), only_shallow.path}), "low_queue_depth")
            .empty());
}

// Events that are not the summary's trace are refused, naming both files: a device the summary does not trace,
// more commands than it counted beyond its drops; as many as it counted (or fewer by at most the dropped events) pass.
TEST(Diagnose, EventsOfAnotherTraceAreRefused) {
    uint64_t sector = 0;
    const std::string cmds = reads(0, 10, 1, 4096, 100'000, sector);  // 10 commands of loop7 (7:7)
    // Without its closing summary the stream is cut, not another trace's: said so.
    TmpText cut(cmds);
    diagnose::Inputs in{trace_doc(json::object(), 12, 12 * 4096), cut.path, "t.json"};
    std::string e = test::error_of([&] { diagnose::diagnose(in); });
    EXPECT_NE(e.find(cut.path + " is cut (no closing summary record): it holds 10 commands of loop7 where t.json "
                                "counted 12"),
              std::string::npos)
        << e;
    TmpText ev(cmds + "{\"type\":\"summary\",\"events\":10,\"dropped\":0}\n");
    in.events = ev.path;
    e = test::error_of([&] { diagnose::diagnose(in); });
    EXPECT_NE(e.find(ev.path + " and t.json are not the same trace: the events hold 10 commands of loop7, the summary "
                               "counted 12 (0 events dropped)"),
              std::string::npos)
        << e;
    in.trace["devices"][0]["dev"] = "7:8";
    e = test::error_of([&] { diagnose::diagnose(in); });
    EXPECT_NE(e.find("the events' device 7:7 (loop7) is not in the summary's devices"), std::string::npos) << e;
    in.trace = trace_doc(json::object(), 10, 10 * 4096);
    EXPECT_NO_THROW(diagnose::diagnose(in));
    TmpText dropped(reads(0, 10, 1, 4096, 100'000, sector) +
                    std::string(R"({"type":"summary","events":10,"dropped":2,"lost_completes":0,)"
                                R"("unmatched_completes":0,"negative_deltas":0})") +
                    "\n");
    in.trace = trace_doc(json::object(), 12, 12 * 4096);
    in.events = dropped.path;
    EXPECT_NO_THROW(diagnose::diagnose(in));
}

// Syscall records: 8 MiB read through the page cache, 1 MiB of it from the device -> 87.5 %; with 8 MiB from the
// device, none.
TEST(Diagnose, PageCacheShareFromSyscallRecords) {
    std::string sys;
    for (int i = 0; i < 8; ++i)
        sys += json{{"type", "syscall"},
                    {"name", "read"},
                    {"pid", 9},
                    {"tid", 9},
                    {"comm", "app"},
                    {"fd", 3},
                    {"ts_enter", 1000 * i},
                    {"ts_exit", 1000 * i + 500},
                    {"ret", 1 << 20},
                    {"ino", 12},
                    {"fs_dev", "7:7"},
                    {"gen", 1},
                    {"direct", false},
                    {"file_size", 8 << 20}}
                   .dump() +
               "\n";
    uint64_t sector = 0;
    TmpText ev(sys + reads(0, 8, 1, 131072, 500'000, sector));  // the 1 MiB the device read
    auto f = with_id(diagnose::diagnose({trace_doc(json::object(), 8, 1 << 20), ev.path}), "page_cache_reads");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_DOUBLE_EQ(f[0].figures["page_cache_share"].get<double>(), 0.875);
    EXPECT_EQ(f[0].figures["app_buffered_read_bytes"], 8 << 20);
    sector = 0;
    TmpText all(sys + reads(0, 64, 1, 131072, 500'000, sector));  // all 8 MiB from the device
    EXPECT_TRUE(
        with_id(diagnose::diagnose({trace_doc(json::object(), 64, 8 << 20), all.path}), "page_cache_reads").empty());
    EXPECT_TRUE(with_id(diagnose::diagnose({trace_doc(json::object(), 8, 1 << 20), ""}), "page_cache_reads").empty());
}

/// `n` syscall records `name` on fd 3 (ino 12 on 7:7), each asking `count` bytes at offsets `offset`, offset + `step`,
/// ... and moving them; O_DIRECT when `direct`.
std::string sys_lines(const char* name, int n, uint64_t offset, uint64_t step, uint64_t count, bool direct = false) {
    std::string s;
    for (int i = 0; i < n; ++i)
        s += json{{"type", "syscall"},
                  {"name", name},
                  {"pid", 9},
                  {"tid", 9},
                  {"comm", "app"},
                  {"fd", 3},
                  {"ts_enter", 1000 * i},
                  {"ts_exit", 1000 * i + 500},
                  {"ret", count},
                  {"offset", offset + step * uint64_t(i)},
                  {"count", count},
                  {"ino", 12},
                  {"fs_dev", "7:7"},
                  {"gen", 1},
                  {"direct", direct},
                  {"file_size", 1 << 30}}
                 .dump() +
             "\n";
    return s;
}

/// `cmds` write command records of `bytes` / `cmds` bytes each on 7:7, 1 ms apart: the events of write_doc's trace.
std::string write_cmds(uint64_t cmds, uint64_t bytes) {
    std::string s;
    for (uint64_t i = 0; i < cmds; ++i)
        s += test::cmd_line("write", i * 4096, bytes / cmds, i * 1'000'000, i * 1'000'000 + 50'000, 9, "7:7", "loop7",
                            "app") +
             "\n";
    return s;
}

/// trace_doc with `cmds` write commands of `bytes` bytes in all on loop7 and `flushes` flush commands.
json write_doc(uint64_t cmds, uint64_t bytes, uint64_t flushes = 0) {
    json t = trace_doc(json::object());
    t["devices"][0]["write"] = {{"cmds", cmds}, {"bytes", bytes}};
    t["devices"][0]["histograms"]["flush_cmds"] = hist(flushes, 1);
    return t;
}

// 64 appending 1 KiB writes (64 KiB) against 64 x 3 device commands of 12 KiB (data page + journal: 768 KiB): 12x,
// found with its figures; the same bytes written by the device for 64 writes of 16 KiB (1 MiB) is 0.75x: nothing;
// 16 x 1 MiB writes are not small whatever the device wrote.
TEST(Diagnose, SmallWriteAmplificationFromAppAgainstDeviceBytes) {
    TmpText small(sys_lines("pwrite64", 64, 0, 1024, 1024) + write_cmds(192, 768 * 1024));
    auto f = with_id(diagnose::diagnose({write_doc(192, 768 * 1024, 64), small.path}), "small_write_amplification");
    ASSERT_EQ(f.size(), 1u);
    const json& g = f[0].figures;
    EXPECT_EQ(g["app_write_calls"], 64);
    EXPECT_EQ(g["app_write_bytes"], 64 * 1024);
    EXPECT_DOUBLE_EQ(g["app_write_bytes_mean"].get<double>(), 1024.0);
    EXPECT_EQ(g["partial_page_write_calls"], 64);
    EXPECT_EQ(g["device_write_cmds"], 192);
    EXPECT_DOUBLE_EQ(g["device_write_cmds_per_app_write"].get<double>(), 3.0);
    EXPECT_DOUBLE_EQ(g["write_amplification"].get<double>(), 12.0);
    EXPECT_EQ(g["flush_cmds"], 64);
    EXPECT_NE(f[0].action.find("read the rest of the page"), std::string::npos) << f[0].action;
    EXPECT_NE(diagnose::to_text(f).find("[small_write_amplification] write: the application wrote 64 KiB in 64 calls"),
              std::string::npos)
        << diagnose::to_text(f);

    TmpText whole(sys_lines("write", 64, 0, 16384, 16384) + write_cmds(192, 768 * 1024));
    EXPECT_TRUE(
        with_id(diagnose::diagnose({write_doc(192, 768 * 1024), whole.path}), "small_write_amplification").empty());
    TmpText large(sys_lines("write", 16, 0, 1 << 20, 1 << 20) + write_cmds(512, 64u << 20));
    EXPECT_TRUE(
        with_id(diagnose::diagnose({write_doc(512, 64u << 20), large.path}), "small_write_amplification").empty());
    // Without syscall records there are no application bytes to compare with.
    EXPECT_TRUE(with_id(diagnose::diagnose({write_doc(192, 768 * 1024), ""}), "small_write_amplification").empty());
}

// 32 buffered 4 KiB reads at 512-byte offsets and 32 writes of 1000 bytes at 4 KiB offsets: both directions found
// (offsets vs lengths counted apart); the same calls on 4 KiB are not. Device commands at odd sectors: found on the
// device.
TEST(Diagnose, UnalignedIoFromSyscallsAndCommands) {
    TmpText ev(sys_lines("pread64", 32, 512, 8192, 4096) + sys_lines("pwrite64", 32, 0, 4096, 1000));
    auto f = with_id(diagnose::diagnose({trace_doc(json::object()), ev.path}), "unaligned_io");
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].op, "read");
    EXPECT_EQ(f[0].device, "");
    EXPECT_EQ(f[0].figures["calls"], 32);
    EXPECT_EQ(f[0].figures["unaligned_calls"], 32);
    EXPECT_EQ(f[0].figures["unaligned_offset_calls"], 32);
    EXPECT_EQ(f[0].figures["unaligned_length_calls"], 0);
    EXPECT_EQ(f[0].figures["off_logical_block_calls"], 0) << "no logical_block_size in the trace: 0 = not counted";
    EXPECT_EQ(f[1].op, "write");
    EXPECT_EQ(f[1].figures["unaligned_offset_calls"], 0);
    EXPECT_EQ(f[1].figures["unaligned_length_calls"], 32);
    EXPECT_DOUBLE_EQ(f[1].figures["unaligned_pct"].get<double>(), 100.0);

    json t = trace_doc(json::object());
    t["devices"][0]["logical_block_size"] = 512;
    f = with_id(diagnose::diagnose({t, ev.path}), "unaligned_io");
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[1].figures["off_logical_block_calls"], 32) << "1000 bytes is not a multiple of 512";
    EXPECT_EQ(f[0].figures["off_logical_block_calls"], 0) << "512-byte offsets are on the logical block";

    TmpText aligned(sys_lines("pread64", 32, 4096, 8192, 4096) + sys_lines("pwrite64", 32, 0, 4096, 4096));
    EXPECT_TRUE(with_id(diagnose::diagnose({trace_doc(json::object()), aligned.path}), "unaligned_io").empty());
    // Half or more: 8 unaligned calls of 32 are not a finding.
    TmpText few(sys_lines("pread64", 24, 0, 4096, 4096) + sys_lines("pread64", 8, 512, 4096, 4096));
    EXPECT_TRUE(with_id(diagnose::diagnose({trace_doc(json::object()), few.path}), "unaligned_io").empty());

    uint64_t sector = 1;  // reads() leaves 8 sectors between commands: every start stays odd
    TmpText cmds(reads(0, 20, 1, 4096, 100'000, sector));
    f = with_id(diagnose::diagnose({trace_doc(json::object(), 20, 20 * 4096), cmds.path}), "unaligned_io");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].device, "loop7");
    EXPECT_EQ(f[0].figures["cmds"], 20);
    EXPECT_EQ(f[0].figures["unaligned_cmds"], 20);
    sector = 0;
    TmpText on4k(reads(0, 20, 1, 4096, 100'000, sector));
    EXPECT_TRUE(
        with_id(diagnose::diagnose({trace_doc(json::object(), 20, 20 * 4096), on4k.path}), "unaligned_io").empty());
}

TEST(ReportBreakdown, StageTableFromHistogramsAndNothingWithout) {
    json hs = {{"bt_q2g_read", hist(10, 1000)},
               {"bt_g2d_read", hist(10, 2000)},
               {"bt_d2c_read", hist(10, 7000)},
               {"bt_q2c_read", hist(10, 10'000)}};
    const std::string html = report::breakdown_section(trace_doc(hs));
    EXPECT_NE(html.find("<table id=\"breakdown-loop7-read\">"), std::string::npos);
    EXPECT_EQ(html.find("breakdown-loop7-write"), std::string::npos) << "no staged write";
    EXPECT_NE(html.find("<td>Q2G</td><td>10</td><td>" + report::human_ns(1000) + "</td>"), std::string::npos) << html;
    EXPECT_NE(html.find("<td>" + report::stage_share(70'000, 100'000) + "</td>"), std::string::npos);
    EXPECT_EQ(report::stage_share(70'000, 100'000), "70.00 %");
    EXPECT_EQ(report::breakdown_section(trace_doc({{"d2c_read", hist(10, 7000)}})), "");
}
