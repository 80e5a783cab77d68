// Unit tests of replay's arithmetic: offset wrapping, timing modes, concurrency dependencies, range merging,
// the re-geometry of a record for another target, and the compare metrics on a hand-written stream.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "replay/compare.h"
#include "report/compare_scored.h"
#include "replay/record_replay.h"
#include "replay/safety.h"
#include "replay/schedule.h"
#include "workload/model.h"

using namespace kvio::replay;

TEST(ReplayOffsets, FittingCommandsKeepTheirOffset) {
    EXPECT_EQ(map_offset(0, 4096, 1 << 20, 512), 0u);
    EXPECT_EQ(map_offset((1 << 20) - 4096, 4096, 1 << 20, 512), uint64_t((1 << 20) - 4096));
}

TEST(ReplayOffsets, WrapModuloTargetSize) {
    const uint64_t T = 1 << 20;  // 1 MiB target
    EXPECT_EQ(map_offset(T, 4096, T, 512), 0u);
    EXPECT_EQ(map_offset(T + 8192, 4096, T, 512), 8192u);
    EXPECT_EQ(map_offset(5 * T + 65536, 65536, T, 4096), 65536u);
    // A wrapped command that would cross the end starts at 0.
    EXPECT_EQ(map_offset(2 * T - 4096, 8192, T, 512), 0u);
    // A target that is not a multiple of the alignment wraps at the aligned size.
    EXPECT_EQ(map_offset(T + 4096, 4096, T + 1000, 4096), 4096u);
    EXPECT_EQ(map_offset(T, 4096, T + 1000, 4096), 0u);
}

TEST(ReplayOffsets, TooLargeCannotFit) {
    EXPECT_FALSE(map_offset(0, 2 << 20, 1 << 20, 512).has_value());
    EXPECT_EQ(map_offset(0, 1 << 20, 1 << 20, 512), 0u);
}

TEST(ReplayTiming, ParseAndSchedule) {
    Timing asis = parse_timing("asis"), afap = parse_timing("afap"), half = parse_timing("scale=0.5");
    EXPECT_EQ(timing_name(asis), "asis");
    EXPECT_EQ(timing_name(afap), "afap");
    EXPECT_EQ(timing_name(half), "scale=0.5");
    EXPECT_EQ(scheduled_ns(1000, 1000, asis), 0u);
    EXPECT_EQ(scheduled_ns(1001000, 1000, asis), 1000000u);
    EXPECT_EQ(scheduled_ns(1001000, 1000, afap), 0u);
    EXPECT_EQ(scheduled_ns(1001000, 1000, half), 500000u);
    EXPECT_EQ(scheduled_ns(1001000, 1000, parse_timing("scale=3")), 3000000u);
    EXPECT_EQ(scheduled_ns(500, 1000, asis), 0u);  // never before the start
    EXPECT_THROW(parse_timing("scale=0"), kvio::Error);
    EXPECT_THROW(parse_timing("scale=-1"), kvio::Error);
    EXPECT_THROW(parse_timing("scale=x"), kvio::Error);
    EXPECT_THROW(parse_timing("scale=1x"), kvio::Error);
    EXPECT_EQ(timing_name(parse_timing("fast")), "afap");  // the io-trace spelling
    EXPECT_THROW(parse_timing("quick"), kvio::Error);
}

TEST(ReplayDependencies, SequentialCaptureIsSequential) {
    // Each command issued after the previous completed: depth 1, command i waits for all before it.
    std::vector<uint64_t> is{0, 10, 20, 30}, co{5, 15, 25, 35};
    Dependencies d = dependencies(is, co);
    EXPECT_EQ(d.max_inflight, 1u);
    EXPECT_EQ(d.need, (std::vector<uint32_t>{0, 1, 2, 3}));
    EXPECT_EQ(d.completion_order, (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(ReplayDependencies, OverlapIsKept) {
    // 0 and 1 overlap (1 issued before 0 completed); 1 completes first; 2 issued after both; 3 while 2 runs.
    std::vector<uint64_t> is{0, 2, 20, 21}, co{10, 5, 30, 25};
    Dependencies d = dependencies(is, co);
    EXPECT_EQ(d.completion_order, (std::vector<uint32_t>{1, 0, 3, 2}));
    EXPECT_EQ(d.need, (std::vector<uint32_t>{0, 0, 2, 2}));
    EXPECT_EQ(d.max_inflight, 2u);
}

TEST(ReplayDependencies, TiesDoNotDeadlock) {
    // Zero-latency commands and equal timestamps: a command never waits for itself or a later one.
    std::vector<uint64_t> is{5, 5, 5}, co{5, 5, 5};
    Dependencies d = dependencies(is, co);
    for (size_t i = 0; i < is.size(); ++i)
        for (uint32_t p = 0; p < d.need[i]; ++p) EXPECT_LT(d.completion_order[p], i);
    EXPECT_EQ(d.max_inflight, 3u);
}

TEST(ReplaySafety, MergeRanges) {
    auto m = merge_ranges({{100, 10}, {0, 50}, {50, 10}, {105, 20}, {200, 0}});
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0], (std::pair<uint64_t, uint64_t>{0, 60}));
    EXPECT_EQ(m[1], (std::pair<uint64_t, uint64_t>{100, 25}));
}

TEST(ReplaySafety, CheckZeroFindsDataAndHonoursSlotMagic) {
    std::string p = testing::TempDir() + "replay_zero.bin";
    struct RemoveAtEnd {
        const std::string& path;
        ~RemoveAtEnd() { std::remove(path.c_str()); }
    } rm{p};
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        std::string z(8192, '\0');
        f.write(z.data(), z.size());
        f.write("KVIOSLT1", 8);
        f.write(z.data(), 4088);
        f.write(z.data(), 100);
        f.put('x');
    }
    EXPECT_EQ(check_zero(p, {{0, 8192}}), 8192u);
    try {
        check_zero(p, {{0, 8192}, {12288, 200}});
        ADD_FAILURE() << "no refusal";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("at byte 12388"), std::string::npos) << e.what();
    }
    // The slot at 8192 starts with kvio's slot magic: accepted without reading the rest.
    EXPECT_EQ(check_zero(p, {{8192, 4096}}, "KVIOSLT1"), 0u);
    EXPECT_THROW(check_zero(p, {{8192, 4096}}), kvio::Error);
    // Bytes past the end of a regular file are not data.
    EXPECT_EQ(check_zero(p, {{0, 4096}, {1 << 20, 4096}}), 4096u);
}

namespace {
kvio::workload::Record small_record() {
    using namespace kvio::workload;
    GeometryOptions go;
    Geometry g = compute_geometry(builtin_model("llama3.2-1b"), go);
    DeviceGeometry d;
    d.engine = "posix";
    d.lba_bytes = 512;
    d.mdts_bytes = 1280 * 1024;
    d.max_io_bytes = 512 * 1024;
    d.block_align = 4096;
    compute_layout(d, g.per_rank_bytes);
    AccessPattern a;
    a.num_chunks = 2;
    return make_record(g, d, a);
}

kvio::workload::TargetInfo target(uint32_t lba, uint32_t max_sectors_kb, uint32_t max_segments) {
    kvio::workload::TargetInfo t;
    t.lba_bytes = lba;
    t.mdts_bytes = 1280 * 1024;
    t.dev.max_sectors_kb = max_sectors_kb;
    t.dev.max_hw_sectors_kb = 1280;
    t.dev.max_segments = max_segments;
    t.capacity_bytes = 1 << 30;
    return t;
}
}  // namespace

TEST(ReplayRegeometry, SameLimitsNoNotes) {
    auto rec = small_record();
    std::vector<std::string> notes;
    auto d = regeometry(rec, target(512, 1280, 128), "posix", notes);
    EXPECT_TRUE(notes.empty()) << notes.front();
    EXPECT_EQ(d.max_io_bytes, 512u * 1024);  // recorded cap kept though the target allows 1280 KiB
    EXPECT_EQ(d.slot_bytes, rec.device.slot_bytes);
}

TEST(ReplayRegeometry, LowerMaxSectorsReSplits) {
    auto rec = small_record();
    std::vector<std::string> notes;
    auto d = regeometry(rec, target(512, 64, 128), "posix", notes);
    EXPECT_EQ(d.max_io_bytes, 64u * 1024);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("transfer cap 524288 -> 65536"), std::string::npos) << notes[0];
    EXPECT_EQ(d.slot_bytes, rec.device.slot_bytes);  // offsets unchanged
}

TEST(ReplayRegeometry, LargerLbaRecomputesLayout) {
    auto rec = small_record();
    std::vector<std::string> notes;
    auto d = regeometry(rec, target(4096, 1280, 128), "io_uring", notes);
    EXPECT_EQ(d.lba_bytes, 4096u);
    EXPECT_EQ(d.engine, "io_uring");
    EXPECT_EQ(d.io_bytes % 4096, 0u);
    EXPECT_GE(notes.size(), 2u);  // engine, LBA size
}

namespace {

/// A kvio.events/1 file of `n` 4 KiB reads at depth 1, then `n` 4 KiB writes at depth 4 (reads first unless
/// `writes_first`), one command every 100 µs, each taking 50 µs (reads) or 400 µs (writes).
std::string two_phase_stream(const std::string& name, int n, bool writes_first) {
    const std::string p = testing::TempDir() + name;
    std::ofstream f(p);
    uint64_t t = 1'000'000'000;
    auto put = [&](bool write, uint64_t d2c, uint64_t sector) {
        f << R"({"type":"cmd","src":"block","dev":"7:0","disk":"loop0","op":")" << (write ? "write" : "read")
          << R"(","rwbs":")" << (write ? "W" : "R") << R"(","sector":)" << sector << R"(,"bytes":4096,"ts_issue":)" << t
          << R"(,"ts_complete":)" << t + d2c << R"(,"pid":1,"tid":1,"comm":"x","qd":1})"
          << "\n";
        t += 100'000;
    };
    for (int half = 0; half < 2; ++half) {
        const bool write = (half == 0) == writes_first;
        for (int i = 0; i < n; ++i) put(write, write ? 400'000 : 50'000, uint64_t(i) * 64);
    }
    return p;
}

}  // namespace

// compare scores B against A as distill --verify scores a replay: a stream against itself is perfect, the same
// commands with the phases swapped keep the whole-run mix but lose every window and the phase order.
TEST(CompareFidelity, WindowsAndPhasesOfTwoStreams) {
    const std::string a = two_phase_stream("cmp_a.jsonl", 1000, false);
    const std::string b = two_phase_stream("cmp_b.jsonl", 1000, true);
    const Comparison same = kvio::report::compare_scored(a, "", a, "");
    ASSERT_FALSE(same.fidelity.is_null());
    EXPECT_EQ(same.fidelity["rwmix_err_points"].get<double>(), 0.0);
    EXPECT_EQ(same.fidelity["qd_tv"].get<double>(), 0.0);
    EXPECT_EQ(same.fidelity["time_resolved"]["worst"]["depth_tv"].get<double>(), 0.0);
    EXPECT_EQ(same.fidelity["time_resolved"]["windows"].get<size_t>(), 20u);
    EXPECT_TRUE(same.fidelity["time_resolved"]["phases"]["in_order"].get<bool>()) << same.fidelity.dump();
    EXPECT_NE(same.fidelity_summary.find("in order"), std::string::npos) << same.fidelity_summary;
    const Comparison swapped = kvio::report::compare_scored(a, "", b, "");
    ASSERT_FALSE(swapped.fidelity.is_null());
    EXPECT_EQ(swapped.fidelity["rwmix_err_points"].get<double>(), 0.0);
    EXPECT_EQ(swapped.fidelity["time_resolved"]["worst"]["read_err_points"].get<double>(), 100.0)
        << swapped.fidelity["time_resolved"].dump();
    EXPECT_FALSE(swapped.fidelity["time_resolved"]["phases"]["in_order"].get<bool>());
    EXPECT_EQ(comparison_json(swapped)["fidelity"], swapped.fidelity);
}
