// How a stopped command ends and what it exits with (README "Exit status"): a stop signal before the trace's own end
// (COMMAND, -p, --duration, COUNT) or during `distill --verify` exits 128 + the signal with every output finished;
// -p PID ends a trace when PID exits, --children follows what it forks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

/// `kvio trace ARGS` in the background, TERMinated once it is attached (--ready-file), waited for: its exit status.
std::string trace_then_sigterm(const TempDir& dir, const std::string& args) {
    return trace_in_background(dir.file("ready"), args, "p") + "kill -TERM $p; wait $p";
}

/// `kvio trace --events EV` of 64 direct 64 KiB reads of `src`: the original a --verify replays.
CmdResult trace_reads(const LoopDevice& src, const std::string& ev) {
    return run(kvio_bin() + " trace -q -d " + src.name + " --events " + ev + " -- dd if=" + src.path +
               " of=/dev/null bs=64k count=64 iflag=direct status=none");
}

/// Read plus write commands of every device in a kvio.trace/1 summary.
uint64_t traced_cmds(const json& summary) {
    uint64_t n = 0;
    for (const auto& d : summary["devices"])
        n += d["read"]["cmds"].get<uint64_t>() + d["write"]["cmds"].get<uint64_t>();
    return n;
}

// Before: a trace of a command stopped by SIGTERM or SIGHUP exited 0, as if the command had run to its end.
TEST(TraceStop, SigtermOfACommandsTraceExits143WithFinishedOutputs) {
    TempDir dir;
    const std::string ev = dir.file("e.jsonl.zst"), js = dir.file("t.json");
    auto r = run(trace_then_sigterm(dir, "-q --json " + js + " --events " + ev + " -- sleep 30"));
    EXPECT_EQ(r.status, 128 + 15) << r.err;
    EXPECT_NE(r.err.find("kvio trace: stopped by signal 15 (Terminated); outputs written"), std::string::npos) << r.err;
    EXPECT_EQ(json::parse(slurp(js))["schema"], "kvio.trace/1");
    auto t = run("zstd -q -t " + ev);
    EXPECT_EQ(t.status, 0) << "not a finished zstd frame: " << t.err;
    ASSERT_EQ(run("zstd -q -dc " + ev + " > " + dir.file("e.jsonl")).status, 0);
    auto evs = read_jsonl(dir.file("e.jsonl"));
    ASSERT_FALSE(evs.empty());
    EXPECT_EQ(evs.back()["type"], "summary");
}

// A trace with an end of its own (--duration) stopped before it exits 128 + the signal; one with no end but the
// stop (bare, --listen) ends normally on it: 0 (Trace.SigintFlushesCompleteOutputs).
TEST(TraceStop, SignalBeforeTheDurationExits128PlusItAndABareTraceZero) {
    TempDir dir;
    auto r = run(trace_then_sigterm(dir, "-q --duration 30 --json " + dir.file("d.json")));
    EXPECT_EQ(r.status, 128 + 15) << r.err;
    EXPECT_EQ(json::parse(slurp(dir.file("d.json")))["schema"], "kvio.trace/1");
    r = run(trace_then_sigterm(dir, "-q --json " + dir.file("b.json")));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("stopped by signal"), std::string::npos) << r.err;
    EXPECT_EQ(json::parse(slurp(dir.file("b.json")))["schema"], "kvio.trace/1");
}

// Before: `kvio trace -p PID` went on after PID exited, until Ctrl-C (timeout's 124 here).
TEST(TraceStop, ExitOfThePidEndsTheTraceAndZeroCommandsAreExplained) {
    TempDir dir;
    // The process ends 0.5 s after the trace is attached (--ready-file).
    const std::string ready = dir.file("ready");
    auto r = run("sh -c 'while [ ! -e " + ready + " ]; do sleep 0.05; done; sleep 0.5' & s=$!; echo $s > " +
                 dir.file("pid") + "; timeout 20 " + kvio_bin() + " trace -q -p $s --ready-file " + ready + " --json " +
                 dir.file("t.json"));
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string pid = std::regex_replace(slurp(dir.file("pid")), std::regex("\\s+"), "");
    EXPECT_NE(r.err.find("kvio trace: PID " + pid + " exited: trace stopped"), std::string::npos) << r.err;
    auto s = json::parse(slurp(dir.file("t.json")));
    EXPECT_LT(s["duration_s"].get<double>(), 10.0);
    EXPECT_EQ(traced_cmds(s), 0u);
    EXPECT_NE(r.err.find("kvio trace: 0 commands from PID " + pid + " (sh); forked processes are not included"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("add --children"), std::string::npos) << r.err;
}

// A parent whose I/O comes from processes it forked (fio's jobs): -p sees none of it; --children sees it all, from a
// child that was running when the trace started (found in /proc) and from its own later children (the fork
// tracepoint). The parent waits for --ready-file, so every write comes after the attach.
TEST(TraceStop, ChildrenOfThePidAreTracedWithChildren) {
    LoopDevice loop(16 * MiB);
    TempDir dir;
    for (const bool children : {false, true}) {
        const std::string ready = dir.file(children ? "r1" : "r0"), js = dir.file(children ? "c1.json" : "c0.json");
        const std::string job =
            "sh -c '(while [ ! -e " + ready + " ]; do sleep 0.05; done; dd if=/dev/zero of=" + loop.path +
            " bs=4k count=8 oflag=direct status=none; true); true'";  // `; true`: dd is forked, not exec'd
        auto r = run(job + " & p=$!; sleep 0.2; timeout 30 " + kvio_bin() + " trace -q -d " + loop.name + " -p $p" +
                     (children ? " --children" : "") + " --ready-file " + ready + " --json " + js);
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.err.find("exited: trace stopped"), std::string::npos) << r.err;
        auto s = json::parse(slurp(js));
        EXPECT_EQ(traced_cmds(s), children ? 8u : 0u) << s["devices"].dump();
        EXPECT_EQ(r.err.find("0 commands from PID") == std::string::npos, children) << r.err;
    }
    auto r = run(kvio_bin() + " trace --children --duration 1");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--children requires --pid"), std::string::npos) << r.err;
}

// Before: a stopped --verify exited 1, as if the replay had failed, and left its --json FILE empty (0 bytes).
TEST(DistillStop, SigtermDuringVerifyExits143AndWritesItsJson) {
    LoopDevice src(32 * MiB), dst(32 * MiB);
    TempDir dir;
    const std::string ev = dir.file("ev.jsonl");
    auto t = trace_reads(src, ev);
    ASSERT_EQ(t.status, 0) << t.err;
    // --runtime 60: the replay runs until the signal, 1 s after the replay's log appeared.
    const std::string log = dir.file("job.fio.replay.jsonl.log");
    auto r = run(kvio_bin() + " distill --events " + ev + " --dev " + src.majmin + " --filename " + dst.path +
                 " --runtime 60 -o " + dir.file("job.fio") + " --verify --json " + dir.file("d.json") +
                 " & p=$!; for i in $(seq 600); do [ -e " + log + " ] && break; sleep 0.05; done; " +
                 "sleep 1; kill -TERM $p; wait $p");
    EXPECT_EQ(r.status, 128 + 15) << r.err;
    EXPECT_NE(r.err.find("kvio: distill --verify: stopped by signal 15"), std::string::npos) << r.err;
    const json d = json::parse(slurp(dir.file("d.json")));
    EXPECT_EQ(d["schema"], "kvio.distill/1");
    EXPECT_EQ(d["stopped_by_signal"], 15);
    EXPECT_EQ(d["verify"]["stopped_by_signal"], 15);
    EXPECT_EQ(d["job"]["runtime"], "60");  // the job that ran, as derived
    EXPECT_FALSE(d["verify"].contains("size_tv")) << "a stopped replay has no score";
}

// Before: a stopped --verify without -o said "see $TMPDIR/kvio-distill-verify-XXXXXX/job.ini.replay.jsonl.log" and then
// removed that directory. Now the message names no file there when it is removed; --keep-files keeps the log it names.
TEST(DistillStop, SigtermDuringVerifyWithoutOutputNamesOnlyFilesThatStay) {
    LoopDevice src(32 * MiB), dst(32 * MiB);
    TempDir dir;
    const std::string ev = dir.file("ev.jsonl");
    auto t = trace_reads(src, ev);
    ASSERT_EQ(t.status, 0) << t.err;
    for (const bool keep : {false, true}) {
        const std::string tmp = dir.file(keep ? "tmp-keep" : "tmp");
        std::filesystem::create_directory(tmp);
        // The replay runs until the signal, 1 s after its log appeared in the private directory.
        auto r = run("TMPDIR=" + tmp + " " + kvio_bin() + " distill --events " + ev + " --dev " + src.majmin +
                     " --filename " + dst.path + " --runtime 60 --verify" + (keep ? " --keep-files" : "") +
                     " >/dev/null & p=$!; " + "for i in $(seq 600); do ls " + tmp +
                     "/*/job.ini.replay.jsonl.log >/dev/null 2>&1 && break; sleep 0.05; done; " +
                     "sleep 1; kill -TERM $p; wait $p");
        EXPECT_EQ(r.status, 128 + 15) << r.err;
        const std::string say = "kvio: distill --verify: stopped by signal 15 (the traced fio run was ended";
        EXPECT_NE(r.err.find(say), std::string::npos) << r.err;
        if (!keep) {
            EXPECT_NE(r.err.find(say + "; --keep-files keeps its log)"), std::string::npos) << r.err;
            EXPECT_EQ(r.err.find(tmp), std::string::npos) << "names a removed file: " << r.err;
            EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "left its private directory in " << tmp;
            continue;
        }
        std::smatch m;
        ASSERT_TRUE(std::regex_search(r.err, m, std::regex("; see (\\S+\\.log)\\)"))) << r.err;
        EXPECT_EQ(m[1].str().rfind(tmp + "/kvio-distill-verify-", 0), 0u) << r.err;
        EXPECT_TRUE(std::filesystem::exists(m[1].str())) << "names a removed file: " << r.err;
        EXPECT_NE(r.err.find("files are kept in " + std::filesystem::path(m[1].str()).parent_path().string() + "\n"),
                  std::string::npos)
            << r.err;
    }
}

// Before: a signal while distill was still reading its trace took the default action (killed, no message). Now the
// read stops at the next record: one line, exit 128 + N. The trace comes through a FIFO whose writer holds back its
// second half until the signal was sent, after distill's handler is installed (SigCgt in /proc/PID/status).
TEST(DistillStop, SigtermWhileLoadingTheTraceSaysSoAndExits143) {
    TempDir dir;
    {
        std::ofstream f(dir.file("half.jsonl"));
        for (int i = 0; i < 100; ++i) {
            const uint64_t t = 1'000'000'000ull + uint64_t(i) * 200'000;
            f << json{{"type", "cmd"},     {"src", "block"},
                      {"dev", "7:200"},    {"disk", "loop200"},
                      {"op", "read"},      {"rwbs", "R"},
                      {"sector", i * 128}, {"bytes", 65536},
                      {"ts_issue", t},     {"ts_complete", t + 100'000},
                      {"d2c_ns", 100'000}, {"pid", 42},
                      {"tid", 42},         {"comm", "app"}}
                     .dump()
              << "\n";
        }
    }
    const std::string fifo = dir.file("trace.jsonl"), go = dir.file("go"), half = dir.file("half.jsonl");
    auto r = run(
        "mkfifo " + fifo + " && { { cat " + half + "; while [ ! -e " + go + " ]; do sleep 0.05; done; cat " + half +
        "; } > " + fifo + " & } && " + kvio_bin() + " distill --events " + fifo + " -o " + dir.file("job.ini") +
        " & p=$!; for i in $(seq 200); do [ $(( 0x$(awk '/SigCgt/{print $2}' /proc/$p/status) >> 14 & 1 )) = 1 ] && "
        "break; sleep 0.05; done; kill -TERM $p; touch " +
        go + "; wait $p");
    EXPECT_EQ(r.status, 128 + 15) << r.err;
    EXPECT_EQ(r.err, "kvio: distill: stopped by signal 15 while loading " + fifo + "\n");
    EXPECT_FALSE(std::filesystem::exists(dir.file("job.ini"))) << "a stopped distill wrote its job";
}

}  // namespace

// A shell starts a background job with SIGINT ignored; kvio trace's handler used to be installed only after the BPF
// objects loaded and attached, so a SIGINT during that setup vanished and the trace ran until a second one (a
// ValidateE2E run sat 5.5 min in epoll_wait). The handler now comes first: the stop ends the trace after its setup.
TEST(TraceStop, SigintDuringSetupFromABackgroundJobStopsTheTrace) {
    TempDir dir;
    const std::string js = dir.file("s.json");
    // 0.2 s after the start: long after exec, before libbpf has loaded and attached the programs (0.5-1.5 s here). No
    // `timeout` around it: that would install its own SIGINT handler and forward the signal. A watchdog KILLs instead.
    auto r = run(kvio_bin() + " trace -q --json " + js +
                 " & p=$!; ( sleep 30; kill -KILL $p ) 2>/dev/null & w=$!; "
                 "sleep 0.2; kill -INT $p; wait $p; s=$?; kill $w 2>/dev/null; exit $s");
    EXPECT_NE(r.status, 137) << "the SIGINT was lost: the trace ran on until the watchdog killed it: " << r.err;
    EXPECT_EQ(r.status, 0) << r.err;  // a bare trace ends normally on its stop
    EXPECT_EQ(json::parse(slurp(js))["schema"], "kvio.trace/1");
}

// A stop while the tracer is being set up (BPF objects loading: 1-2 s) used to start COMMAND anyway once the set-up
// was done, and then TERM and KILL it 5 s later. A stop before COMMAND is released now means it never runs: exit 143
// with one line that says so. The signal is sent as soon as kvio's handler is installed (SigCgt in /proc/PID/status
// has SIGTERM), which is before the programs load, whatever the load of the machine.
TEST(TraceStop, SigtermDuringSetupNeverStartsTheCommand) {
    TempDir dir;
    const std::string mark = dir.file("ran");
    auto r = run(kvio_bin() + " trace -q -- sh -c 'echo ran > " + mark +
                 "' & p=$!; ( sleep 30; kill -KILL $p ) 2>/dev/null & w=$!; "
                 "for i in $(seq 6000); do c=$(awk '/^SigCgt/ {print $2}' /proc/$p/status 2>/dev/null); "
                 "[ -n \"$c\" ] && [ $(( 0x$c & 0x4000 )) -ne 0 ] && break; sleep 0.002; done; "
                 "kill -TERM $p; wait $p; s=$?; kill $w 2>/dev/null; exit $s");
    EXPECT_NE(r.status, 137) << "the trace ran on until the watchdog killed it: " << r.err;
    EXPECT_EQ(r.status, 128 + 15) << r.err;
    EXPECT_NE(r.err.find("while the tracer was being set up: the command was not started"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(mark)) << "the command ran: " << r.err;
}
