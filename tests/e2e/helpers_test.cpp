// The test helpers' own promises: a test process killed before its destructors ran leaves a mount, a loop device
// and their files behind; the next LoopDevice (reap_dead_tests_leftovers) removes them, and keeps a live process's.
// realtime() runs a command SCHED_FIFO.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
namespace fs = std::filesystem;

namespace {

// The paths in `dir` whose names start with `prefix`.
std::vector<std::string> named(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().rfind(prefix, 0) == 0) v.push_back(e.path().string());
    return v;
}

bool attached(const std::string& backing) { return run("losetup -j " + backing + " | grep -q .").status == 0; }
bool mounted(const std::string& mnt) { return run("grep -q ' " + mnt + " ' /proc/self/mounts").status == 0; }

}  // namespace

TEST(TestHelpers, ReapsWhatAKilledTestLeftAndKeepsALiveOnes) {
    reap_dead_tests_leftovers("/var/tmp");  // an earlier run's, so that the count below is the child's
    TempDir d;
    LoopDevice live(1 << 20, true, d.path);  // this process's: kept
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        LoopDevice loop(1 << 20, true, d.path);
        Ext4Mount m(16 << 20);  // under /var/tmp
        (void)!write(ready[1], "r", 1);
        for (;;) pause();  // killed by the parent: no destructor runs, as under a timeout's SIGKILL
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "the child died before it had built its devices";
    close(ready[0]);
    // Held from before the child's death to after this test's own reap: the other e2e shards' LoopDevices would
    // otherwise reap the dead child's devices first (a CI run saw 2 of 6 left for this test).
    ReapLock lock;
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int st = 0;
    ASSERT_EQ(waitpid(child, &st, 0), child);
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
    const std::string tag = std::to_string(child) + "-";
    auto loops = named(d.path, "kvio-loop-" + tag), ext4_loops = named("/var/tmp", "kvio-loop-" + tag),
         mnts = named("/var/tmp", "kvio-mnt-" + tag);
    ASSERT_EQ(loops.size(), 1u);
    ASSERT_EQ(ext4_loops.size(), 1u);
    ASSERT_EQ(mnts.size(), 1u);
    EXPECT_TRUE(attached(loops[0]));
    EXPECT_TRUE(attached(ext4_loops[0]));
    EXPECT_TRUE(mounted(mnts[0]));

    // The mount, two loop devices, two files and the mount's directory.
    EXPECT_EQ(reap_dead_tests_leftovers_locked("/var/tmp") + reap_dead_tests_leftovers_locked(d.path), 6u);
    EXPECT_FALSE(mounted(mnts[0]));
    EXPECT_FALSE(attached(ext4_loops[0]));
    EXPECT_FALSE(attached(loops[0]));
    EXPECT_FALSE(fs::exists(loops[0]));
    EXPECT_FALSE(fs::exists(ext4_loops[0]));
    EXPECT_FALSE(fs::exists(mnts[0]));
    EXPECT_TRUE(attached(live.backing));
    EXPECT_TRUE(fs::exists(live.backing));
}

// realtime(): the command and what it starts run SCHED_FIFO at priority 10, and its text reaches sh unchanged
// (single quotes included).
TEST(TestHelpers, RealtimeRunsTheCommandAndItsChildrenSchedFifo) {
    auto r = run(realtime("echo 'a b'; sh -c 'chrt -p $$'"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("a b\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("scheduling policy: SCHED_FIFO"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("scheduling priority: 10"), std::string::npos) << r.out;
    EXPECT_NE(run(realtime("chrt -p $$")).out.find("SCHED_FIFO"), std::string::npos);
    EXPECT_EQ(run("chrt -p $$").out.find("SCHED_FIFO"), std::string::npos) << "the test itself runs SCHED_OTHER";
}
