// kvio trace --duty: its ON/PERIOD argument and the whole-run figures from two reads of a disk's stat file
// (trace/duty.h).
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "trace/duty.h"

using kvio::Error;
using namespace kvio::trace;

TEST(TraceDuty, ParsesOnAndPeriod) {
    const DutySpec a = parse_duty("1/10");
    EXPECT_DOUBLE_EQ(a.on_s, 1.0);
    EXPECT_DOUBLE_EQ(a.period_s, 10.0);
    EXPECT_TRUE(a.enabled());
    const DutySpec b = parse_duty("0.5/5");
    EXPECT_DOUBLE_EQ(b.on_s, 0.5);
    EXPECT_DOUBLE_EQ(b.period_s, 5.0);
    EXPECT_FALSE(DutySpec{}.enabled());
}

TEST(TraceDuty, RefusesWhatIsNotOnSlashPeriod) {
    for (const char* bad : {"1", "0/10", "-1/10", "1/0", "a/10", "1/10x", "/10", "1/", "1/1", "1/1.15"}) {
        try {
            parse_duty(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("--duty ") + bad + ":"), std::string::npos) << e.what();
        }
    }
    EXPECT_NO_THROW(parse_duty("1/1.25"));  // ON + the 200 ms tail bound fits
}

TEST(TraceDuty, StatDifferencesGiveTotalsDepthAndShare) {
    DiskStat a, b;
    a.ios[0] = 100, a.sectors[0] = 800, a.ticks_ms[0] = 1000, a.io_ticks_ms = 500, a.time_in_queue_ms = 2000;
    b = a;
    b.ios[0] += 4000, b.sectors[0] += 32000, b.ticks_ms[0] += 16000, b.io_ticks_ms += 2000;
    b.ios[1] += 10, b.sectors[1] += 80, b.ticks_ms[1] += 20, b.time_in_queue_ms += 16020;
    const auto j = disk_stat_json(a, b, 4.0, 400);
    EXPECT_EQ(j["read"]["cmds"], 4000);
    EXPECT_EQ(j["read"]["bytes"], 32000 * 512);
    EXPECT_EQ(j["write"]["cmds"], 10);
    EXPECT_EQ(j["write"]["bytes"], 80 * 512);
    EXPECT_EQ(j["cmds"], 4010);
    EXPECT_DOUBLE_EQ(j["read"]["mean_depth_busy"].get<double>(), 8.0);  // 16000 ms of reads over 2000 ms busy
    EXPECT_DOUBLE_EQ(j["write"]["mean_depth_busy"].get<double>(), 0.01);
    EXPECT_DOUBLE_EQ(j["mean_depth"].get<double>(), 16020.0 / 4000.0);
    EXPECT_EQ(j["traced_cmds"], 400);
    EXPECT_DOUBLE_EQ(j["traced_share"].get<double>(), 400.0 / 4010.0);
    const auto idle = disk_stat_json(a, a, 1.0, 0);
    EXPECT_EQ(idle["cmds"], 0);
    EXPECT_DOUBLE_EQ(idle["read"]["mean_depth_busy"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(idle["traced_share"].get<double>(), 0.0);
}
