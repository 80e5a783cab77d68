// Queue settings (common/queue_settings) read from this machine's real sysfs, read only: every block device listed in
// /sys/class/block, partitions included, gets its disk's settings, spelled as sysfs spells them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/queue_settings.h"

namespace kvio {
namespace {

std::string first_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string s;
    std::getline(in, s);
    return s.substr(0, s.find_last_not_of(" \n") + 1);
}

TEST(QueueSettings, EveryBlockDeviceReadsItsDisksSettings) {
    namespace fs = std::filesystem;
    ASSERT_TRUE(fs::is_directory("/sys/class/block")) << "no sysfs block class on this machine";
    int disks = 0;
    for (const auto& e : fs::directory_iterator("/sys/class/block")) {
        const std::string name = e.path().filename().string();
        const std::string disk = queue_disk(name);
        const fs::path q = fs::path("/sys/block") / disk / "queue";
        if (fs::exists(e.path() / "partition")) {
            EXPECT_NE(disk, name) << name << " is a partition: its disk's queue is used";
        } else {
            EXPECT_EQ(disk, name);
        }
        if (!fs::is_directory(q)) continue;
        ++disks;
        const QueueSettings s = read_queue_settings(name);
        EXPECT_EQ(s, read_queue_settings(disk)) << name;
        ASSERT_TRUE(s.count("read_ahead_kb")) << name;
        EXPECT_EQ(s.at("read_ahead_kb"), first_line(q / "read_ahead_kb")) << name;
        if (s.count("max_sectors_kb")) {
            // max_sectors_kb never exceeds max_hw_sectors_kb, which may be an odd 2^31-1 (virtio-blk): compared as
            // 64-bit numbers.
            const uint64_t hw = std::stoull(first_line(q / "max_hw_sectors_kb"));
            EXPECT_LE(std::stoull(s.at("max_sectors_kb")), hw) << name;
        }
        const QueueTarget t = read_queue_target(name);
        EXPECT_EQ(t.current, s) << name;
        if (s.count("max_sectors_kb")) EXPECT_GT(t.max_hw_sectors_kb, 0u) << name;
        if (s.count("scheduler")) {
            EXPECT_NE(std::find(t.schedulers.begin(), t.schedulers.end(), s.at("scheduler")), t.schedulers.end())
                << name << ": " << s.at("scheduler") << " not among the schedulers listed";
            EXPECT_EQ(s.at("scheduler").find_first_of("[] "), std::string::npos) << name << ": " << s.at("scheduler");
            const std::string line = first_line(q / "scheduler");  // "none [mq-deadline] kyber", or just "none"
            if (line.find('[') == std::string::npos)
                EXPECT_EQ(s.at("scheduler"), line) << name;
            else
                EXPECT_NE(line.find("[" + s.at("scheduler") + "]"), std::string::npos) << name << ": " << line;
        }
    }
    EXPECT_GT(disks, 0) << "no block device with a queue directory";
}

// A loop device's queue as this kernel shows it (docs/distill.md, "Queue settings the file level copies").
QueueTarget loop_like() {
    QueueTarget t;
    t.current = {{"scheduler", "none"},
                 {"nr_requests", "128"},
                 {"max_sectors_kb", "1280"},
                 {"read_ahead_kb", "128"},
                 {"wbt_lat_usec", "2000"}};
    t.schedulers = {"none", "mq-deadline", "kyber"};
    t.max_hw_sectors_kb = 1280;
    t.nr_tags = 128;
    return t;
}

TEST(QueueSettingPlan, TracedValueWrittenAsIs) {
    const QueueTarget t = loop_like();
    const QueueSettings traced = {{"read_ahead_kb", "512"}, {"scheduler", "mq-deadline"}};
    QueueSettingResult r = plan_queue_setting("read_ahead_kb", traced, t.current, t);
    EXPECT_EQ(r.name, "read_ahead_kb");
    EXPECT_EQ(r.traced, "512");
    EXPECT_EQ(r.target_before, "128");
    EXPECT_EQ(r.write, "512");
    EXPECT_TRUE(r.reproduced()) << r.error;
    settle_queue_setting(r, 0, "512", t);
    EXPECT_EQ(r.applied, "512");
    EXPECT_TRUE(r.reproduced()) << r.error;
    r = plan_queue_setting("scheduler", traced, t.current, t);
    EXPECT_EQ(r.write, "mq-deadline");
}

TEST(QueueSettingPlan, ValueAlreadyInForceIsNotWritten) {
    const QueueTarget t = loop_like();
    const QueueSettingResult r = plan_queue_setting("wbt_lat_usec", {{"wbt_lat_usec", "2000"}}, t.current, t);
    EXPECT_TRUE(r.write.empty()) << r.write;
    EXPECT_EQ(r.applied, "2000");
    EXPECT_TRUE(r.reproduced()) << r.error;
}

TEST(QueueSettingPlan, MaxSectorsAboveTheHardwareLimitIsCappedThere) {
    const QueueTarget t = loop_like();
    // 1280 is the target's own value already: nothing to write, and still not the traced value.
    QueueSettingResult r = plan_queue_setting("max_sectors_kb", {{"max_sectors_kb", "4096"}}, t.current, t);
    EXPECT_EQ(r.write, "");
    EXPECT_EQ(r.applied, "1280");
    EXPECT_NE(r.error.find("set to 1280, its max_hw_sectors_kb"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("splits commands above"), std::string::npos) << r.error;
    QueueTarget lower = t;
    lower.current["max_sectors_kb"] = "64";
    r = plan_queue_setting("max_sectors_kb", {{"max_sectors_kb", "4096"}}, lower.current, lower);
    EXPECT_EQ(r.write, "1280");
    settle_queue_setting(r, 0, "1280", lower);
    EXPECT_EQ(r.applied, "1280");
    EXPECT_FALSE(r.reproduced());
    // Within the limit: as traced.
    r = plan_queue_setting("max_sectors_kb", {{"max_sectors_kb", "256"}}, lower.current, lower);
    EXPECT_EQ(r.write, "256");
    EXPECT_TRUE(r.reproduced()) << r.error;
}

TEST(QueueSettingPlan, NrRequestsCappedAtTheTagsOnlyWithoutAScheduler) {
    QueueTarget t = loop_like();
    t.current["nr_requests"] = "32";
    QueueSettingResult r = plan_queue_setting("nr_requests", {{"nr_requests", "1023"}}, t.current, t);
    EXPECT_EQ(r.write, "128");
    EXPECT_FALSE(r.reproduced());
    EXPECT_NE(r.error.find("nr_tags"), std::string::npos) << r.error;
    t.current["scheduler"] = "mq-deadline";  // a scheduler's own limit is not known: the traced value is tried
    r = plan_queue_setting("nr_requests", {{"nr_requests", "1023"}}, t.current, t);
    EXPECT_EQ(r.write, "1023");
    EXPECT_TRUE(r.reproduced()) << r.error;
}

TEST(QueueSettingPlan, RefusedSchedulerIsLeftAndTheOffersNamed) {
    const QueueTarget t = loop_like();
    QueueSettingResult r = plan_queue_setting("scheduler", {{"scheduler", "bfq"}}, t.current, t);
    EXPECT_EQ(r.write, "bfq");
    settle_queue_setting(r, EINVAL, "none", t);
    EXPECT_EQ(r.applied, "none");
    EXPECT_FALSE(r.reproduced());
    EXPECT_NE(r.error.find("writing bfq failed (Invalid argument; the target offers none, mq-deadline, kyber), "
                           "left at none"),
              std::string::npos)
        << r.error;
    EXPECT_NE(r.error.find("another scheduler"), std::string::npos) << r.error;
}

TEST(QueueSettingPlan, ReadOnlySettingIsLeft) {
    const QueueTarget t = loop_like();
    QueueSettingResult r = plan_queue_setting("wbt_lat_usec", {{"wbt_lat_usec", "4000"}}, t.current, t);
    settle_queue_setting(r, EACCES, "2000", t);
    EXPECT_EQ(r.applied, "2000");
    EXPECT_NE(r.error.find("writing 4000 failed (Permission denied), left at 2000"), std::string::npos) << r.error;
}

TEST(QueueSettingPlan, ValueTheTargetChangedOnWriteIsReported) {
    const QueueTarget t = loop_like();
    QueueSettingResult r = plan_queue_setting("read_ahead_kb", {{"read_ahead_kb", "100"}}, t.current, t);
    settle_queue_setting(r, 0, "96", t);  // e.g. rounded to whole pages
    EXPECT_EQ(r.applied, "96");
    EXPECT_NE(r.error.find("wrote 100, the target reads back 96"), std::string::npos) << r.error;
}

TEST(QueueSettingPlan, SettingTheTargetLacksIsReportedNotWritten) {
    QueueTarget t = loop_like();
    t.current.erase("wbt_lat_usec");
    const QueueSettings before = t.current;
    const QueueSettingResult r = plan_queue_setting("wbt_lat_usec", {{"wbt_lat_usec", "2000"}}, before, t);
    EXPECT_TRUE(r.write.empty());
    EXPECT_TRUE(r.target_before.empty());
    EXPECT_NE(r.error.find("the target has no queue/wbt_lat_usec"), std::string::npos) << r.error;
}

TEST(QueueSettingPlan, TargetBeforeIsTheOriginalNotTheValueAfterASchedulerSwitch) {
    QueueTarget t = loop_like();
    const QueueSettings before = t.current;
    t.current["scheduler"] = "mq-deadline";
    t.current["nr_requests"] = "256";  // switching the scheduler reset it
    const QueueSettingResult r = plan_queue_setting("nr_requests", {{"nr_requests", "64"}}, before, t);
    EXPECT_EQ(r.target_before, "128");
    EXPECT_EQ(r.write, "64");
}

TEST(QueueSettings, NoSuchDeviceReadsNothing) {
    EXPECT_EQ(queue_disk("kvio-no-such-disk"), "kvio-no-such-disk");
    EXPECT_TRUE(read_queue_settings("kvio-no-such-disk").empty());
}

}  // namespace
}  // namespace kvio
