// Queue settings (common/queue_settings) read from this machine's real sysfs, read only: every block device listed in
// /sys/class/block, partitions included, gets its disk's settings, spelled as sysfs spells them.
#include <gtest/gtest.h>

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
        if (s.count("scheduler")) {
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

TEST(QueueSettings, NoSuchDeviceReadsNothing) {
    EXPECT_EQ(queue_disk("kvio-no-such-disk"), "kvio-no-such-disk");
    EXPECT_TRUE(read_queue_settings("kvio-no-such-disk").empty());
}

}  // namespace
}  // namespace kvio
