// kvio run's child processes: output reaches the log and memory through a pipe, and a log that cannot be written
// (a full filesystem, a missing directory) still leaves the output, and says why the log is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run/stage_process.h"

using namespace kvio::run;

TEST(StageProcess, OutputReachesLogAndMemory) {
    const std::string log = testing::TempDir() + "/kvio-stage-" + std::to_string(::getpid()) + ".log";
    std::filesystem::remove(log);
    {
        StageProcess p({"sh", "-c", "echo out; echo 'kvio: the reason' >&2; exit 3"}, log, false);
        EXPECT_EQ(p.wait(), 3);
        EXPECT_EQ(p.output(), "out\nkvio: the reason\n");
        EXPECT_EQ(p.log_error(), "");
        EXPECT_EQ(last_error_line(p.output()), ": the reason");
    }
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ(ss.str(), "out\nkvio: the reason\n");
    std::filesystem::remove(log);
}

TEST(StageProcess, UnwritableLogKeepsTheOutputAndSaysWhy) {
    StageProcess p({"sh", "-c", "echo 'kvio: disk full'; exit 1"}, "/nonexistent-dir/gen.log", false);
    EXPECT_EQ(p.wait(), 1);
    EXPECT_EQ(last_error_line(p.output()), ": disk full");
    EXPECT_EQ(p.log_error(), "cannot write /nonexistent-dir/gen.log: No such file or directory");
}

TEST(StageProcess, HelperAnswerComesWithoutAFile) {
    auto [st, out] = run_helper({"printf", "/dev/loop7\n"});
    EXPECT_EQ(st, 0);
    EXPECT_EQ(out, "/dev/loop7\n");
    EXPECT_EQ(run_helper({"kvio-no-such-program"}).first, 127);
}
