// End-to-end tests on a real Linux NVMe driver: one QEMU (TCG) guest with an emulated NVMe
// controller (MDTS 5 = 128 KiB) is booted once for this suite by tests/qemu/guest.sh, runs the
// steps of tests/qemu/steps/nvme_e2e.sh, and each TEST_F asserts on the files it brought back.
// If QEMU cannot be installed or the guest does not come back, every test here FAILS with the
// harness's message: it is never skipped silently.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

/// One NVMe command as the kernel's nvme_setup_cmd tracepoint prints it in tracefs.
struct TracefsCmd {
    unsigned qid = 0, cmdid = 0;
    std::string op;
    uint64_t slba = 0;
    unsigned len = 0;  ///< NVMe NLB: 0-based count of logical blocks
};

class NvmeGuest : public ::testing::Test {
protected:
    /// Boots the guest once for the whole suite.
    static void SetUpTestSuite() {
        dir_ = std::make_unique<TempDir>();
        const char* env = std::getenv("KVIO_GUEST_SH");
        std::string sh = env ? env : "tests/qemu/guest.sh";
        std::string steps = fs::path(sh).parent_path().string() + "/steps/nvme_e2e.sh";
        if (!fs::exists(sh) || !fs::exists(steps)) {
            harness_error_ = "cannot find " + sh + " and " + steps + " (run from the repo root or set KVIO_GUEST_SH)";
            return;
        }
        // The static kvio is made in the same build dir as the kvio under test.
        std::string build = fs::path(kvio_bin()).parent_path().string();
        if (build.empty()) build = ".";
        out_ = dir_->file("out");
        auto r = run("bash " + sh + " --build " + build + " --timeout 420 --out " + out_ + " " + steps);
        status_ = r.status;
        if (!fs::exists(out_ + "/status"))
            harness_error_ = "tests/qemu/guest.sh did not bring results back (exit " + std::to_string(r.status) +
                             "); its stderr:\n" + r.err;
        std::printf("[ guest    ] %s", fs::exists(out_ + "/timing") ? slurp(out_ + "/timing").c_str() : "no timing\n");
    }
    static void TearDownTestSuite() { dir_.reset(); }

    void SetUp() override {
        ASSERT_TRUE(harness_error_.empty()) << "the QEMU NVMe guest harness failed: " << harness_error_;
    }

    /// A result file of the guest, trimmed; "" when it does not exist.
    static std::string result(const std::string& name) {
        std::string p = out_ + "/" + name;
        return fs::exists(p) ? trim(slurp(p)) : std::string();
    }
    /// Asserts that guest step NAME ran and exited 0; shows its output otherwise.
    static void expect_step_ok(const std::string& name) {
        EXPECT_EQ(result(name + ".rc"), "0") << "guest step " << name << " output:\n" << result(name + ".out");
    }

    static std::vector<TracefsCmd> tracefs_setups(const std::string& text) {
        static const std::regex re(
            R"(nvme_setup_cmd: nvme0: disk=nvme0n1, qid=(\d+), cmdid=(\d+), .*cmd=\((\w+) slba=(\d+), len=(\d+),)");
        std::vector<TracefsCmd> v;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (!std::regex_search(line, m, re)) continue;
            v.push_back({unsigned(std::stoul(m[1])), unsigned(std::stoul(m[2])), m[3], std::stoull(m[4]),
                         unsigned(std::stoul(m[5]))});
        }
        return v;
    }

    static inline std::unique_ptr<TempDir> dir_;
    static inline std::string out_, harness_error_;
    static inline int status_ = -1;
};

TEST_F(NvmeGuest, GuestStepsFinished) {
    EXPECT_EQ(status_, 0) << "steps.log:\n" << result("steps.log");
    EXPECT_EQ(result("status"), "0");
}

TEST_F(NvmeGuest, GuestRunsTheDebian61KernelWithBtf) {
    EXPECT_EQ(result("uname.txt").rfind("6.1.", 0), 0u) << result("uname.txt");
    EXPECT_EQ(result("btf.present"), "yes");
}

TEST_F(NvmeGuest, StaticKvioRunsInTheGuest) {
    expect_step_ok("help");
    EXPECT_NE(result("help.out").find("trace"), std::string::npos) << result("help.out");
}

TEST_F(NvmeGuest, EmulatedControllerHasMdts128KiB) {
    EXPECT_EQ(result("nvme0n1.type"), "block");
    EXPECT_EQ(result("ng0n1.type"), "char") << "no NVMe generic (passthrough) char device /dev/ng0n1";
    EXPECT_EQ(result("nvme0n1.max_hw_sectors_kb"), "128");
    EXPECT_EQ(result("nvme0n1.logical_block_size"), "512");
    std::string ev = result("nvme_events.txt");
    EXPECT_NE(ev.find("nvme_setup_cmd"), std::string::npos) << ev;
    EXPECT_NE(ev.find("nvme_complete_rq"), std::string::npos) << ev;
}

// Ground truth without kvio: the kernel's own tracepoints through tracefs.
TEST_F(NvmeGuest, TracefsSees1MiBDirectWriteAs8NvmeWrites) {
    expect_step_ok("dd_tracefs");
    std::string text = result("tracefs_nvme.txt");
    auto cmds = tracefs_setups(text);
    ASSERT_EQ(cmds.size(), 8u) << text;
    std::map<std::pair<unsigned, unsigned>, int> open;  // (qid, cmdid) -> setups not yet completed
    for (size_t i = 0; i < cmds.size(); ++i) {
        EXPECT_EQ(cmds[i].op, "nvme_cmd_write");
        EXPECT_EQ(cmds[i].slba, 3u * 2048 + i * 256) << "byte offset 3 MiB + i x 128 KiB in 512 B LBAs";
        EXPECT_EQ(cmds[i].len, 255u) << "NLB is 0-based: 256 blocks = 128 KiB";
        ++open[{cmds[i].qid, cmds[i].cmdid}];
    }
    static const std::regex done(R"(nvme_complete_rq: nvme0: disk=nvme0n1, qid=(\d+), cmdid=(\d+), .*status=(0x\w+))");
    std::istringstream in(text);
    int completions = 0;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, done)) continue;
        ++completions;
        EXPECT_EQ(m[3].str(), "0x0") << line;
        --open[{unsigned(std::stoul(m[1])), unsigned(std::stoul(m[2]))}];
    }
    EXPECT_EQ(completions, 8) << text;
    for (auto& [k, n] : open) EXPECT_EQ(n, 0) << "qid " << k.first << " cmdid " << k.second << " unpaired";
}

}  // namespace
