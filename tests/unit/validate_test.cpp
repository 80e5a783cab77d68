// validate/: projection rules, the three joins and the scores, on synthetic streams with known answers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "validate/synth.h"
#include "validate/validate.h"

using namespace kvio;
using namespace kvio::validate;
using nlohmann::json;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;
const uint32_t kDev = kernel_dev(DevId{7, 0});

// A temporary directory for files of one test.
struct Tmp {
    std::filesystem::path dir;
    Tmp() {
        dir =
            std::filesystem::temp_directory_path() / ("kvio-validate-test-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir);
    }
    ~Tmp() { std::filesystem::remove_all(dir); }
    std::string write(const std::string& name, const std::vector<json>& lines) const {
        std::string p = (dir / name).string();
        std::ofstream o(p);
        for (const auto& l : lines) o << l.dump() << "\n";
        return p;
    }
    std::string write_raw(const std::string& name, const std::string& text) const {
        std::string p = (dir / name).string();
        std::ofstream(p) << text;
        return p;
    }
};

json meta(const std::string& engine = "posix", const std::string& layout = "slots") {
    return {{"type", "meta"},
            {"schema", "kvio.semantic/1"},
            {"model", "t"},
            {"engine", engine},
            {"layout", layout},
            {"dev", "7:0"},
            {"lba_bytes", 512},
            {"block_align", 4096},
            {"mdts_bytes", 128 * KiB},
            {"max_io_bytes", 512 * KiB},
            {"max_sectors_kb", 1280},
            {"header_bytes", 4096},
            {"clock", "CLOCK_MONOTONIC"}};
}

json op_rec(const std::string& kind, uint64_t id, uint64_t payload, uint64_t off, uint64_t len, uint64_t t0,
            uint64_t t1, uint64_t trace_id = 0, const std::string& key = "") {
    json j = {{"op", kind},     {"object_id", id},  {"trace_id", trace_id},
              {"key", key},     {"bytes", payload}, {"payload_bytes", payload},
              {"dev", "7:0"},   {"dev_off", off},   {"extents", json::array({json::array({off, len})})},
              {"ts_start", t0}, {"ts", t1},         {"engine", "posix"}};
    return j;
}

json blk(const std::string& op, uint64_t off, uint64_t bytes, uint64_t ts, const std::string& dev = "7:0") {
    return {{"type", "cmd"},           {"src", "block"}, {"dev", dev},
            {"disk", "loop0"},         {"op", op},       {"rwbs", op == "write" ? "WS" : "R"},
            {"sector", off / 512},     {"bytes", bytes}, {"ts_issue", ts},
            {"ts_complete", ts + 100}, {"d2c_ns", 100},  {"qd", 1}};
}

json nvme(const std::string& op, uint64_t slba, uint64_t nlb, uint64_t ts, uint64_t cid, uint64_t user_data) {
    return {{"type", "cmd"},      {"src", "nvme"},
            {"dev", "259:0"},     {"disk", "nvme0n1"},
            {"op", op},           {"rwbs", op == "write" ? "W" : "R"},
            {"sector", slba * 8}, {"bytes", nlb * 4096},
            {"ts_issue", ts},     {"ts_complete", ts + 100},
            {"d2c_ns", 100},      {"qd", 1},
            {"qid", 1},           {"cid", cid},
            {"nsid", 1},          {"opcode", op == "write" ? 1 : 2},
            {"slba", slba},       {"nlb", nlb},
            {"status", 0},        {"user_data", user_data}};
}

json summary() {
    return {{"type", "summary"}, {"events", 0}, {"dropped", 0}, {"unmatched_completes", 0}, {"negative_deltas", 0}};
}

Report run_files(const std::string& sem, const std::string& cmds, JoinMode mode = JoinMode::Auto) {
    Options o;
    o.semantic = sem;
    o.commands = cmds;
    o.join = mode;
    return run(o);
}

ProjectionRules rules_for(const json& m) {
    Tmp t;
    SemanticTrace tr = read_semantic(t.write("s.jsonl", {m}));
    return resolve_rules(tr.meta, GeometryOverrides{});
}

}  // namespace

// ---------------------------------------------------------------- projection

TEST(ValidateProjection, SlotsStoreIsHeaderPlusCappedPayload) {
    ProjectionRules r = rules_for(meta());
    EXPECT_EQ(r.engine_limit, 512 * KiB);
    EXPECT_EQ(r.kernel_limit, 1280 * KiB);
    ObjectOp op;
    op.kind = OpKind::Store;
    op.bytes = 32 * MiB;  // llama3.1-8b bf16, 256 tokens
    std::vector<uint64_t> s;
    project(op, r, s);
    ASSERT_EQ(s.size(), 1u + 64u);
    EXPECT_EQ(s[0], 4096u);
    for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], 512 * KiB);
    op.kind = OpKind::Load;
    op.bytes = 17989632;  // deepseek-v3: 70,272 B/token × 256 = 34 × 512 KiB + 161,792
    project(op, r, s);
    ASSERT_EQ(s.size(), 35u);
    EXPECT_EQ(s.back(), 17989632u - 34 * 512 * KiB);
}

TEST(ValidateProjection, PayloadPaddedToLbaHeaderToBlockAlign) {
    json m = meta();
    m["header_bytes"] = 64;
    ProjectionRules r = rules_for(m);
    ObjectOp op;
    op.kind = OpKind::Store;
    op.bytes = 1000;
    std::vector<uint64_t> s;
    project(op, r, s);
    EXPECT_EQ(s, (std::vector<uint64_t>{4096, 1024}));
}

TEST(ValidateProjection, EngineCapThenKernelSplit) {
    // 1536 KiB with a 768 KiB userspace cap on a 512 KiB max_sectors_kb device: each 768 KiB write is cut by
    // the block layer into 512 + 256, not 3 × 512 (the min() of the two limits would say).
    json m = meta();
    m["max_io_bytes"] = 768 * KiB;
    m["max_sectors_kb"] = 512;
    ProjectionRules r = rules_for(m);
    ObjectOp op;
    op.kind = OpKind::Load;
    op.bytes = 1536 * KiB;
    std::vector<uint64_t> s;
    project(op, r, s);
    EXPECT_EQ(s, (std::vector<uint64_t>{512 * KiB, 256 * KiB, 512 * KiB, 256 * KiB}));
}

TEST(ValidateProjection, PassthroughSplitsAtMdtsOnly) {
    json m = meta("uring_cmd");
    m.erase("max_io_bytes");
    m.erase("max_sectors_kb");
    ProjectionRules r = rules_for(m);
    EXPECT_TRUE(r.passthrough);
    EXPECT_EQ(r.engine_limit, 128 * KiB);
    EXPECT_EQ(r.kernel_limit, 0u);
    ObjectOp op;
    op.kind = OpKind::Load;
    op.bytes = 1 * MiB;
    std::vector<uint64_t> s;
    project(op, r, s);
    EXPECT_EQ(s, std::vector<uint64_t>(8, 128 * KiB));
}

TEST(ValidateProjection, FilesSplitAtExtentBoundaries) {
    json m = meta("posix", "files");
    m["header_bytes"] = 0;
    ProjectionRules r = rules_for(m);
    ObjectOp op;
    op.kind = OpKind::Store;
    op.bytes = 1 * MiB;
    // 1 MiB file in two extents of 300 KiB and 724 KiB: the first 512 KiB write crosses the boundary.
    op.extents = {{10 * MiB, 300 * KiB}, {50 * MiB, 724 * KiB}};
    std::vector<uint64_t> s;
    project(op, r, s);
    EXPECT_EQ(s, (std::vector<uint64_t>{300 * KiB, 212 * KiB, 512 * KiB}));
}

TEST(ValidateProjection, MissingLimitsNameTheirFlag) {
    json m = meta();
    m.erase("max_sectors_kb");
    try {
        rules_for(m);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--max-sectors-kb"), std::string::npos) << e.what();
    }
    json p = meta("uring_cmd");
    p.erase("mdts_bytes");
    EXPECT_THROW(rules_for(p), Error);
}

TEST(ValidateProjection, MaxSectorsFromTraceJson) {
    Tmp t;
    json m = meta();
    m.erase("max_sectors_kb");
    SemanticTrace tr = read_semantic(t.write("s.jsonl", {m}));
    json trace = {{"schema", "kvio.trace/1"},
                  {"devices",
                   json::array({{{"dev", "8:0"}, {"max_sectors_kb", 64}}, {{"dev", "7:0"}, {"max_sectors_kb", 256}}})}};
    GeometryOverrides ov;
    ov.trace_json = t.write("trace.json", {trace});
    ProjectionRules r = resolve_rules(tr.meta, ov);
    EXPECT_EQ(r.kernel_limit, 256 * KiB);
    ov.max_sectors_kb = 128;  // the flag wins
    EXPECT_EQ(resolve_rules(tr.meta, ov).kernel_limit, 128 * KiB);
}

// ---------------------------------------------------------------- join and scores

// Two slots of 1 MiB + header; store then load each, with the commands the projection says.
struct SlotsFixture {
    Tmp t;
    std::vector<json> sem{meta()};
    std::vector<json> cmds;
    static constexpr uint64_t kBase = 1 * MiB, kSlot = 4096 + 1 * MiB;
    uint64_t ts = 1'000'000;

    void store_and_load(uint64_t obj, bool with_cmds = true) {
        uint64_t off = kBase + obj * kSlot;
        uint64_t t0 = ts;
        if (with_cmds) {
            cmds.push_back(blk("write", off, 4096, ts += 10));
            cmds.push_back(blk("write", off + 4096, 512 * KiB, ts += 10));
            cmds.push_back(blk("write", off + 4096 + 512 * KiB, 512 * KiB, ts += 10));
        }
        sem.push_back(op_rec("store", obj, 1 * MiB, off, kSlot, t0, ts += 10, obj * 2 + 1));
        t0 = ts += 10;
        if (with_cmds) {
            cmds.push_back(blk("read", off + 4096, 512 * KiB, ts += 10));
            cmds.push_back(blk("read", off + 4096 + 512 * KiB, 512 * KiB, ts += 10));
        }
        sem.push_back(op_rec("load", obj, 1 * MiB, off + 4096, 1 * MiB, t0, ts += 10, obj * 2 + 2));
        ts += 10;
    }
    Report go(JoinMode mode = JoinMode::Auto) {
        cmds.push_back(summary());
        return run_files(t.write("sem.jsonl", sem), t.write("events.jsonl", cmds), mode);
    }
};

TEST(ValidateJoin, ExactCase) {
    SlotsFixture f;
    f.store_and_load(0);
    f.store_and_load(1);
    Report r = f.go();
    EXPECT_EQ(r.join.mode, JoinMode::Offset);
    EXPECT_EQ(r.all.objects, 4u);
    EXPECT_EQ(r.all.exact_match, 4u);
    EXPECT_EQ(r.all.count_match, 4u);
    EXPECT_EQ(r.all.per_cmd_size_match, 4u);
    EXPECT_EQ(r.all.wape, 0.0);
    EXPECT_EQ(r.all.size_tv, 0.0);
    EXPECT_EQ(r.join.joined.cmds, 10u);
    EXPECT_EQ(r.join.untagged.cmds, 0u);
    EXPECT_EQ(r.per_op[int(OpKind::Store)].measured.cmds, 6u);
    EXPECT_EQ(r.per_op[int(OpKind::Store)].measured.min, 4096u);
    EXPECT_EQ(r.per_op[int(OpKind::Load)].measured.bytes, 2 * MiB);
    EXPECT_EQ(summary_line(r),
              "exact-match 4/4 (100.00%)  WAPE 0.0000%  per-cmd size 4/4  size-TV 0.0000  untagged 0 cmds / 0 B");
    json j = report_json(r);
    for (const char* k : {"objects", "exact_match", "count_match", "per_cmd_size_match", "wape", "size_tv",
                          "untagged_cmds", "untagged_bytes", "per_op", "join"})
        EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_EQ(j["per_op"]["load"]["exact_match"], 2);
}

TEST(ValidateJoin, SameCountAndBytesButDifferentSizesFailsTv) {
    // Projected 512 KiB + 512 KiB; measured 256 KiB + 768 KiB: count and bytes agree, the sizes do not.
    SlotsFixture f;
    uint64_t off = SlotsFixture::kBase + 4096;
    f.sem.push_back(op_rec("load", 0, 1 * MiB, off, 1 * MiB, 100, 1000));
    f.cmds.push_back(blk("read", off, 256 * KiB, 200));
    f.cmds.push_back(blk("read", off + 256 * KiB, 768 * KiB, 300));
    Report r = f.go();
    EXPECT_EQ(r.all.exact_match, 1u);
    EXPECT_EQ(r.all.count_match, 1u);
    EXPECT_EQ(r.all.wape, 0.0);
    EXPECT_EQ(r.all.per_cmd_size_match, 0u);
    // bins floor(log2): measured {18: 1/2, 19: 1/2} (768 KiB is in [512 KiB, 1 MiB)), projected {19: 1} → TV 1/2
    EXPECT_DOUBLE_EQ(r.all.size_tv, 0.5);
    EXPECT_EQ(r.all.measured.min, 256 * KiB);
    EXPECT_EQ(r.all.measured.max, 768 * KiB);
}

TEST(ValidateJoin, DuplicateCompleteCountedOnce) {
    // The same command recorded twice (same src, dev, offset, bytes, ts_issue; a later ts_complete):
    // the second record is a duplicate, counted as such, not joined again.
    SlotsFixture f;
    f.store_and_load(0);
    json dup = f.cmds[1];
    dup["ts_complete"] = dup["ts_complete"].get<uint64_t>() + 5000;
    f.cmds.insert(f.cmds.begin() + 3, dup);
    Report r = f.go();
    EXPECT_EQ(r.join.duplicates.cmds, 1u);
    EXPECT_EQ(r.join.duplicates.bytes, 512 * KiB);
    EXPECT_EQ(r.all.exact_match, 2u);
    EXPECT_EQ(r.join.joined.cmds, 5u);
}

TEST(ValidateJoin, CommandStraddlingTwoObjectsIsReportedNotDoubleCounted) {
    // Two stores to adjacent slots at the same time; the plug merged the tail of one and the head of the next.
    SlotsFixture f;
    uint64_t a = SlotsFixture::kBase, b = a + SlotsFixture::kSlot;
    f.sem.push_back(op_rec("store", 0, 1 * MiB, a, SlotsFixture::kSlot, 100, 1000));
    f.sem.push_back(op_rec("store", 1, 1 * MiB, b, SlotsFixture::kSlot, 100, 1000));
    f.cmds.push_back(blk("write", a, 4096, 200));
    f.cmds.push_back(blk("write", a + 4096, 512 * KiB, 210));
    f.cmds.push_back(blk("write", a + 4096 + 512 * KiB, 512 * KiB + 4096, 220));  // last 512 KiB of 0 + header of 1
    f.cmds.push_back(blk("write", b + 4096, 512 * KiB, 230));
    f.cmds.push_back(blk("write", b + 4096 + 512 * KiB, 512 * KiB, 240));
    Report r = f.go();
    EXPECT_EQ(r.join.straddles.cmds, 1u);
    EXPECT_EQ(r.join.straddles.bytes, 512 * KiB + 4096);
    EXPECT_EQ(r.join.joined.cmds, 4u);
    EXPECT_EQ(r.all.exact_match, 0u);
    EXPECT_EQ(r.all.measured.bytes, 4096 + 512 * KiB + 1 * MiB);  // the straddler is in neither op
    EXPECT_EQ(r.all.abs_err_bytes, 512 * KiB + 4096);
    EXPECT_DOUBLE_EQ(r.all.wape, double(512 * KiB + 4096) / double(4096 + 512 * KiB + 1 * MiB));
}

TEST(ValidateJoin, OverlappingWindowsOnTheSameBytesAreTies) {
    SlotsFixture f;
    uint64_t off = SlotsFixture::kBase + 4096;
    f.sem.push_back(op_rec("load", 0, 512 * KiB, off, 512 * KiB, 100, 1000));
    f.sem.push_back(op_rec("load", 1, 512 * KiB, off, 512 * KiB, 500, 1500));
    f.cmds.push_back(blk("read", off, 512 * KiB, 200));   // only op 0's window
    f.cmds.push_back(blk("read", off, 512 * KiB, 700));   // both windows: a tie
    f.cmds.push_back(blk("read", off, 512 * KiB, 1200));  // only op 1's window
    Report r = f.go();
    EXPECT_EQ(r.join.ties.cmds, 1u);
    EXPECT_EQ(r.join.joined.cmds, 2u);
    EXPECT_EQ(r.all.exact_match, 2u);
}

TEST(ValidateJoin, UntaggedNoiseCountedWithBytes) {
    SlotsFixture f;
    f.store_and_load(0);
    f.store_and_load(1, false);                                                         // ops without commands
    f.cmds.push_back(blk("write", 8192, 4096, 1'000'030));                              // metadata region, in a window
    f.cmds.push_back(blk("write", SlotsFixture::kBase + 4096, 8192, 10));               // the slot, but before any op
    f.cmds.push_back(blk("read", SlotsFixture::kBase + 4096, 4096, 1'000'030, "8:0"));  // another disk
    json fl = blk("write", 0, 0, 1'000'030);
    fl["op"] = "flush";
    fl["rwbs"] = "FF";
    f.cmds.push_back(fl);
    Report r = f.go();
    EXPECT_EQ(r.join.untagged.cmds, 3u);
    EXPECT_EQ(r.join.untagged.bytes, 4096u + 8192u + 4096u);
    EXPECT_EQ(r.join.non_data.cmds, 1u);
    EXPECT_EQ(r.all.exact_match, 2u);
    EXPECT_EQ(r.all.no_cmds, 2u);
    EXPECT_EQ(r.all.objects, 4u);
    // the two ops without commands miss (4096 + 1 MiB) + 1 MiB; the two exact ones measured 4096 + 2 MiB
    EXPECT_DOUBLE_EQ(r.all.wape, 1.0);
}

TEST(ValidateJoin, WrongDirectionDoesNotJoin) {
    SlotsFixture f;
    uint64_t off = SlotsFixture::kBase + 4096;
    f.sem.push_back(op_rec("load", 0, 512 * KiB, off, 512 * KiB, 100, 1000));
    f.cmds.push_back(blk("write", off, 512 * KiB, 200));
    Report r = f.go();
    EXPECT_EQ(r.join.joined.cmds, 0u);
    EXPECT_EQ(r.join.direction_mismatch.cmds, 1u);
    EXPECT_EQ(r.all.no_cmds, 1u);
}

// Passthrough (uring_cmd) on an NVMe namespace with 4 KiB LBAs and 128 KiB MDTS.
struct NvmeFixture {
    Tmp t;
    std::vector<json> sem;
    std::vector<json> cmds;
    NvmeFixture() {
        json m = meta("uring_cmd");
        m["dev"] = "259:0";
        m["lba_bytes"] = 4096;
        m["max_io_bytes"] = 128 * KiB;
        m["header_bytes"] = 0;
        sem.push_back(m);
    }
    void load(uint64_t obj, uint64_t slba, uint64_t t0, uint64_t t1) {
        json o = op_rec("load", obj, 256 * KiB, slba * 4096, 256 * KiB, t0, t1, obj + 1);
        o["dev"] = "259:0";
        sem.push_back(o);
    }
    Report go(JoinMode mode = JoinMode::Auto) {
        cmds.push_back(summary());
        return run_files(t.write("sem.jsonl", sem), t.write("events.jsonl", cmds), mode);
    }
};

TEST(ValidateJoin, CidWrapDoesNotConfuseTheJoin) {
    // The driver reuses cid 7 on queue 1 for every command: joining by cid would pile them on one op.
    for (JoinMode mode : {JoinMode::UserData, JoinMode::Offset}) {
        NvmeFixture f;
        f.load(0, 1000, 100, 1000);
        f.load(1, 2000, 100, 1000);  // concurrent
        f.cmds.push_back(nvme("read", 1000, 32, 200, 7, (1ull << 32) | 1));
        f.cmds.push_back(nvme("read", 2000, 32, 210, 7, (2ull << 32) | 1));
        f.cmds.push_back(nvme("read", 1032, 32, 220, 7, (1ull << 32) | 2));
        f.cmds.push_back(nvme("read", 2032, 32, 230, 7, (2ull << 32) | 2));
        Report r = f.go(mode);
        EXPECT_EQ(r.join.mode, mode);
        EXPECT_EQ(r.all.exact_match, 2u) << join_mode_name(mode);
        EXPECT_EQ(r.all.per_cmd_size_match, 2u);
        EXPECT_EQ(r.join.joined.cmds, 4u);
    }
}

TEST(ValidateJoin, PassthroughBlockRowsWithSectorZeroAreSkippedForNvmeRows) {
    NvmeFixture f;
    f.load(0, 1000, 100, 1000);
    for (uint64_t k = 0; k < 2; ++k) {
        uint64_t ud = (1ull << 32) | (k + 1);
        json b = blk("read", 0, 128 * KiB, 200 + 10 * k, "259:0");  // block layer view: sector 0, rwbs N
        b["rwbs"] = "N";
        b["user_data"] = ud;
        f.cmds.push_back(b);
        f.cmds.push_back(nvme("read", 1000 + 32 * k, 32, 201 + 10 * k, 3, ud));
    }
    Report r = f.go();
    EXPECT_EQ(r.join.mode, JoinMode::UserData);
    EXPECT_EQ(r.join.passthrough_block_skipped.cmds, 2u);
    EXPECT_EQ(r.join.joined.cmds, 2u);
    EXPECT_EQ(r.all.exact_match, 1u);
    EXPECT_EQ(r.all.measured.bytes, 256 * KiB);
}

TEST(ValidateJoin, PassthroughBlockRowsCountWhenThereAreNoNvmeRows) {
    // A trace without the nvme tracepoints: the block rows are all there is; user_data still joins them.
    NvmeFixture f;
    f.load(0, 1000, 100, 1000);
    for (uint64_t k = 0; k < 2; ++k) {
        json b = blk("read", 0, 128 * KiB, 200 + 10 * k, "259:0");
        b["rwbs"] = "N";
        b["user_data"] = (1ull << 32) | (k + 1);
        f.cmds.push_back(b);
    }
    Report r = f.go(JoinMode::UserData);
    EXPECT_EQ(r.join.passthrough_block_skipped.cmds, 0u);
    EXPECT_EQ(r.all.exact_match, 1u);
}

TEST(ValidateJoin, UserDataZeroIsUntagged) {
    NvmeFixture f;
    f.load(0, 1000, 100, 1000);
    f.cmds.push_back(nvme("read", 1000, 32, 200, 1, (1ull << 32) | 1));
    f.cmds.push_back(nvme("read", 1032, 32, 210, 2, (1ull << 32) | 2));
    f.cmds.push_back(nvme("read", 5000, 1, 220, 3, 0));            // untagged
    f.cmds.push_back(nvme("read", 6000, 1, 230, 4, 99ull << 32));  // no such trace_id
    Report r = f.go(JoinMode::UserData);
    EXPECT_EQ(r.join.untagged.cmds, 2u);
    EXPECT_EQ(r.join.untagged.bytes, 8192u);
    EXPECT_EQ(r.all.exact_match, 1u);
}

TEST(ValidateJoin, KeyJoinUsesTimeForRepeatedKeys) {
    NvmeFixture f;
    json o0 = op_rec("store", 0, 256 * KiB, 0, 256 * KiB, 100, 1000, 1, "k0");
    json o1 = op_rec("load", 0, 256 * KiB, 0, 256 * KiB, 2000, 3000, 2, "k0");
    o0["dev"] = o1["dev"] = "259:0";
    f.sem.push_back(o0);
    f.sem.push_back(o1);
    for (uint64_t ts : {200, 300}) {
        json c = nvme("write", 0, 32, ts, 1, 0);
        c["key"] = "k0";
        f.cmds.push_back(c);
    }
    for (uint64_t ts : {2200, 2300}) {
        json c = nvme("read", 0, 32, ts, 1, 0);
        c["key"] = "k0";
        f.cmds.push_back(c);
    }
    Report r = f.go();
    EXPECT_EQ(r.join.mode, JoinMode::Key);
    EXPECT_EQ(r.all.exact_match, 2u);
}

TEST(ValidateJoin, AutoChoosesUserDataOnlyForUringEngines) {
    SlotsFixture f;  // posix engine: commands with user_data still join by offset
    f.store_and_load(0);
    for (auto& c : f.cmds) c["user_data"] = 5ull << 32;
    Report r = f.go();
    EXPECT_EQ(r.join.mode, JoinMode::Offset);
    EXPECT_EQ(r.all.exact_match, 2u);
}

TEST(ValidateJoin, SynthRoundTripIsExact) {
    Tmp t;
    SynthSpec s;
    s.objects = 300;
    s.object_bytes = 17989632;  // deepseek-v3 chunk
    s.slots = 40;               // slots are reused: the offset join must use the time windows
    s.noise_per_op = 2;
    for (auto [engine, events] :
         {std::pair{"posix", "e.jsonl"}, {"io_uring", "e.jsonl"}, {"posix", "e.kvb"}, {"io_uring", "e.kvb"}}) {
        s.engine = engine;
        SCOPED_TRACE(std::string(engine) + " " + events);  // .kvb: the binary capture kvio.events.bin/1
        std::string sem = (t.dir / "s.jsonl").string(), ev = (t.dir / events).string();
        uint64_t n = synth_write(s, sem, ev);
        Report r = run_files(sem, ev);
        EXPECT_EQ(r.join.mode, s.engine == "io_uring" ? JoinMode::UserData : JoinMode::Offset);
        EXPECT_EQ(r.join.records.cmds, n);
        EXPECT_EQ(r.all.objects, 300u);
        EXPECT_EQ(r.all.exact_match, 300u) << engine;
        EXPECT_EQ(r.all.per_cmd_size_match, 300u);
        EXPECT_EQ(r.join.untagged.cmds, 600u);
        EXPECT_EQ(r.join.untagged.bytes, 600u * 4096);
        EXPECT_EQ(r.join.ties.cmds + r.join.straddles.cmds, 0u);
    }
}

// ---------------------------------------------------------------- malformed input

TEST(ValidateInput, MalformedCommandNamesFileLineField) {
    Tmp t;
    std::string sem = t.write("sem.jsonl", {meta(), op_rec("load", 0, 4096, 0, 4096, 1, 2)});
    json bad = blk("read", 0, 4096, 1);
    bad["sector"] = "zero";
    std::string ev = t.write("ev.jsonl", {blk("read", 0, 4096, 1), summary(), bad});
    try {
        run_files(sem, ev, JoinMode::Offset);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), ev + ":3: field 'sector': expected a non-negative integer, got a string");
    }
    json missing = blk("read", 0, 4096, 1);
    missing.erase("bytes");
    ev = t.write("ev2.jsonl", {missing});
    EXPECT_THROW(
        {
            try {
                run_files(sem, ev, JoinMode::Offset);
            } catch (const Error& e) {
                EXPECT_EQ(std::string(e.what()), ev + ":1: field 'bytes': missing");
                throw;
            }
        },
        Error);
    ev = t.write_raw("ev3.jsonl", blk("read", 0, 4096, 1).dump() + "\n{\"type\":\"cmd\",\n");
    try {
        run_files(sem, ev, JoinMode::Offset);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(ev + ":2: not valid JSON", 0), 0u) << e.what();
    }
}

TEST(ValidateInput, MalformedSemanticNamesFileLineField) {
    Tmp t;
    json o = op_rec("copy", 0, 4096, 0, 4096, 1, 2);
    std::string sem = t.write("sem.jsonl", {meta(), op_rec("load", 0, 4096, 0, 4096, 1, 2), o});
    try {
        read_semantic(sem);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), sem + ":3: field 'op': expected \"store\" or \"load\", got \"copy\"");
    }
    o = op_rec("load", 0, 4096, 0, 4096, 1, 2);
    o["extents"] = json::array({json::array({1})});
    sem = t.write("sem2.jsonl", {meta(), o});
    EXPECT_THROW(read_semantic(sem), Error);
    // A dev_off of the wrong type beside extents was accepted (only extents are read then).
    o = op_rec("load", 0, 4096, 0, 4096, 1, 2);
    o["dev_off"] = "x";
    sem = t.write("sem4.jsonl", {meta(), o});
    try {
        read_semantic(sem);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), sem + ":2: field 'dev_off': expected a non-negative integer, got \"x\"");
    }
    json m = meta();
    m["schema"] = "kvio.semantic/2";
    sem = t.write("sem3.jsonl", {m});
    try {
        read_semantic(sem);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(sem + ":1: field 'schema'", 0), 0u) << e.what();
    }
}
