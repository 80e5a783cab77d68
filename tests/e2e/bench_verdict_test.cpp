// bench/summarize.jq's verdicts on the simulate ratio (kvio simulate / fio, target >= 0.9): rounds that straddle
// the target and spread wider than the 0.1 the target allows below 1 are "inside noise", not "met" or "missed".
// bench/machine.sh: machine.json names the binary under test (its --version) and the source HEAD apart.
#include <fstream>
#include <tuple>

#include <gtest/gtest.h>

#include "tests/e2e/helpers.h"

namespace kvio::test {
namespace {

// bench/summarize.jq over these raw.jsonl records (machine.json empty).
nlohmann::json summarize_raw(const std::vector<nlohmann::json>& records) {
    TempDir d;
    std::ofstream raw(d.path + "/raw.jsonl");
    for (const auto& rec : records) raw << rec.dump() << "\n";
    raw.close();
    std::ofstream(d.path + "/machine.json") << "{}\n";
    CmdResult c = run("jq -s --slurpfile m " + d.path + "/machine.json -f bench/summarize.jq " + d.path + "/raw.jsonl");
    EXPECT_EQ(c.status, 0) << c.err;
    return nlohmann::json::parse(c.out);
}

nlohmann::json summarize(const std::vector<std::pair<std::string, double>>& rounds) {
    std::vector<nlohmann::json> records;
    int r = 0;
    for (const auto& [mode, ratio] : rounds)
        records.push_back({{"stage", "simulate"},
                           {"mode", mode},
                           {"round", ++r},
                           {"ratio", ratio},
                           {"sim_mbps", 100 * ratio},
                           {"fio_mbps", 100},
                           {"cpu_per_byte_fio_over_sim", 0.9},
                           {"write_streams", 5},
                           {"read_streams", 4},
                           {"mean_in_flight", 9},
                           {"load1", 12.5}});
    return summarize_raw(records);
}

TEST(BenchVerdict, SimulateRatioSpreadWiderThanTheMarginIsInsideNoise) {
    auto s = summarize({{"tmpfs", 0.56},
                        {"tmpfs", 0.90},
                        {"tmpfs", 1.09},  // straddles 0.9, spread 0.53
                        {"loop", 0.86},
                        {"loop", 0.91},
                        {"loop", 0.93}});  // straddles 0.9, spread 0.07
    EXPECT_EQ(s["targets"]["simulate_vs_fio_tmpfs"]["verdict"], "inside noise");
    EXPECT_EQ(s["targets"]["simulate_vs_fio_loop"]["verdict"], "met");  // within the margin: by the median
    EXPECT_DOUBLE_EQ(s["simulate"]["tmpfs"]["load1"]["median"].get<double>(), 12.5);
}

TEST(BenchVerdict, SimulateRatioAllRoundsOnOneSideDecide) {
    auto s = summarize({{"tmpfs", 0.91}, {"tmpfs", 1.5}, {"loop", 0.5}, {"loop", 0.89}});
    EXPECT_EQ(s["targets"]["simulate_vs_fio_tmpfs"]["verdict"], "met");
    EXPECT_EQ(s["targets"]["simulate_vs_fio_loop"]["verdict"], "missed");
}

// KVIO_BENCH_PEER: this kvio's BPF ns per command over the peer binary's of the same round (peer_hist); a round
// without a peer measurement does not count, and rounds that straddle 1.1 wider than 0.1 are inside noise.
nlohmann::json summarize_peer(const std::vector<std::tuple<int, std::string, double>>& runs) {
    std::vector<nlohmann::json> records;
    for (const auto& [round, mode, ns] : runs)
        records.push_back({{"stage", "overhead"},
                           {"mode", mode},
                           {"round", round},
                           {"engine", "io_uring"},
                           {"iops", 1000},
                           {"cmds", 4000},
                           {"ns_per_cmd", ns},
                           {"programs", nlohmann::json::array()}});
    return summarize_raw(records);
}

TEST(BenchVerdict, PeerRatioIsPairedByRound) {
    auto s = summarize_peer({{1, "kvio_hist", 500},
                             {1, "peer_hist", 500},
                             {2, "kvio_hist", 600},
                             {2, "peer_hist", 500},
                             {3, "kvio_hist", 9000}});  // round 3 has no peer: not paired
    const auto& r = s["overhead"]["io_uring"]["kvio_hist"]["ns_vs_peer"];
    EXPECT_DOUBLE_EQ(r["min"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(r["max"].get<double>(), 1.2);
    EXPECT_EQ(s["targets"]["kernel_ns_vs_peer_io_uring"]["verdict"], "inside noise");  // straddles 1.1, spread 0.2
    auto quiet =
        summarize_peer({{1, "kvio_hist", 500}, {1, "peer_hist", 490}, {2, "kvio_hist", 510}, {2, "peer_hist", 500}});
    EXPECT_EQ(quiet["targets"]["kernel_ns_vs_peer_io_uring"]["verdict"], "met");
    auto slower =
        summarize_peer({{1, "kvio_hist", 700}, {1, "peer_hist", 500}, {2, "kvio_hist", 720}, {2, "peer_hist", 500}});
    EXPECT_EQ(slower["targets"]["kernel_ns_vs_peer_io_uring"]["verdict"], "missed");
    auto none = summarize_peer({{1, "kvio_hist", 500}});  // no peer binary: no target
    EXPECT_FALSE(none["targets"].contains("kernel_ns_vs_peer_io_uring"));
}

// The syscall cost of each tracer: its getppid ns minus the untraced run's of the same round, per round; a round
// without an untraced measurement does not count.
TEST(BenchVerdict, SyscallAddedNsIsPairedByRound) {
    std::vector<nlohmann::json> raw;
    auto rec = [&raw](const char* mode, int round, double ns) {
        raw.push_back({{"stage", "overhead"},
                       {"mode", mode},
                       {"round", round},
                       {"engine", "libaio"},
                       {"iops", 1000},
                       {"syscall_ns", ns}});
    };
    rec("untraced", 1, 170);
    rec("kvio_hist", 1, 240);
    rec("kvio_comm_block", 1, 171);
    rec("untraced", 2, 200);
    rec("kvio_hist", 2, 260);
    rec("kvio_comm_block", 2, 203);
    rec("kvio_hist", 3, 999);  // no untraced run in round 3
    const nlohmann::json s = summarize_raw(raw)["overhead"]["libaio"];
    EXPECT_DOUBLE_EQ(s["kvio_hist"]["syscall_added_ns"]["min"].get<double>(), 60);
    EXPECT_DOUBLE_EQ(s["kvio_hist"]["syscall_added_ns"]["max"].get<double>(), 70);
    EXPECT_DOUBLE_EQ(s["kvio_comm_block"]["syscall_added_ns"]["median"].get<double>(), 2);
    EXPECT_DOUBLE_EQ(s["untraced"]["syscall_added_ns"]["median"].get<double>(), 0);
}

// The remote stage's ratio (redis-benchmark's time for kvio's bytes / kvio's elapsed time, target >= 0.8): rounds
// that straddle 0.8 and spread wider than 0.2 are "inside noise"; all above: "met"; all below: "missed"; no remote
// rounds: no figure and no verdict. The ratio against kvio's own commands replayed (exact_ratio) is summarized apart
// and does not decide the verdict.
TEST(BenchVerdict, RemoteRatioAgainstRedisBenchmark) {
    auto remote = [](const std::vector<double>& ratios) {
        std::vector<nlohmann::json> raw;
        int r = 0;
        for (double x : ratios)
            raw.push_back({{"stage", "remote"},
                           {"mode", "round" + std::to_string(++r)},
                           {"round", r},
                           {"secs", 10},
                           {"load1", 8.0},
                           {"chunk_bytes", 4190208},
                           {"connections", 2},
                           {"kvio_mbps", 70 * x},
                           {"rb_set_mbps", 50},
                           {"rb_get_mbps", 130},
                           {"rb_mbps", 70},
                           {"exact_ratio", x / 2},
                           {"ratio", x}});
        return summarize_raw(raw);
    };
    const nlohmann::json noisy = remote({1.03, 1.01, 0.79});
    EXPECT_EQ(noisy["targets"]["remote_vs_redis_benchmark"]["verdict"], "inside noise");
    EXPECT_DOUBLE_EQ(noisy["targets"]["remote_vs_redis_benchmark"]["value"].get<double>(), 1.01);
    EXPECT_EQ(noisy["remote"]["rounds"], 3);
    EXPECT_DOUBLE_EQ(noisy["remote"]["exact_ratio"]["median"].get<double>(), 0.505);  // the replay's ratio, kept apart
    EXPECT_DOUBLE_EQ(noisy["remote"]["exact_ratio"]["min"].get<double>(), 0.395);
    EXPECT_EQ(remote({0.85, 0.9, 0.95})["targets"]["remote_vs_redis_benchmark"]["verdict"], "met");
    EXPECT_EQ(remote({0.5, 0.6, 0.7})["targets"]["remote_vs_redis_benchmark"]["verdict"], "missed");
    const nlohmann::json none = summarize_raw({});
    EXPECT_TRUE(none["remote"].is_null());
    EXPECT_TRUE(none["targets"]["remote_vs_redis_benchmark"]["verdict"].is_null());
}

// Before: machine.json's "commit" was the source tree's HEAD, whatever commit the binary under test was built from.
TEST(BenchMachine, RecordsTheVersionOfTheBinaryUnderTestAndTheHeadApart) {
    TempDir d;
    const std::string fake = d.path + "/kvio";
    std::ofstream(fake) << "#!/bin/sh\necho 'kvio 0123abc-old'\n";
    ASSERT_EQ(run("chmod +x " + fake).status, 0);
    CmdResult c = run("bash bench/machine.sh " + fake + " 3 4 libaio");
    ASSERT_EQ(c.status, 0) << c.err;
    const nlohmann::json m = nlohmann::json::parse(c.out);
    EXPECT_EQ(m["kvio_version"], "kvio 0123abc-old");
    CmdResult head = run("git rev-parse --short HEAD");
    ASSERT_EQ(head.status, 0) << head.err;
    EXPECT_EQ(m["git_head"].get<std::string>() + "\n", head.out);
    EXPECT_FALSE(m.contains("commit")) << "a name that does not say whose commit";
    CmdResult real = run("bash bench/machine.sh " + kvio_bin() + " 3 4 libaio");
    ASSERT_EQ(real.status, 0) << real.err;
    EXPECT_EQ(nlohmann::json::parse(real.out)["kvio_version"].get<std::string>() + "\n",
              run(kvio_bin() + " --version").out);
}

}  // namespace
}  // namespace kvio::test
