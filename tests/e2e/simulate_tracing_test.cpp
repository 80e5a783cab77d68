// --enable-latency-tracing on a real device (the tracing acceptance run): kvio simulate with --storage-io direct on
// ext4 over a loop device; its storage ops must validate >= 99 % exact and the distilled fio job must parse.
#include <gtest/gtest.h>

#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "tests/e2e/helpers.h"
#include "tests/e2e/simulate_helpers.h"
#include "run/latency_tracing.h"
#include "workload/serving/results/report.h"
#include "workload/serving/tiers/storage_semantic.h"
#include "workload/target.h"

using namespace kvio;
using namespace kvio::serving;
using namespace kvio::run;

TEST(SimulateTracing, RefusesTmpfs) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    LatencyTracingOptions lo;
    lo.cache_dir = "/dev/shm";
    lo.kvio_exe = test::kvio_bin();
    try {
        LatencyTracing lt(lo);
        FAIL() << "tmpfs accepted";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("not on a block device"), std::string::npos) << e.what();
    }
}

// The whole path: the results carry the benchmark's device_latency_tracing and fio_workload plus kvio.validation,
// and --trace-dir keeps files `kvio validate` scores the same way.
TEST(SimulateTracing, SimulateRunAddsTracingResults) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    test::Ext4Mount m(1ull << 30);
    test::TempDir t;
    const std::string out = t.file("r.json"), tdir = t.file("trace");
    const auto r =
        test::run(test::kvio_bin() +
                  " simulate --model tiny-1b --num-users 4 --duration 5 --gpu-mem-gb 0 "
                  "--cpu-mem-gb 0 --generation-mode none --seed 42 --progress-interval 0 --storage-io direct "
                  "--cache-dir " +
                  m.mnt + "/cache --enable-latency-tracing --trace-dir " + tdir + " --output " + out);
    ASSERT_EQ(r.status, 0) << r.err;
    // The benchmark's sections of its tracer's start and end (docs/mlperf-benchmark.md, "Console report").
    const size_t started = r.out.find("### LATENCY TRACING ###\n"),
                 collecting = r.out.find("### COLLECTING TRACE DATA");
    EXPECT_NE(started, std::string::npos) << r.out;
    EXPECT_NE(collecting, std::string::npos) << r.out;
    EXPECT_LT(started, collecting) << r.out;
    const auto doc = nlohmann::json::parse(test::slurp(out));
    ASSERT_TRUE(doc.contains("device_latency_tracing")) << r.err;
    EXPECT_EQ(doc["device_latency_tracing"]["device"], m.loop.name);
    EXPECT_TRUE(doc["device_latency_tracing"]["devices"][0].contains("histograms"));
    ASSERT_TRUE(doc["fio_workload"].is_string());
    EXPECT_TRUE(doc["device_latency_tracing"]["process"].contains("vfs_read")) << "the syscall-side histograms";
    // The console's tracing sections, as the benchmark prints them after its summary, from these results. The job is
    // indented; it has a [global] section only when the distiller found several phases (load-dependent), so its
    // ioengine line is what is looked for.
    std::ostringstream console;
    print_report(console, nlohmann::ordered_json::parse(test::slurp(out)));
    for (const char* s : {"### DEVICE LATENCY TRACING (kvio trace) ###", "D2C Read (device hardware time):",
                          "D2C Write (device hardware time):", "### GENERATED FIO WORKLOAD ###", "\n  ioengine="})
        EXPECT_NE(console.str().find(s), std::string::npos) << s << "\n" << console.str();
    const auto& v = doc["kvio"]["validation"];
    // O_DIRECT stores and loads: each op's commands are projected exactly from the device geometry and extents.
    // Four users, so stores and loads of different entries overlap; two loads of one entry never do (the cache
    // serialises reads of a key, as the benchmark's per-key lock), so the offset join is never left with a tie.
    const uint64_t objects = v["objects"].get<uint64_t>();
    ASSERT_GT(objects, 0u) << v.dump(1);
    EXPECT_GE(double(v["exact_match"].get<uint64_t>()), 0.99 * double(objects)) << v["summary"] << "\n" << v.dump(1);
    std::printf("validate: %s\n", v["summary"].get<std::string>().c_str());
    for (const char* f : {"events.jsonl", "semantic.jsonl", "trace.json", "fio_workload.ini"})
        EXPECT_TRUE(std::ifstream(tdir + "/" + f).good()) << f;
    const auto fio = test::run("fio --parse-only " + tdir + "/fio_workload.ini");
    EXPECT_EQ(fio.status, 0) << fio.err;
    const auto val = test::run(test::kvio_bin() + " validate --commands " + tdir + "/events.jsonl --semantic " + tdir +
                               "/semantic.jsonl --trace-json " + tdir + "/trace.json");
    EXPECT_EQ(val.status, 0) << val.err;
    EXPECT_NE(val.out.find(v["summary"].get<std::string>()), std::string::npos) << val.out;
}

// Ctrl-C right after the tracer attached: too little is traced to validate or distill (no commands, or only
// flushes). The run still exits 130 with its results; the reason is a warning and sits in kvio.validation. Before,
// validate's refusal ("no device commands ... in the trace") made simulate exit 1 without results.
TEST(SimulateTracing, EarlySigintStillWritesResults) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    test::Ext4Mount m(1ull << 30);
    test::TempDir t;
    const std::string out = t.file("lt.json"), tdir = t.file("trace");
    test::Spawned p("exec " + test::kvio_bin() +
                        " simulate --model tiny-1b --num-users 4 --duration 30 --gpu-mem-gb 0 "
                        "--cpu-mem-gb 0 --generation-mode none --seed 42 --progress-interval 0 --storage-io direct "
                        "--cache-dir " +
                        m.mnt + "/c --enable-latency-tracing --trace-dir " + tdir + " --output " + out,
                    t.file("out.txt"), t.file("err.txt"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(tdir + "/ready") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(std::filesystem::exists(tdir + "/ready")) << test::slurp(t.file("err.txt"));
    ::kill(p.pid, SIGINT);
    const std::string err_path = t.file("err.txt");
    ASSERT_EQ(p.wait(), 130) << test::slurp(err_path);
    ASSERT_TRUE(std::filesystem::exists(out)) << test::slurp(err_path);
    const auto doc = nlohmann::json::parse(test::slurp(out));
    EXPECT_EQ(doc["kvio"]["stop"]["signal"], SIGINT);
    ASSERT_TRUE(doc["device_latency_tracing"].is_object()) << doc["device_latency_tracing"].dump();
    const auto& v = doc["kvio"]["validation"];
    ASSERT_TRUE(v.is_object()) << v.dump();
    std::string warnings;
    for (const auto& w : doc["kvio"]["warnings"]) warnings += w.get<std::string>() + "\n";
    const bool refused = v.contains("not_validated") || v.contains("fio_workload_not_distilled");
    if (refused) {  // the usual outcome of a stop this early: the reason is a warning, on stderr and in the results
        EXPECT_NE(warnings.find("--enable-latency-tracing"), std::string::npos) << warnings;
        EXPECT_NE(test::slurp(err_path).find("warning: --enable-latency-tracing"), std::string::npos);
    }
    std::printf("validation: %s\n", v.dump().substr(0, 300).c_str());
}

// A tracer stopped before anything was stored (nothing, or only the journal's flushes, on the device): finish()
// still returns the histograms, with the reason validate/distill refused the trace instead of throwing it.
TEST(SimulateTracing, FinishWithNothingTracedGivesReasonsNotAnError) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    test::Ext4Mount m(256ull << 20);
    LatencyTracingOptions lo;
    lo.cache_dir = m.mnt;
    lo.kvio_exe = test::kvio_bin();
    LatencyTracing lt(lo);
    StorageSemanticLog(lt.semantic_path(), workload::inspect_target(m.mnt), "posix", "files", false, 0, 1 << 20, 1)
        .close();  // the storage tier's log, with no op yet
    LatencyTracingResult r;
    ASSERT_NO_THROW(r = lt.finish());
    EXPECT_TRUE(r.device_latency_tracing.is_object());
    // No op was stored: validate scores 0/0. What the device saw is at most the filesystem's own (the journal's
    // flushes and its few metadata writes, none tagged by an op): with no write among them distill has nothing to
    // make a job from and says why (before: finish() threw that); with the journal's writes it distills those.
    EXPECT_EQ(r.validation.value("objects", -1), 0) << r.validation.dump();
    if (r.fio_workload.has_value()) {
        EXPECT_GT(r.validation.value("untagged_cmds", 0), 0) << r.validation.dump();
        EXPECT_FALSE(r.validation.contains("fio_workload_not_distilled")) << r.validation.dump();
        return;
    }
    ASSERT_TRUE(r.validation.contains("fio_workload_not_distilled")) << r.validation.dump();
    const std::string why = r.validation["fio_workload_not_distilled"];  // no commands, or the journal's flushes only
    EXPECT_TRUE(why.find("no device commands") != std::string::npos ||
                why.find("no reads or writes") != std::string::npos)
        << why;
    ASSERT_FALSE(r.warnings.empty());
    nlohmann::ordered_json doc = {{"kvio", nlohmann::ordered_json::object()}};
    add_latency_tracing_results(r, doc);
    EXPECT_TRUE(doc["fio_workload"].is_null());
    EXPECT_TRUE(doc["device_latency_tracing"].is_object());
    std::printf("not distilled: %s\n", r.validation["fio_workload_not_distilled"].get<std::string>().c_str());
}

// The fio job of a buffered cache traced with --trace-syscalls is the file-level one (its device commands came from
// the page cache, which a direct-I/O job cannot make on another drive; docs/distill.md "Two levels"): the results say
// the level and why, the job and the iologs it reads are in --trace-dir and fio parses it. Without --trace-dir the
// iologs would go with the temporary directory, so the device level is kept and the reason says so.
TEST(SimulateTracing, BufferedCacheGetsTheFileLevelJob) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    test::Ext4Mount m(1ull << 30);
    test::TempDir t;
    const std::string flags =
        " simulate --model tiny-1b --num-users 3 --duration 3 --gpu-mem-gb 0 --cpu-mem-gb 0 "
        "--generation-mode none --seed 42 --progress-interval 0 --enable-latency-tracing "
        "--trace-syscalls --cache-dir " +
        m.mnt + "/c";
    const std::string tdir = t.file("trace");
    auto r = test::run(test::kvio_bin() + flags + " --trace-dir " + tdir + " --output " + t.file("file.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    auto doc = nlohmann::json::parse(test::slurp(t.file("file.json")));
    const auto& v = doc["kvio"]["validation"];
    ASSERT_EQ(v["fio_workload_level"], "file") << v.dump().substr(0, 2000);
    EXPECT_NE(v["fio_workload_level_reason"].get<std::string>().find("page cache"), std::string::npos);
    const std::string job = doc["fio_workload"].get<std::string>();
    EXPECT_EQ(job.rfind("; kvio distill --level file", 0), 0u) << job.substr(0, 300);
    EXPECT_EQ(test::slurp(tdir + "/fio_workload.ini"), job);
    size_t iologs = 0;
    for (const auto& e : std::filesystem::directory_iterator(tdir))
        iologs += e.path().filename().string().ends_with(".iolog");
    EXPECT_GE(iologs, 2u) << "a layout iolog and one per traced thread";
    EXPECT_NE(r.out.find("; level: file: auto:"), std::string::npos) << "the console's GENERATED FIO WORKLOAD";
    const auto parse = test::run("cd " + tdir + " && fio --parse-only fio_workload.ini");
    EXPECT_EQ(parse.status, 0) << parse.out << parse.err;

    r = test::run(test::kvio_bin() + flags + " --output " + t.file("dev.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    doc = nlohmann::json::parse(test::slurp(t.file("dev.json")));
    EXPECT_EQ(doc["kvio"]["validation"]["fio_workload_level"], "device");
    EXPECT_NE(doc["kvio"]["validation"]["fio_workload_level_reason"].get<std::string>().find("--trace-dir"),
              std::string::npos);
}
