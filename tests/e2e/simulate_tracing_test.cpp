// --enable-latency-tracing on a real device (issue #13's acceptance): kvio simulate with --storage-io direct on ext4
// over a loop device; its storage ops must validate >= 99 % exact and the distilled fio job must parse.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "tests/e2e/helpers.h"
#include "workload/serving/latency_tracing.h"

using namespace kvio;
using namespace kvio::serving;


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
    const auto r = test::run(test::kvio_bin() + " simulate --model tiny-1b --num-users 4 --duration 5 --gpu-mem-gb 0 "
                             "--cpu-mem-gb 0 --generation-mode none --seed 42 --quiet --progress-interval 0 --storage-io direct "
                             "--cache-dir " + m.mnt + "/cache --enable-latency-tracing --trace-dir " + tdir +
                             " --output " + out);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto doc = nlohmann::json::parse(test::slurp(out));
    ASSERT_TRUE(doc.contains("device_latency_tracing")) << r.err;
    EXPECT_EQ(doc["device_latency_tracing"]["device"], m.loop.name);
    EXPECT_TRUE(doc["device_latency_tracing"]["devices"][0].contains("histograms"));
    ASSERT_TRUE(doc["fio_workload"].is_string());
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
