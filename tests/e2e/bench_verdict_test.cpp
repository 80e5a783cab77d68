// bench/summarize.jq's verdicts on the simulate ratio (kvio simulate / fio, target >= 0.9): rounds that straddle
// the target and spread wider than the 0.1 the target allows below 1 are "inside noise", not "met" or "missed".
#include <fstream>

#include <gtest/gtest.h>

#include "tests/e2e/helpers.h"

namespace kvio::test {
namespace {

nlohmann::json summarize(const std::vector<std::pair<std::string, double>>& rounds) {
    TempDir d;
    std::ofstream raw(d.path + "/raw.jsonl");
    int r = 0;
    for (const auto& [mode, ratio] : rounds)
        raw << nlohmann::json{{"stage", "simulate"}, {"mode", mode}, {"round", ++r}, {"ratio", ratio}, {"sim_mbps", 100 * ratio},
                              {"fio_mbps", 100}, {"cpu_per_byte_fio_over_sim", 0.9}, {"write_streams", 5}, {"read_streams", 4},
                              {"mean_in_flight", 9}, {"load1", 12.5}}
                   .dump()
            << "\n";
    raw.close();
    std::ofstream(d.path + "/machine.json") << "{}\n";
    CmdResult c = run("jq -s --slurpfile m " + d.path + "/machine.json -f bench/summarize.jq " + d.path + "/raw.jsonl");
    EXPECT_EQ(c.status, 0) << c.err;
    return nlohmann::json::parse(c.out);
}

TEST(BenchVerdict, SimulateRatioSpreadWiderThanTheMarginIsInsideNoise) {
    auto s = summarize({{"tmpfs", 0.56}, {"tmpfs", 0.90}, {"tmpfs", 1.09},    // straddles 0.9, spread 0.53
                        {"loop", 0.86}, {"loop", 0.91}, {"loop", 0.93}});     // straddles 0.9, spread 0.07
    EXPECT_EQ(s["targets"]["simulate_vs_fio_tmpfs"]["verdict"], "inside noise");
    EXPECT_EQ(s["targets"]["simulate_vs_fio_loop"]["verdict"], "met");  // within the margin: by the median
    EXPECT_DOUBLE_EQ(s["simulate"]["tmpfs"]["load1"]["median"].get<double>(), 12.5);
}

TEST(BenchVerdict, SimulateRatioAllRoundsOnOneSideDecide) {
    auto s = summarize({{"tmpfs", 0.91}, {"tmpfs", 1.5}, {"loop", 0.5}, {"loop", 0.89}});
    EXPECT_EQ(s["targets"]["simulate_vs_fio_tmpfs"]["verdict"], "met");
    EXPECT_EQ(s["targets"]["simulate_vs_fio_loop"]["verdict"], "missed");
}

}  // namespace
}  // namespace kvio::test
