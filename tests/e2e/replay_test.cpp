// kvio replay on loop devices: a kvio gen manifest replayed on another device validates exactly (also
// re-split after lowering max_sectors_kb), a traced fio run replayed at device level reproduces count,
// bytes and order exactly and its duration within 10 %, wrapping on a smaller target, and the refusals
// leave the target's bytes unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1 << 20;

/// `kvio gen` 4 llama3.2-1b objects (8 MiB each) on `dev`, writing the manifest to `rec`.
void gen_manifest(const std::string& dev, const std::string& rec) {
    auto r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 4 --target " + dev + " --record " + rec);
    ASSERT_EQ(r.status, 0) << r.err << r.out;
}

/// Replays `rec` on `loop` under `kvio trace`, validates, returns the kvio.validate/1 report.
json replay_and_validate(const LoopDevice& loop, const TempDir& d, const std::string& rec, std::string* out = nullptr) {
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --events " + d.file("ev.jsonl") + " -- " + kvio_bin() +
                 " replay -q --record " + rec + " --target " + loop.path + " --semantic " + d.file("sem.jsonl"));
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    if (out) *out = r.out;
    auto v = run(kvio_bin() + " validate --commands " + d.file("ev.jsonl") + " --semantic " + d.file("sem.jsonl") +
                 " --json " + d.file("v.json"));
    EXPECT_EQ(v.status, 0) << v.err << v.out;
    return json::parse(slurp(d.file("v.json")));
}

}  // namespace

TEST(ReplayRecord, ReplayOnAnotherDeviceValidatesExactly) {
    LoopDevice a(48 * kMiB), b(48 * kMiB);
    TempDir d;
    gen_manifest(a.path, d.file("rec.json"));
    std::string out;
    json v = replay_and_validate(b, d, d.file("rec.json"), &out);
    EXPECT_NE(out.find("same geometry as recorded"), std::string::npos) << out;
    EXPECT_NE(out.find("verified against the pattern: ok"), std::string::npos) << out;
    EXPECT_EQ(v["objects"], 8);  // 4 stores + 4 loads
    EXPECT_EQ(v["exact_match"], 8);
    EXPECT_EQ(v["per_cmd_size_match"], 8);
    EXPECT_EQ(v["wape"].get<double>(), 0.0);
    EXPECT_EQ(v["size_tv"].get<double>(), 0.0);
    // The replay's semantic file names device B, not A.
    auto sem = read_jsonl(d.file("sem.jsonl"));
    EXPECT_EQ(sem[0]["dev"], b.majmin);
    EXPECT_EQ(sem[0]["max_sectors_kb"].get<uint64_t>(),
              std::stoull(slurp("/sys/block/" + b.name + "/queue/max_sectors_kb")));
}

TEST(ReplayRecord, LowerMaxSectorsReSplitsAndValidates) {
    LoopDevice a(48 * kMiB), b(48 * kMiB);
    TempDir d;
    gen_manifest(a.path, d.file("rec.json"));
    b.set_queue_attr("max_sectors_kb", "64");
    std::string out;
    json v = replay_and_validate(b, d, d.file("rec.json"), &out);
    EXPECT_NE(out.find("note: transfer cap 524288 -> 65536"), std::string::npos) << out;
    EXPECT_EQ(v["exact_match"], 8);
    EXPECT_EQ(v["wape"].get<double>(), 0.0);
    EXPECT_EQ(v["size_tv"].get<double>(), 0.0);
    EXPECT_EQ(v["measured"]["max"], 65536);
    // 8 MiB payload in 64 KiB commands: 128 per load, 1 + 128 per store.
    EXPECT_EQ(v["measured"]["cmds"], 4 * 128 + 4 * 129);
}

TEST(ReplayRecord, Refusals) {
    LoopDevice a(48 * kMiB), b(48 * kMiB);
    TempDir d;
    gen_manifest(a.path, d.file("rec.json"));
    // Missing target.
    auto r = run(kvio_bin() + " replay -q --record " + d.file("rec.json") + " --target /dev/kvio-no-such-device");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("target /dev/kvio-no-such-device does not exist"), std::string::npos) << r.err;
    // Wrong schema version: refused naming the field, B untouched.
    json rec = json::parse(slurp(d.file("rec.json")));
    rec["schema_version"] = 2;
    std::ofstream(d.file("rec2.json")) << rec.dump();
    const std::string before = md5(b.path);
    r = run(kvio_bin() + " replay -q --record " + d.file("rec2.json") + " --target " + b.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("field 'schema_version': unsupported version 2"), std::string::npos) << r.err;
    EXPECT_EQ(md5(b.path), before);
    // Data where a slot would be written (past the first MiB, so only replay's own check sees it).
    auto w = run("printf 'not kvio' | dd of=" + b.path + " bs=1 seek=" + std::to_string(5 * kMiB) +
                 " conv=notrunc status=none");
    ASSERT_EQ(w.status, 0) << w.err;
    const std::string dirty = md5(b.path);
    r = run(kvio_bin() + " replay -q --record " + d.file("rec.json") + " --target " + b.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("holds data at byte " + std::to_string(5 * kMiB) + " where the replay would write"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(md5(b.path), dirty);
    // --force overrides it.
    r = run(kvio_bin() + " replay -q --force --record " + d.file("rec.json") + " --target " + b.path);
    EXPECT_EQ(r.status, 0) << r.err;
    // A replay over kvio's own earlier slots is accepted without --force.
    r = run(kvio_bin() + " replay -q --record " + d.file("rec.json") + " --target " + a.path);
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST(ReplayRecord, MountedTargetRefused) {
    LoopDevice a(48 * kMiB);
    TempDir d;
    gen_manifest(a.path, d.file("rec.json"));
    Ext4Mount m(48 * kMiB);
    auto r = run(kvio_bin() + " replay -q --force --record " + d.file("rec.json") + " --target " + m.loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("is mounted on " + m.mnt), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("objects"), std::string::npos) << r.out;  // nothing ran
}

TEST(ReplayRecord, RegularFileTargetIsGrown) {
    LoopDevice a(48 * kMiB);
    TempDir d;
    gen_manifest(a.path, d.file("rec.json"));
    std::ofstream(d.file("target.bin")).close();
    auto r = run(kvio_bin() + " replay -q --record " + d.file("rec.json") + " --target " + d.file("target.bin"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("note: target file size 0 -> "), std::string::npos) << r.out;
    // 1 MiB metadata + 4 slots of 4 KiB header + 8 MiB payload.
    EXPECT_EQ(std::filesystem::file_size(d.file("target.bin")), kMiB + 4 * (4096 + 8 * kMiB));
}

// Device-level replay of a traced fio run: 200 x 64 KiB random I/O (70 % writes) with 5 ms think time.
class ReplayEvents : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        src_ = new LoopDevice(64 * kMiB);
        dir_ = new TempDir();
        std::string fio =
            "fio --name=cap --filename=" + src_->path +
            " --direct=1 --ioengine=psync --rw=randrw --rwmixread=30 --bs=64k --size=32m --number_ios=200 "
            "--io_size=200m --thinktime=5000 --randrepeat=1 --norandommap --output=/dev/null";
        auto r = run(kvio_bin() + " trace -q -d " + src_->name + " -c fio --events " + dir_->file("cap.jsonl") +
                     " -- " + fio);
        ASSERT_EQ(r.status, 0) << r.err << r.out;
    }
    static void TearDownTestSuite() {
        delete dir_;
        delete src_;
    }
    static inline LoopDevice* src_ = nullptr;
    static inline TempDir* dir_ = nullptr;
};

TEST_F(ReplayEvents, ReproducesCountBytesOrderAndDuration) {
    LoopDevice b(64 * kMiB);
    TempDir d;
    auto r = run(kvio_bin() + " trace -q -d " + b.name + " -c kvio --events " + d.file("rep.jsonl") + " -- " +
                 kvio_bin() + " replay --events " + dir_->file("cap.jsonl") + " --target " + b.path + " --timing asis");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("offsets: unchanged"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("replayed 200 commands"), std::string::npos) << r.out;
    auto c = run(kvio_bin() + " compare " + dir_->file("cap.jsonl") + " " + d.file("rep.jsonl") + " --json " +
                 d.file("c.json"));
    ASSERT_EQ(c.status, 0) << c.err << c.out;
    json j = json::parse(slurp(d.file("c.json")));
    EXPECT_EQ(j["a"]["cmds"], 200) << c.out;
    EXPECT_EQ(j["a"]["bytes"], 200 * 65536);
    EXPECT_EQ(j["diff_pct"]["cmds"].get<double>(), 0.0) << c.out;
    EXPECT_EQ(j["diff_pct"]["bytes"].get<double>(), 0.0) << c.out;
    EXPECT_EQ(j["diff_pct"]["writes"].get<double>(), 0.0) << c.out;
    EXPECT_EQ(j["order"]["same_position"], 200) << c.out;
    EXPECT_EQ(j["order"]["compared"], 200);
    double dur = j["diff_pct"]["duration_ns"].get<double>();
    EXPECT_LT(std::abs(dur), 10.0) << c.out;
    EXPECT_GT(j["a"]["duration_ns"].get<uint64_t>(), 1000000000u);  // 200 x 5 ms think time dominates
    EXPECT_NE(c.out.find("commands"), std::string::npos);
    // A second replay onto the now written device is refused, and leaves it as it was.
    const std::string before = md5(b.path);
    r = run(kvio_bin() + " replay --events " + dir_->file("cap.jsonl") + " --target " + b.path + " --timing afap");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("where the replay would write; pass --force"), std::string::npos) << r.err;
    EXPECT_EQ(md5(b.path), before);
}

TEST_F(ReplayEvents, SmallerTargetWrapsAndAfapIsFast) {
    LoopDevice small(8 * kMiB);
    auto r =
        run(kvio_bin() + " replay --events " + dir_->file("cap.jsonl") + " --target " + small.path + " --timing afap");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("replayed 200 commands"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("commands wrapped modulo the target size"), std::string::npos) << r.out;
}

TEST_F(ReplayEvents, MissingTargetAndBadTiming) {
    auto r = run(kvio_bin() + " replay --events " + dir_->file("cap.jsonl") + " --target /dev/kvio-no-such-device");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    LoopDevice b(8 * kMiB);
    const std::string before = md5(b.path);
    r = run(kvio_bin() + " replay --events " + dir_->file("cap.jsonl") + " --target " + b.path + " --timing scale=0");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("scale=F needs a positive number"), std::string::npos) << r.err;
    EXPECT_EQ(md5(b.path), before);
    // A capture of two devices: each command names its own option for choosing one.
    const std::string two = dir_->file("two.jsonl");
    run("cp " + dir_->file("cap.jsonl") + " " + two + " && head -3 " + dir_->file("cap.jsonl") +
        " | sed 's/\"dev\":\"[0-9]*:[0-9]*\"/\"dev\":\"7:999\"/' >> " + two);
    r = run(kvio_bin() + " replay --events " + two + " --target " + b.path);
    EXPECT_NE(r.err.find("say which with --map-dev MAJ:MIN=PATH"), std::string::npos) << r.err;
    r = run(kvio_bin() + " compare " + two + " " + dir_->file("cap.jsonl"));
    EXPECT_NE(r.err.find("say which with --dev-a MAJ:MIN"), std::string::npos) << r.err;
    r = run(kvio_bin() + " compare " + dir_->file("cap.jsonl") + " " + two);
    EXPECT_NE(r.err.find("say which with --dev-b MAJ:MIN"), std::string::npos) << r.err;
}

// Before: `replay --events` had no stop handling: a SIGINT ended it without its summary (and in a background job,
// where the shell ignores SIGINT, not at all: it ran to its end and exited 0). Now the commands in flight complete,
// the summary says how many were replayed, and the status is 130.
TEST(ReplayEventsStop, SigintMidRunPrintsTheSummaryAndExits130) {
    TempDir d;
    constexpr int kCmds = 400;  // 4 KiB reads 50 ms apart: 20 s at --timing asis
    {
        std::ofstream f(d.file("cap.jsonl"));
        for (int i = 0; i < kCmds; ++i) {
            const uint64_t t = 1'000'000'000ull + uint64_t(i) * 50'000'000ull;
            f << json{{"type", "cmd"},     {"src", "block"},
                      {"dev", "7:200"},    {"disk", "loop200"},
                      {"op", "read"},      {"rwbs", "R"},
                      {"sector", i * 8},   {"bytes", 4096},
                      {"ts_issue", t},     {"ts_complete", t + 100'000},
                      {"d2c_ns", 100'000}, {"pid", 42},
                      {"tid", 42},         {"comm", "app"}}
                     .dump()
              << "\n";
        }
    }
    // The target file is grown to fit right before the first command: the replay has begun once it is not empty.
    const std::string target = d.file("target.bin");
    ASSERT_EQ(run("touch " + target).status, 0);
    auto r = run(kvio_bin() + " replay --events " + d.file("cap.jsonl") + " --target " + target +
                 " --timing asis & p=$!; " + "for i in $(seq 600); do [ -s " + target +
                 " ] && break; sleep 0.05; done; sleep 0.5; kill -INT $p; wait $p");
    EXPECT_EQ(r.status, 128 + 2) << r.err << r.out;
    std::smatch m;
    const std::regex stopped("stopped by signal 2: ([0-9]+) of " + std::to_string(kCmds) + " commands replayed");
    ASSERT_TRUE(std::regex_search(r.out, m, stopped)) << r.out << r.err;
    const int done = std::stoi(m[1]);
    EXPECT_GT(done, 0) << r.out;
    EXPECT_LT(done, kCmds) << r.out;
    EXPECT_NE(r.out.find("replayed " + std::to_string(done) + " commands: " + std::to_string(done) + " reads (" +
                         std::to_string(done * 4096) + " bytes)"),
              std::string::npos)
        << r.out;
    // The span is compared with the captured span of the commands replayed (50 ms apart), not the whole capture's
    // (before: a replay stopped half-way read "-50 %").
    char span[160];
    std::snprintf(span, sizeof span,
                  "captured issue span of the %d commands replayed %.3f ms (whole capture %.3f ms), replay ", done,
                  (done - 1) * 50.0, (kCmds - 1) * 50.0);
    EXPECT_NE(r.out.find(span), std::string::npos) << r.out;
}
