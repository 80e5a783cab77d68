// End-to-end tests on a real Linux NVMe driver: one QEMU (TCG) guest with an emulated NVMe
// controller (MDTS 5 = 128 KiB) is booted once for this suite by tests/qemu/guest.sh, runs the
// steps of tests/qemu/steps/nvme_e2e.sh, and each TEST_F asserts on the files it brought back.
// If QEMU cannot be installed or the guest does not come back, every test here FAILS with the
// harness's message: it is never skipped silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
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
        // $KVIO_GUEST_KVIO: a prebuilt static kvio instead of making $BUILD/kvio-static.
        const char* kvio_static = std::getenv("KVIO_GUEST_KVIO");
        std::string kvio_opt = kvio_static ? std::string(" --kvio ") + kvio_static : "";
        // blktrace (Debian's dynamic binary) with the host's loader and libc: steps/nvme_e2e.sh runs it beside kvio
        // trace.
        std::string files;
        for (const char* f : {"/usr/sbin/blktrace", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6",
                              "/lib/x86_64-linux-gnu/libpthread.so.0"})
            files += std::string(" --file ") + f;
        auto r =
            run("bash " + sh + " --build " + build + kvio_opt + files + " --timeout 420 --out " + out_ + " " + steps);
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

    /// The tree's `kvio trace` is still the placeholder without --events (before the tracer lands).
    static bool tracer_is_placeholder() { return result("trace_help.out").find("--events") == std::string::npos; }
    /// The last `n` characters of a guest step's output (verifier logs are long).
    static std::string tail_of(const std::string& name, size_t n = 4000) {
        std::string s = result(name + ".out");
        return s.size() > n ? "..." + s.substr(s.size() - n) : s;
    }
    /// kvio.events/1 records of a result file.
    static std::vector<nlohmann::json> events(const std::string& name) {
        std::string p = out_ + "/" + name;
        return fs::exists(p) ? read_jsonl(p) : std::vector<nlohmann::json>{};
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

#define SKIP_WITHOUT_TRACER()                                                                 \
    if (tracer_is_placeholder())                                                              \
    GTEST_SKIP() << "kvio trace in this tree is still the placeholder (no --events option); " \
                    "this NVMe acceptance test runs once the tracer lands (issue 5)"

// Acceptance (issue 5): kvio trace sees an O_DIRECT 1 MiB write at byte offset 5 MiB as exactly 8
// NVMe writes of 128 KiB at slba 10240 + 256·i, each paired with its completion, nothing dropped.
TEST_F(NvmeGuest, KvioTraceSees1MiBDirectWriteAs8NvmeWrites) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("trace_dd");
    auto ev = events("trace_dd.events.jsonl");
    ASSERT_FALSE(ev.empty()) << tail_of("trace_dd");
    std::vector<uint64_t> slbas, sectors;
    std::set<uint64_t> cids;
    for (const auto& e : ev) {
        if (e.value("type", "") != "cmd" || e.value("disk", "") != "nvme0n1") continue;
        if (e.value("src", "") == "nvme") {
            EXPECT_EQ(e.value("op", ""), "write") << e;
            EXPECT_EQ(e.value("opcode", -1), 1) << e;
            EXPECT_EQ(e.value("nlb", 0u), 256u) << e;
            EXPECT_EQ(e.value("bytes", 0u), 131072u) << e;
            EXPECT_EQ(e.value("status", -1), 0) << e;
            EXPECT_GE(e.value("qid", 0u), 1u) << "I/O queues are 1..N; 0 is the admin queue: " << e;
            uint64_t is = e.value("ts_issue", 0ull), tc = e.value("ts_complete", 0ull);
            EXPECT_GT(is, 0u) << e;
            EXPECT_GE(tc, is) << e;
            EXPECT_EQ(e.value("d2c_ns", 0ull), tc - is) << e;
            slbas.push_back(e.value("slba", ~0ull));
            cids.insert(e.value("cid", ~0ull));
        } else if (e.value("src", "") == "block" && e.value("op", "") == "write") {
            EXPECT_EQ(e.value("bytes", 0u), 131072u) << e;
            sectors.push_back(e.value("sector", ~0ull));
        }
    }
    std::sort(slbas.begin(), slbas.end());
    std::sort(sectors.begin(), sectors.end());
    std::vector<uint64_t> want;
    for (uint64_t i = 0; i < 8; ++i) want.push_back(5 * 2048 + i * 256);  // 5 MiB / 512 B, + 128 KiB / 512 B
    EXPECT_EQ(slbas, want) << "NVMe write slba values (512 B LBAs)";
    EXPECT_EQ(cids.size(), 8u) << "8 commands in flight need 8 distinct command ids";
    EXPECT_EQ(sectors, want) << "block-layer write sectors";
    const auto& sum = ev.back();
    ASSERT_EQ(sum.value("type", ""), "summary") << sum;
    EXPECT_EQ(sum.value("dropped", -1), 0) << sum;
    EXPECT_EQ(sum.value("unmatched_completes", -1), 0) << sum;
    EXPECT_EQ(sum.value("negative_deltas", -1), 0) << sum;
}

// The 6.1 kernel's syscalls: per-syscall tracepoints where its tracefs has them (else raw_syscalls), and raw_syscalls
// when KVIO_TRACE_RAW_SYSCALLS=1 forces them; dd's 8 reads of the device counted the same on both.
TEST_F(NvmeGuest, SyscallHistogramsOnEitherSyscallHook) {
    SKIP_WITHOUT_TRACER();
    for (const std::string hook : {"default", "raw"}) {
        expect_step_ok("syscalls_" + hook);
        const std::string js = result("syscalls_" + hook + ".trace.json");
        ASSERT_FALSE(js.empty()) << tail_of("syscalls_" + hook);
        auto s = nlohmann::json::parse(js);
        const bool per_syscall = hook == "default" && result("syscall_events.present") == "yes";
        EXPECT_EQ(s.value("syscall_hooks", ""), per_syscall ? "per_syscall" : "raw_syscalls") << hook;
        EXPECT_EQ(s["process"]["vfs_read"]["count"], 8) << hook << ": " << s["process"];
    }
}

// --files on Debian's 6.1 (no bpf_rdonly_cast): the probe-read build of the issue program is the one loaded and runs;
// the raw device's direct writes are no file's (bpf/file_attr.bpf.h: only iomap's dio names a file).
TEST_F(NvmeGuest, FilesLoadsTheProbeReadIssueProgramOn61) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("files_dd");
    const std::string js = result("files_dd.trace.json");
    ASSERT_FALSE(js.empty()) << tail_of("files_dd");
    auto s = nlohmann::json::parse(js);
    std::map<std::string, uint64_t> runs;
    for (const auto& p : s.at("bpf_stats").at("programs")) runs[p.at("name")] = p.at("run_cnt").get<uint64_t>();
    EXPECT_GE(runs["block_rq_issue_btf"], 4u) << s["bpf_stats"].dump();
    EXPECT_FALSE(runs.count("block_rq_issue_cast_btf")) << s["bpf_stats"].dump();
    const auto& at = s.at("files_attribution");
    EXPECT_GE(at.at("no_file").get<uint64_t>(), 4u) << at.dump();
    EXPECT_EQ(at.at("dio_at_issue"), 0) << at.dump();
}

// Acceptance (issue 5): kvio gen (llama3.1-8b, 256-token chunks: 32 MiB objects, 2 stores + 2 loads)
// under kvio trace, then kvio validate: every object's commands are exactly the projected ones.
// A load is 256 commands of 128 KiB (MDTS / max_sectors_kb 128 KiB); a store adds its 4 KiB header.
void expect_engine_validates(const std::string& out, const std::string& name, const std::string& join) {
    std::ifstream f(out + "/" + name + ".validate.json");
    ASSERT_TRUE(f.good()) << "no " << name << ".validate.json";
    auto v = nlohmann::json::parse(f);
    SCOPED_TRACE(name + " validate report: " + v.dump().substr(0, 1500));
    EXPECT_EQ(v["join"].value("mode", ""), join);
    EXPECT_EQ(v.value("objects", 0), 4);
    EXPECT_EQ(v.value("exact_match", -1), 4) << "100 % exact-match";
    ASSERT_TRUE(v["wape"].is_number()) << "WAPE undefined: no command was joined";
    EXPECT_EQ(v["wape"].get<double>(), 0.0);
    EXPECT_EQ(v.value("size_tv", -1.0), 0.0);
    EXPECT_EQ(v["per_op"]["load"]["measured"].value("cmds", 0), 2 * 256);
    EXPECT_EQ(v["per_op"]["store"]["measured"].value("cmds", 0), 2 * 257);
    EXPECT_EQ(v["per_op"]["load"]["measured"].value("bytes", 0ull), 2ull * 32 * 1024 * 1024);
    EXPECT_EQ(v["join"].value("tracer_dropped", -1), 0);
}

TEST_F(NvmeGuest, UringCmdPassthroughJoinsByUserData) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("uring_cmd_gen");
    expect_step_ok("uring_cmd_validate");
    expect_engine_validates(out_, "uring_cmd", "user_data");
}

TEST_F(NvmeGuest, IoUringOnBlockDeviceJoinsByUserData) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("io_uring_gen");
    expect_step_ok("io_uring_validate");
    expect_engine_validates(out_, "io_uring", "user_data");
}

TEST_F(NvmeGuest, PosixOnBlockDeviceJoinsByOffset) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("posix_gen");
    expect_step_ok("posix_validate");
    expect_engine_validates(out_, "posix", "offset");
}

// blktrace and kvio trace (two runs, one per dd) ran side by side on the same dd writes and reads (steps/nvme_e2e.sh):
// `kvio import blktrace` of blktrace's per-CPU files gives the same data commands as kvio trace's block rows, command
// for command (sector, bytes, op, rwbs), issue and completion times within 1 ms (the same tracepoints, different
// probes).
TEST_F(NvmeGuest, BlktraceImportEqualsKvioTraceCommandForCommand) {
    SKIP_WITHOUT_TRACER();
    expect_step_ok("bt_trace");
    expect_step_ok("bt_trace_read");
    ASSERT_EQ(result("blktrace.rc"), "0") << result("blktrace.log");
    TempDir d;
    auto r = run(kvio_bin() + " import blktrace " + out_ + "/bt -o " + d.file("bt.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err;
    auto data_cmds = [](std::initializer_list<std::string> paths) {
        std::vector<nlohmann::json> v;
        for (auto& path : paths)
            for (auto& j : read_jsonl(path))
                if (j.value("type", "") == "cmd" && j.value("src", "") == "block" &&
                    (j["op"] == "read" || j["op"] == "write"))
                    v.push_back(j);
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a["ts_issue"] < b["ts_issue"]; });
        return v;
    };
    auto bt = data_cmds({d.file("bt.jsonl")});
    auto kv = data_cmds({out_ + "/bt.events.jsonl", out_ + "/bt_read.events.jsonl"});
    // 16 × 64 KiB writes, 4 × 256 KiB reads split at MDTS 128 KiB: 24 commands.
    ASSERT_EQ(kv.size(), 24u) << slurp(out_ + "/bt.events.jsonl");
    ASSERT_EQ(bt.size(), kv.size()) << slurp(d.file("bt.jsonl"));
    auto near = [](uint64_t a, uint64_t b) { return (a > b ? a - b : b - a) < 1000000; };
    // Stamps within 1 ms for all but two commands. Both tracers stamp the same tracepoints, each in its own handler,
    // one after the other; a host that deschedules the guest's vCPU between the two handlers puts milliseconds between
    // them. Seen in fresh-clone CI runs (2026-12-06), always kvio's stamp the later: one issue 4.3 ms apart (its insert
    // 0.35 ms), and in another run one command's insert 1.85 ms and completion 6.96 ms apart, every exact field equal
    // (docs/testing.md). The exact fields are asserted for every command.
    size_t far = 0;
    for (size_t i = 0; i < kv.size(); ++i) {
        SCOPED_TRACE("command " + std::to_string(i) + ": kvio " + kv[i].dump() + "\nblktrace " + bt[i].dump());
        EXPECT_EQ(bt[i]["sector"], kv[i]["sector"]);
        EXPECT_EQ(bt[i]["bytes"], kv[i]["bytes"]);
        EXPECT_EQ(bt[i]["op"], kv[i]["op"]);
        EXPECT_EQ(bt[i]["rwbs"], kv[i]["rwbs"]);
        EXPECT_EQ(bt[i]["dev"], kv[i]["dev"]);
        if (!near(bt[i]["ts_issue"], kv[i]["ts_issue"]) || !near(bt[i]["ts_complete"], kv[i]["ts_complete"]) ||
            !near(bt[i].value("ts_insert", 0ull), kv[i].value("ts_insert", 0ull))) {
            ++far;
            std::cerr << "command " << i << ": insert " << kv[i].value("ts_insert", 0ull) << " (kvio) vs "
                      << bt[i].value("ts_insert", 0ull) << " (blktrace), issue " << kv[i]["ts_issue"] << " vs "
                      << bt[i]["ts_issue"] << ", complete " << kv[i]["ts_complete"] << " vs " << bt[i]["ts_complete"]
                      << "\n";
        }
        EXPECT_EQ(bt[i]["comm"], "dd");
    }
    EXPECT_LE(far, 2u);
}

}  // namespace
