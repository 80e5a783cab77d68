// kvio replay --io-trace on loop devices: an MLPerf KV-cache io-trace-log written here (every tier and phase, keys
// rewritten larger, reads of keys never stored, µs out of order, zstd-compressed) and one produced by
// `kvio simulate --io-trace-log` are executed under `kvio trace` and validate 100 % exact; asis timing keeps the
// trace's span; the refusals (mounted, read-only, data where slots go, malformed rows) leave the target unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1 << 20;

struct Row {
    double t;  ///< seconds after the trace start
    const char* op;
    uint64_t bytes;
    int tier;
    std::string key;
    const char* phase;
};

/// An io-trace-log as the benchmark writes it (tracer.py rows, epoch seconds with 6 decimals): 3 users' turns,
/// each a Prefill Write to storage and Decode Reads of it; a GPU-tier and a CPU-tier entry demoted to storage
/// (Read Tier-1 Evict + Write Tier-2 Evict); a turn rewritten larger; a storage Read of a key never written; two
/// rows logged µs out of order. Returns the Tier-2 rows the replay executes (the skipped read excluded).
uint64_t write_fixture(const std::string& path, double span_s) {
    std::vector<Row> rows;
    uint64_t replayed = 0;
    auto add = [&](Row r) {
        rows.push_back(r);
        replayed += r.tier == 2;
    };
    const uint64_t sizes[3] = {393216 + 1000, 2 * kMiB + 4096 * 3 + 17, 917504};
    for (int u = 0; u < 3; ++u) {
        const std::string key = "conv_user_000" + std::to_string(u + 1) + "_1_turn_1";
        const double t0 = span_s * u / 4;
        add({t0, "Write", sizes[u], 2, key, "Prefill"});
        for (int k = 0; k < 3; ++k) add({t0 + 0.01 * (k + 1), "Read", sizes[u], 2, key, "Decode"});
    }
    add({span_s * 0.8, "Write", 65536, 0, "system_prompt_0", "Prefill"});
    add({span_s * 0.8 + 0.001, "Read", 65536, 0, "system_prompt_0", "Decode"});
    add({span_s * 0.85, "Write", 131072, 1, "conv_user_0002_1_turn_2", "Prefill"});
    add({span_s * 0.9, "Read", 131072, 1, "conv_user_0002_1_turn_2", "Evict"});
    add({span_s * 0.9 + 0.000003, "Write", 131072, 2, "conv_user_0002_1_turn_2", "Evict"});
    add({span_s * 0.9 + 0.000002, "Read", 131072, 2, "conv_user_0002_1_turn_2", "Decode"});  // logged out of order
    add({span_s * 0.95, "Write", 3 * kMiB + 512, 2, "conv_user_0001_1_turn_1", "Prefill"});  // rewritten larger
    add({span_s * 0.95 + 0.01, "Read", 3 * kMiB + 512, 2, "conv_user_0001_1_turn_1", "Decode"});
    add({span_s, "Read", 4096, 2, "rag_doc_7_chunk_0", "Decode"});  // never written: skipped
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fprintf(f, "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n");
    const uint64_t base_us = 1764590400000000ull;  // 2025-12-01 12:00:00 UTC
    for (const auto& r : rows) {
        const uint64_t us = base_us + uint64_t(r.t * 1e6 + 0.5);
        std::fprintf(f, "%llu.%06llu,%s,%llu,Tier-%d,%s,%s\n", (unsigned long long)(us / 1000000),
                     (unsigned long long)(us % 1000000), r.op, (unsigned long long)r.bytes, r.tier, r.key.c_str(),
                     r.phase);
    }
    std::fclose(f);
    return replayed - 1;
}

/// Replays `csv` on `loop` under `kvio trace -c kvio` (the replay's own commands, not its safety check's), validates,
/// returns the kvio.validate/1 report.
json replay_and_validate(const LoopDevice& loop, const TempDir& d, const std::string& csv, const std::string& extra,
                         std::string* out = nullptr) {
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " -c kvio --events " + d.file("ev.jsonl") + " -- " +
                 kvio_bin() + " replay -q --io-trace " + csv + " --target " + loop.path + " --semantic " +
                 d.file("sem.jsonl") + " " + extra);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    if (out) *out = r.out;
    auto v = run(kvio_bin() + " validate --commands " + d.file("ev.jsonl") + " --semantic " + d.file("sem.jsonl") +
                 " --json " + d.file("v.json"));
    EXPECT_EQ(v.status, 0) << v.err << v.out;
    return json::parse(slurp(d.file("v.json")));
}

void expect_exact(const json& v, uint64_t ops) {
    EXPECT_EQ(v["objects"], ops);
    EXPECT_EQ(v["exact_match"], ops);
    EXPECT_EQ(v["per_cmd_size_match"], ops);
    EXPECT_EQ(v["failed_ops"], 0);
    EXPECT_EQ(v["wape"].get<double>(), 0.0);
    EXPECT_EQ(v["size_tv"].get<double>(), 0.0);
    EXPECT_EQ(v["untagged_cmds"], 0);
}

}  // namespace

TEST(ReplayIoTrace, MlperfTraceOnALoopDeviceValidatesExactlyWithItsTiming) {
    LoopDevice loop(32 * kMiB);
    TempDir d;
    const double span = 0.6;
    const uint64_t ops = write_fixture(d.file("trace.csv"), span);
    ASSERT_EQ(run("zstd -q " + d.file("trace.csv") + " -o " + d.file("trace.csv.zst")).status, 0);
    std::string out;
    json v = replay_and_validate(loop, d, d.file("trace.csv.zst"), "--engine io_uring --qd 4", &out);
    expect_exact(v, ops);
    EXPECT_EQ(v["join"]["mode"], "user_data") << v["join"].dump();
    EXPECT_NE(out.find("skipped 4 rows of other tiers, 1 reads of keys never written"), std::string::npos) << out;
    EXPECT_NE(out.find("loads verified against the pattern: ok"), std::string::npos) << out;
    for (const char* cls : {"Prefill write", "Decode  read", "Evict   write"})
        EXPECT_NE(out.find(cls), std::string::npos) << cls << "\n" << out;
    // asis: the first to the last replayed row span 0.6 s of the trace (minus its last 10 ms read); the run takes as
    // long.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("done: (\\d+)/(\\d+) ops in ([0-9.]+) s"))) << out;
    EXPECT_EQ(std::stoull(m[1]), ops);
    EXPECT_GE(std::stod(m[3]), span * 0.95 - 0.01) << out;
    // Every store's bytes reached the device where its key's slot is: the semantic ops name 3+1 keys.
    auto sem = read_jsonl(d.file("sem.jsonl"));
    EXPECT_EQ(sem[0]["source"], "mlperf-io-trace");
    std::set<std::string> keys;
    for (size_t i = 1; i < sem.size(); ++i) keys.insert(sem[i]["key"].get<std::string>());
    EXPECT_EQ(keys.size(), 4u);
}

TEST(ReplayIoTrace, SimulateIoTraceLogReplaysAndValidates) {
    TempDir d;
    // A model small enough that a second of 4 users' traffic fits a loop device and a few seconds of replay.
    std::ofstream(d.file("micro.yaml")) << "model_configs:\n  micro: {name: \"Micro\", num_layers: 1, hidden_dim: 256, "
                                           "num_heads: 8, kv_heads: 1, dtype: \"float16\"}\n";
    auto s =
        run(kvio_bin() + " simulate --config " + d.file("micro.yaml") + " --model micro --num-users 4 --duration 1 " +
            "--gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 42 --quiet --io-trace-log " +
            d.file("t.csv.zst") + " --output " + d.file("r.json"));
    ASSERT_EQ(s.status, 0) << s.err;
    const uint64_t rows = json::parse(slurp(d.file("r.json")))["kvio"]["cache"]["io_trace_rows"].get<uint64_t>();
    ASSERT_GT(rows, 10u);
    LoopDevice loop(64 * kMiB);
    std::string out;
    // io_uring at qd 4, as fast as possible: most objects are below 508 KiB, so a slot header submitted in one batch
    // with its payload would be merged with it (measured before workload/execute.cpp committed headers alone: 85/90).
    json v = replay_and_validate(loop, d, d.file("t.csv.zst"), "--timing fast --engine io_uring --qd 4", &out);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("plan: (\\d+) ops"))) << out;
    const uint64_t ops = std::stoull(m[1]);
    EXPECT_GT(ops, 10u);
    expect_exact(v, ops);
}

TEST(ReplayIoTrace, RefusalsLeaveTheTargetUnchanged) {
    TempDir d;
    write_fixture(d.file("trace.csv"), 0.01);
    {  // mounted: refused even with --force
        Ext4Mount m(32 * kMiB);
        auto r = run(kvio_bin() + " replay -q --force --io-trace " + d.file("trace.csv") + " --target " + m.loop.path);
        EXPECT_EQ(r.status, 1);
        EXPECT_NE(r.err.find("is mounted on " + m.mnt), std::string::npos) << r.err;
    }
    LoopDevice loop(32 * kMiB);
    {  // read-only
        auto ro = run("losetup -r -f --show " + loop.backing);
        ASSERT_EQ(ro.status, 0) << ro.err;
        const std::string dev = ro.out.substr(0, ro.out.find('\n'));
        auto r = run(kvio_bin() + " replay -q --force --io-trace " + d.file("trace.csv") + " --target " + dev);
        run("losetup -d " + dev);
        EXPECT_EQ(r.status, 1);
        EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
    }
    // Data where a slot would be written (past the first MiB): refused without --force.
    ASSERT_EQ(run("printf 'not kvio' | dd of=" + loop.path + " bs=1 seek=" + std::to_string(kMiB + 8192) +
                  " conv=notrunc status=none")
                  .status,
              0);
    const std::string dirty = md5(loop.path);
    auto r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("holds data at byte " + std::to_string(kMiB + 8192) + " where the replay would write"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(md5(loop.path), dirty);
    // A malformed row: FILE:LINE: field, nothing written.
    std::ofstream(d.file("bad.csv")) << "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n"
                                        "1764590400.000001,Write,4096,Tier-2,k,Prefill\n"
                                        "1764590400.000002,Write,4096,Tier-9,k,Prefill\n";
    r = run(kvio_bin() + " replay -q --force --io-trace " + d.file("bad.csv") + " --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(d.file("bad.csv") + ":3: field 'Tier': expected Tier-0, Tier-1, Tier-2 or Tier-3"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(md5(loop.path), dirty);
    // --force overrides the data check; the replay then succeeds.
    r = run(kvio_bin() + " replay -q --force --io-trace " + d.file("trace.csv") + " --target " + loop.path +
            " --timing fast");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
}

// A --target that does not exist, in an existing directory, is created as a regular file sized to what the trace
// needs (a storage engineer's `--target new.img`); a refusal after that removes it again; a missing directory or a
// missing /dev/ node is refused.
TEST(ReplayIoTrace, MissingTargetFileIsCreatedAndSized) {
    TempDir d;  // a regular-file target must be on a block device (not tmpfs)
    write_fixture(d.file("trace.csv"), 0.01);
    const std::string img = d.file("new.img");
    auto r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target " + img + " --timing fast");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("target " + img + " did not exist: created as a regular file"), std::string::npos) << r.out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("target file size 0 -> ([0-9]+) \\(grown with fallocate\\)")))
        << r.out;
    const uint64_t size = std::stoull(m[1]);
    EXPECT_EQ(std::filesystem::file_size(img), size);
    EXPECT_GT(size, 3 * kMiB) << "the largest object (3 MiB + 512 B) has a slot";
    // Replayed again onto the file it made: kvio's own slots, accepted without --force; no growth.
    r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target " + img + " --timing fast");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_EQ(r.out.find("did not exist"), std::string::npos) << r.out;
    EXPECT_EQ(std::filesystem::file_size(img), size);
    // Refused after creating it (uring_cmd needs an NVMe char device): nothing is left.
    const std::string refused = d.file("refused.img");
    r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target " + refused +
            " --engine uring_cmd");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_FALSE(std::filesystem::exists(refused)) << "a refused replay left the file it created";
    r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target " + d.file("no/such/dir.img"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("does not exist and cannot be created as a regular file: No such file or directory"),
              std::string::npos)
        << r.err;
    r = run(kvio_bin() + " replay -q --io-trace " + d.file("trace.csv") + " --target /dev/kvio-no-such-disk");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("a missing device is not created as a file under /dev"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists("/dev/kvio-no-such-disk"));
}
