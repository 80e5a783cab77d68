// End-to-end tests of `kvio simulate`'s special modes on a tmpfs (docs/mlperf-benchmark.md, "Trace replay and special
// modes"): --prefill-only issues no storage reads, --decode-only prepopulates num_users × 10 entries (with progress)
// and writes nothing afterwards,
// --precondition writes its volume to the storage tier before the counters start, --validation-trace compares the
// run's hit rate with the trace's and refuses a bad trace before the run.
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/helpers.h"
#include "tests/e2e/simulate_helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kTiny1bEntry = 2048ull * 24576;  // a 2048-token tiny-1b entry (24,576 B/token): 48 MiB

std::string storage_args(const std::string& cache, int users, int duration, const std::string& extra) {
    return "--model tiny-1b --num-users " + std::to_string(users) + " --duration " + std::to_string(duration) +
           " --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 7 --progress-interval 0 --cache-dir " + cache +
           " " + extra;
}

uint64_t used_bytes(const std::string& path) {
    struct statvfs v {};
    EXPECT_EQ(::statvfs(path.c_str(), &v), 0);
    return uint64_t(v.f_blocks - v.f_bfree) * v.f_frsize;
}

}  // namespace

TEST(SimulateModes, PrefillOnlyIssuesNoStorageReads) {
    TmpfsMount tmpfs(768 * kMiB);
    TempDir dir;
    SimRun r = simulate(dir, storage_args(tmpfs.dir.path, 3, 3,
                                          "--prefill-only --disable-multi-turn --disable-prefix-caching "
                                          "--storage-capacity-gb 0.6"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json& cs = r.results["summary"]["cache_stats"];
    EXPECT_GT(r.results["requests_completed"].get<int>(), 0);
    EXPECT_GT(cs["write_iops"].get<int>(), 0);
    EXPECT_GT(cs["tier_storage_kv_bytes_written_gb"].get<double>(), 0.0);
    EXPECT_EQ(cs["read_iops"], 0);
    EXPECT_EQ(cs["total_read_bytes"], 0);
    EXPECT_EQ(cs["tier_storage_kv_bytes_read_gb"], 0.0);
    EXPECT_TRUE(r.results["decode_latencies"].empty());
}

TEST(SimulateModes, DecodeOnlyPrepopulatesThenOnlyReads) {
    TmpfsMount tmpfs(1536 * kMiB);
    TempDir dir;
    // 2 users → 20 entries of 48 MiB (960 MiB) on a 1.2 GiB storage tier.
    SimRun r = simulate(dir, storage_args(tmpfs.dir.path, 2, 3, "--decode-only --storage-capacity-gb 1.2"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["prepopulated_entries"], 20);
    const json& pre = r.results["kvio"]["prepopulation"];
    EXPECT_EQ(pre["entries"], 20);
    EXPECT_EQ(pre["bytes_written"].get<uint64_t>(), 20 * kTiny1bEntry);
    EXPECT_NE(r.cmd.err.find("decode-only: prepopulated 20/20 entries"), std::string::npos) << r.cmd.err;
    // The files are there; after reset_stats nothing is written (prefix misses included: no re-write in decode-only)
    EXPECT_GE(used_bytes(tmpfs.dir.path), 20 * kTiny1bEntry);
    const json& cs = r.results["summary"]["cache_stats"];
    EXPECT_EQ(cs["write_iops"], 0) << cs;
    EXPECT_EQ(cs["total_write_bytes"], 0);
    EXPECT_GT(cs["read_iops"].get<int>(), 0);
    EXPECT_GT(cs["tier_storage_kv_bytes_read_gb"].get<double>(), 0.0);
}

TEST(SimulateModes, PreconditionWritesItsVolumeBeforeTheCountersStart) {
    TmpfsMount tmpfs(768 * kMiB);
    TempDir dir;
    // 0.25 GiB = 256 MiB → 6 entries of 48 MiB (288 MiB): the first count whose sum reaches the target.
    SimRun r = simulate(dir, storage_args(tmpfs.dir.path, 1, 1,
                                          "--precondition --precondition-size-gb 0.25 --precondition-threads 2 "
                                          "--storage-capacity-gb 0.6 --max-requests 1 --disable-multi-turn "
                                          "--disable-prefix-caching"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json& p = r.results["kvio"]["precondition"];
    EXPECT_EQ(p["target_bytes"].get<uint64_t>(), 256 * kMiB);
    EXPECT_EQ(p["entries"], 6) << p;
    EXPECT_EQ(p["bytes_written"].get<uint64_t>(), 6 * kTiny1bEntry);
    EXPECT_EQ(p["threads"], 2);
    EXPECT_EQ(p["stalled"], false);
    EXPECT_NE(r.cmd.err.find("precondition: wrote"), std::string::npos) << r.cmd.err;
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmpfs.dir.path))
        files += e.path().filename().string().rfind("precond_", 0) == 0;
    EXPECT_GE(files, 1u);  // entries stay (LRU-evicted later by the run's own writes)
    // The counters start after the fill: the run's writes alone (one user, stopped after its first request: at
    // most a few writes), not the fill's 6.
    EXPECT_LT(r.results["summary"]["cache_stats"]["write_iops"].get<int>(), 6);
    // 2 × the storage limit when no size is given.
    r = simulate(dir, storage_args(tmpfs.dir.path, 1, 1,
                                   "--precondition --storage-capacity-gb 0.1 --max-requests 1 --io-trace-log " +
                                       dir.file("t.csv")));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["precondition"]["target_bytes"].get<uint64_t>(),
              2 * uint64_t(0.1 * double(1ull << 30)));
}

TEST(SimulateModes, ValidationTraceComparesHitRatesAndRefusesBadTraces) {
    TempDir dir;
    auto write_trace = [&](const std::string& name, int hits, int misses) {
        json t = json::array();
        for (int i = 0; i < hits + misses; ++i)
            t.push_back({{"timestamp", i},
                         {"request_id", "r" + std::to_string(i)},
                         {"user_id", "u"},
                         {"context_tokens", 100},
                         {"generation_tokens", 10},
                         {"phase", "prefill_decode"},
                         {"cache_hit", i < hits},
                         {"cache_tier", "nvme"},
                         {"read_bytes", 1000},
                         {"write_bytes", 2000},
                         {"read_latency_ms", 1.5},
                         {"write_latency_ms", 2.5},
                         {"model_name", "llama3.1-8b"}});
        std::ofstream(dir.file(name)) << t.dump();
        return dir.file(name);
    };
    const std::string logical =
        "--num-users 4 --duration 2 --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none "
        "--seed 3 --io-trace-log " +
        dir.file("ops.csv");
    SimRun r = simulate(dir, logical + " --validation-trace " + write_trace("t.json", 3, 1));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json& v = r.results["validation"];
    const double bench = r.results["summary"]["cache_stats"]["cache_hit_rate"].get<double>();
    EXPECT_DOUBLE_EQ(v["comparison"]["cache_hit_rate"]["trace"].get<double>(), 0.75);
    EXPECT_DOUBLE_EQ(v["comparison"]["cache_hit_rate"]["benchmark"].get<double>(), bench);
    const double err = std::fabs(bench - 0.75) / 0.75 * 100;
    EXPECT_NEAR(v["avg_error_pct"].get<double>(), err, 1e-9);
    EXPECT_EQ(v["passed"].get<bool>(), err <= 5.0);
    EXPECT_EQ(v["trace_stats"]["entries"], 4);
    EXPECT_EQ(v["trace_stats"]["read_bytes"], 4000);
    // A trace whose hit rate is the run's own passes: derive it from the first run's rate.
    const int n = 1000, hits = int(std::lround(bench * n));
    r = simulate(dir, logical + " --validation-trace " + write_trace("same.json", hits, n - hits));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_LT(std::fabs(r.results["validation"]["comparison"]["cache_hit_rate"]["trace"].get<double>() - bench), 0.01);
    // Refused before the run, naming the file and the entry.
    std::ofstream(dir.file("bad.json")) << R"([{"cache_hit": true}, {"cache_hit": "yes"}])";
    for (const auto& [arg, needle] : std::vector<std::pair<std::string, std::string>>{
             {dir.file("bad.json"), "entry 1: field 'cache_hit'"}, {dir.file("missing.json"), "cannot open"}}) {
        r = simulate(dir, logical + " --validation-trace " + arg);
        EXPECT_NE(r.cmd.status, 0) << arg;
        EXPECT_NE(r.cmd.err.find(needle), std::string::npos) << r.cmd.err;
        EXPECT_TRUE(r.results.is_null());
    }
}

// The benchmark's console sections of the steps before the clock (docs/mlperf-benchmark.md, "Console report"): each
// appears when kvio runs that step, with what the run measured (the results file's kvio.prepopulation /
// kvio.precondition), and not otherwise.
TEST(SimulateModes, WarmUpAndTraceModeSectionsAppearOnlyWhenTheStepRuns) {
    TempDir d;
    const std::string sim = kvio_bin() +
                            " simulate --model tiny-1b --num-users 2 --duration 1 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                            "--generation-mode none --seed 42 --progress-interval 0 ";
    const char* prepop = "### PRE-POPULATING CACHE FOR DECODE-ONLY MODE ###";
    const char* precond = "### PRECONDITIONING PHASE ###";
    const char* trace_mode = "  - I/O TRACE MODE: ACTIVE - writing trace to ";
    const char* tracing = "### LATENCY TRACING ###";
    auto written = [](const json& w) {
        char b[160];
        std::snprintf(b, sizeof b, "  Threads: %d\n  Written: %d entries, %.2f GiB in %.2f s (%d failed allocations)",
                      w["threads"].get<int>(), w["entries"].get<int>(),
                      w["bytes_written"].get<double>() / double(1ull << 30), w["seconds"].get<double>(),
                      w["failed"].get<int>());
        return std::string(b);
    };

    CmdResult r = run(sim + "--decode-only --cache-dir " + d.file("c1") + " --output " + d.file("a.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    const json a = json::parse(slurp(d.file("a.json")))["kvio"]["prepopulation"];
    EXPECT_EQ(a["entries"], 20) << a;  // --num-users 2 x 10
    const size_t at = r.out.find(prepop);
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(written(a), at), r.out.find('\n', at) + 1) << r.out.substr(at, 300) << "\n" << written(a);
    for (const char* s : {precond, trace_mode, tracing}) EXPECT_EQ(r.out.find(s), std::string::npos) << s;

    r = run(sim + "--precondition --precondition-size-gb 0.05 --cache-dir " + d.file("c2") + " --output " +
            d.file("b.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    const json b = json::parse(slurp(d.file("b.json")))["kvio"]["precondition"];
    const size_t bt = r.out.find(std::string(precond) + "\n  Target: 0.05 GiB\n");
    ASSERT_NE(bt, std::string::npos) << r.out;
    EXPECT_NE(r.out.find(written(b), bt), std::string::npos) << r.out.substr(bt, 300) << "\n" << written(b);
    EXPECT_GT(b["bytes_written"].get<double>(), 0.05 * double(1ull << 30)) << b;
    for (const char* s : {prepop, trace_mode, tracing}) EXPECT_EQ(r.out.find(s), std::string::npos) << s;

    r = run(sim + "--io-trace-log " + d.file("t.csv") + " --output " + d.file("c.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(trace_mode + d.file("t.csv") + "\n    (No real GPU/CPU/NVMe I/O will be performed)\n"),
              std::string::npos)
        << r.out;
    for (const char* s : {prepop, precond, tracing}) EXPECT_EQ(r.out.find(s), std::string::npos) << s;

    r = run(sim + "--cache-dir " + d.file("c3") + " --output " + d.file("d.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* s : {prepop, precond, trace_mode, tracing}) EXPECT_EQ(r.out.find(s), std::string::npos) << s;
}
