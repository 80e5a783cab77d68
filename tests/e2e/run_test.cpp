// `kvio run` end to end on embedded loop devices: outputs, scores, cleanup on success, error and signals,
// and report.html rendered by headless Chromium (screenshot kept in $BUILD/test-results/).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <regex>
#include <set>
#include <tuple>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/helpers.h"
#include "tests/timeline_check.h"

namespace kvio::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string results_dir() {
    fs::path d = fs::path(kvio_bin()).parent_path() / "test-results";
    fs::create_directories(d);
    return fs::absolute(d).string();
}

/// Loop devices whose backing file lies under `dir` (from `losetup -a`).
std::vector<std::string> loops_under(const std::string& dir) {
    std::vector<std::string> out;
    std::istringstream ls(run("losetup -a").out);
    std::string line;
    while (std::getline(ls, line))
        if (line.find(dir) != std::string::npos) out.push_back(line);
    return out;
}

/// Image files (*.img) left under `dir`.
std::vector<std::string> images_under(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->path().extension() == ".img") out.push_back(it->path().string());
    return out;
}

/// Processes whose command line mentions `s` (a stage left running would).
std::vector<std::string> procs_mentioning(const std::string& s) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string pid = e.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(getpid())) continue;
        std::string cmd = slurp(e.path().string() + "/cmdline");
        for (auto& c : cmd)
            if (c == '\0') c = ' ';
        if (cmd.find(s) != std::string::npos) out.push_back(pid + ": " + cmd);
    }
    return out;
}

/// One small run shared by the tests that only read its outputs.
class RunOutputs : public ::testing::Test {
protected:
    static inline TempDir* dir = nullptr;
    static inline CmdResult res;
    static inline std::string out;
    static void SetUpTestSuite() {
        dir = new TempDir();
        // One run, no retry: a completion the kernel ran no BPF program for is still reported (as
        // "complete_lost"), so validation must be exact every time.
        out = dir->file("out");
        res = run(kvio_bin() + " run --num-chunks 4 --out " + out);
    }
    static void TearDownTestSuite() {
        delete dir;
        dir = nullptr;
    }
};

TEST_F(RunOutputs, EveryFileExistsAndParses) {
    ASSERT_EQ(res.status, 0) << res.err;
    // Stage progress on stderr, summary on stdout.
    for (const char* s :
         {"kvio run: gen 4 chunks", "kvio run: validate", "kvio run: distill", "kvio run: verify", "kvio run: report"})
        EXPECT_NE(res.err.find(s), std::string::npos) << s << "\n" << res.err;
    EXPECT_NE(res.out.find("report: " + out + "/report.html"), std::string::npos) << res.out;

    json run_doc = json::parse(slurp(out + "/run.json"));
    EXPECT_EQ(run_doc["schema"], "kvio.run/1");
    EXPECT_TRUE(run_doc["target"]["embedded"].get<bool>());
    EXPECT_EQ(run_doc["target"]["path"].get<std::string>().rfind("/dev/loop", 0), 0u);
    EXPECT_NE(run_doc["verify_target"]["path"], run_doc["target"]["path"]);
    json trace = json::parse(slurp(out + "/trace.json"));
    EXPECT_EQ(trace["schema"], "kvio.trace/1");
    ASSERT_EQ(trace["devices"].size(), 1u);
    EXPECT_EQ(trace["devices"][0]["disk"], run_doc["target"]["disk"]);

    auto ev = read_jsonl(out + "/events.jsonl");
    ASSERT_GT(ev.size(), 1u);
    EXPECT_EQ(ev.back()["type"], "summary");
    EXPECT_EQ(ev.back()["dropped"], 0);
    auto sem = read_jsonl(out + "/semantic.jsonl");
    ASSERT_EQ(sem.size(), 1u + 8u);  // meta + 4 stores + 4 loads
    EXPECT_EQ(sem[0]["schema"], "kvio.semantic/1");
    EXPECT_EQ(sem[0]["model"], "llama3.1-8b");
    json rec = json::parse(slurp(out + "/record.json"));
    EXPECT_EQ(rec["objects"].size(), 4u);
    json val = json::parse(slurp(out + "/validate.json"));
    EXPECT_EQ(val["schema"], "kvio.validate/1");
    json ver = json::parse(slurp(out + "/verify.json"));
    EXPECT_GT(ver["replay_cmds"].get<uint64_t>(), 0u);
    auto rep = read_jsonl(out + "/replay.events.jsonl");
    EXPECT_GT(rep.size(), 1u);

    std::string job = slurp(out + "/job.fio");
    // Every store, then every load: two phases, two stonewalled sections.
    EXPECT_NE(job.find("[kvio-distilled-phase1]"), std::string::npos) << job;
    EXPECT_NE(job.find("[kvio-distilled-phase2]\nstonewall\n"), std::string::npos) << job;
    EXPECT_NE(job.find("filename=" + run_doc["verify_target"]["path"].get<std::string>()), std::string::npos) << job;
    EXPECT_NE(job.find("bssplit="), std::string::npos) << job;
    std::string iolog = slurp(out + "/job.iolog");
    EXPECT_EQ(iolog.rfind("fio version 3 iolog\n", 0), 0u);
    // Every traced read/write command is one iolog line.
    size_t rw_cmds = 0, io_lines = 0;
    for (const auto& e : ev)
        if (e.value("type", "") == "cmd" && (e["op"] == "read" || e["op"] == "write")) ++rw_cmds;
    std::istringstream il(iolog);
    std::string line;
    while (std::getline(il, line))
        if (line.find(" read ") != std::string::npos || line.find(" write ") != std::string::npos) ++io_lines;
    EXPECT_EQ(io_lines, rw_cmds);
    std::string html = slurp(out + "/report.html");
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no link out but the SVG namespace
    // the diagnosis of the run's own trace (gen's 512 KiB transfers at depth >= 1: none of docs/diagnose.md's
    // findings), and no breakdown section: the run does not trace with --breakdown
    EXPECT_NE(html.find("<section id=\"diagnosis\">"), std::string::npos);
    EXPECT_EQ(html.find("<section id=\"breakdown\">"), std::string::npos);
}

TEST_F(RunOutputs, ScoresAreExact) {
    ASSERT_EQ(res.status, 0) << res.err;
    json val = json::parse(slurp(out + "/validate.json"));
    EXPECT_EQ(val["objects"], 8);
    EXPECT_EQ(val["exact_match"], 8);
    EXPECT_EQ(val["per_cmd_size_match"], 8);
    EXPECT_EQ(val["wape"].get<double>(), 0.0);
    EXPECT_EQ(val["size_tv"].get<double>(), 0.0);
    EXPECT_NE(res.out.find("exact-match 8/8 (100.00%)  WAPE 0.0000%"), std::string::npos) << res.out;
    EXPECT_NE(res.out.find("size-TV 0.0000"), std::string::npos) << res.out;
    // gen's first-MiB emptiness check runs before tracing: no readahead commands in the traced workload.
    EXPECT_EQ(val["untagged_cmds"], 0);
    // The replay of the distilled job has the original's command sizes: 512 KiB transfers (and 4 KiB headers).
    // The 4 KiB slot headers, one at each object's start, are a job of their own beside the 512 KiB writes (a flow
    // pair), so neither stream has mixed sizes that fio could pile up at the region's end.
    json ver = json::parse(slurp(out + "/verify.json"));
    EXPECT_LT(ver["size_tv"]["read"].get<double>(), 0.05);
    EXPECT_LT(ver["size_tv"]["write"].get<double>(), 0.05);
    json run_doc = json::parse(slurp(out + "/run.json"));
    const json& sections = run_doc["job"]["options"]["sections"];
    ASSERT_GE(sections.size(), 2u) << run_doc["job"].dump();
    for (const auto& s : sections) EXPECT_EQ(s["options"].value("time_based", ""), "") << run_doc["job"].dump();
    EXPECT_EQ(sections[0]["options"].value("rw", ""), "write") << run_doc["job"].dump();
    EXPECT_NE(sections[0]["options"].value("io_size", ""), "") << run_doc["job"].dump();
    // The time-resolved score: the phase sequence is reproduced, and the summary line leads with it.
    const json& tr = ver["time_resolved"];
    EXPECT_EQ(tr["phases"]["orig"], 2) << tr["phases"].dump();
    EXPECT_TRUE(tr["phases"]["in_order"].get<bool>()) << tr["phases"].dump();
    // The bounds per window (DistillPhases.KvioGenStoreAllThenLoadAll has the rest of them).
    EXPECT_LE(tr["worst"]["size_tv"].get<double>(), 0.05) << tr["worst"].dump();
    EXPECT_LE(tr["worst"]["read_err_points"].get<double>(), 2.0) << tr["worst"].dump();
    EXPECT_NE(res.out.find("fidelity: worst of "), std::string::npos) << res.out;
    EXPECT_NE(res.out.find("phases 2 -> 2 in order"), std::string::npos) << res.out;
    EXPECT_LT(ver["rwmix_err_points"].get<double>(), 5.0);
}

// OUT/timeline.json: a valid trace-event file with every traced command once, the 8 object ops, and a flow from
// an op to each command validate's join attributed (all of gen's commands: untagged 0).
TEST_F(RunOutputs, TimelineHasEveryCommandAndTheObjectFlows) {
    ASSERT_EQ(res.status, 0) << res.err;
    EXPECT_NE(res.out.find("timeline: " + out + "/timeline.json"), std::string::npos) << res.out;
    const json doc = json::parse(slurp(out + "/timeline.json"));
    const TimelineCheck c = check_timeline(doc);
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
    const uint64_t t0 = doc["otherData"]["t0_ns"];
    std::multiset<std::tuple<std::string, uint64_t, uint64_t, uint64_t>> want, got(c.cmds.begin(), c.cmds.end());
    for (const auto& e : read_jsonl(out + "/events.jsonl"))
        if (e["type"] == "cmd") want.emplace(e["dev"], e["sector"], e["bytes"], e["ts_issue"].get<uint64_t>() - t0);
    EXPECT_EQ(got, want);
    EXPECT_EQ(c.by_cat.at("op"), 8u);
    const json val = json::parse(slurp(out + "/validate.json"));
    const uint64_t joined = val["join"]["joined"]["cmds"];
    EXPECT_GT(joined, 0u);
    EXPECT_EQ(c.flows, joined);
    EXPECT_EQ(c.flow_ends.size(), joined);
    json run_doc = json::parse(slurp(out + "/run.json"));
    EXPECT_EQ(run_doc["timeline"]["flows"], joined);
    EXPECT_NE(slurp(out + "/report.html").find(std::to_string(joined) + " object→command flows"), std::string::npos);
}

// Each output path is printed once: in the summary on stdout (before: also in a progress line on stderr, so a
// terminal showed the timeline and the report twice).
TEST_F(RunOutputs, TimelineAndReportArePrintedOnce) {
    ASSERT_EQ(res.status, 0) << res.err;
    const std::string all = res.out + res.err;
    for (const std::string f : {"/timeline.json", "/report.html"}) {
        size_t n = 0;
        for (size_t at = all.find(out + f); at != std::string::npos; at = all.find(out + f, at + 1)) ++n;
        EXPECT_EQ(n, 1u) << f << "\n" << all;
    }
    EXPECT_NE(res.out.find("report: " + out + "/report.html\n"), std::string::npos) << res.out;
}

TEST_F(RunOutputs, CleansUpLoopDevicesAndImages) {
    ASSERT_EQ(res.status, 0) << res.err;
    EXPECT_TRUE(loops_under(out).empty()) << loops_under(out)[0];
    EXPECT_TRUE(images_under(out).empty()) << images_under(out)[0];
    json run_doc = json::parse(slurp(out + "/run.json"));
    std::string a = run_doc["target"]["path"], b = run_doc["verify_target"]["path"];
    for (const auto& dev : {a, b}) {
        // A detached loop device has no backing_file attribute; e2e shards run side by side, so another test may have
        // attached the same device since: only a backing file of this run's counts.
        const std::string attr = "/sys/block/" + dev.substr(5) + "/loop/backing_file";
        if (!fs::exists(attr)) continue;
        const std::string backing = slurp(attr);
        EXPECT_EQ(backing.find(out), std::string::npos) << dev << " still attached to " << backing;
    }
}

TEST_F(RunOutputs, ReportRendersInHeadlessChromium) {
    ASSERT_EQ(res.status, 0) << res.err;
    if (run("command -v chromium").status != 0)
        GTEST_FAIL() << "chromium is not installed (scripts/deps.sh installs it)";
    std::string res_dir = results_dir();
    std::string html = res_dir + "/run_report.html", png = res_dir + "/run_report.png";
    fs::copy_file(out + "/report.html", html, fs::copy_options::overwrite_existing);
    fs::remove(png);
    TempDir profile;
    std::string flags =
        " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update"
        " --disable-sync --no-first-run --user-data-dir=" +
        profile.path + " ";
    auto shot = run("timeout 120 chromium" + flags + "--screenshot=" + png + " --window-size=1280,4000 file://" + html);
    ASSERT_TRUE(fs::exists(png)) << shot.err;
    // A PNG 1280 × 4000 (IHDR width/height, big-endian at bytes 16..23) with real content (charts compress poorly).
    std::string p = slurp(png);
    ASSERT_GT(p.size(), 24u);
    EXPECT_EQ(p.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    auto be32 = [&](size_t o) {
        return (uint32_t(uint8_t(p[o])) << 24) | (uint32_t(uint8_t(p[o + 1])) << 16) |
               (uint32_t(uint8_t(p[o + 2])) << 8) | uint8_t(p[o + 3]);
    };
    EXPECT_EQ(be32(16), 1280u);
    EXPECT_EQ(be32(20), 4000u);
    EXPECT_GT(p.size(), 100000u) << "screenshot too small to hold the charts";

    auto dom = run("timeout 120 chromium" + flags + "--dump-dom file://" + html);
    ASSERT_EQ(dom.status, 0) << dom.err;
    for (const char* id : {"summary", "scores", "latency", "sizes", "qd", "lba", "timeline", "job", "files",
                           "validate-scores", "fidelity-scores", "fidelity-time", "phases"})
        EXPECT_NE(dom.out.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
    std::regex svg_re("<svg[^>]*class=\"chart\"");
    size_t svgs = std::distance(std::sregex_iterator(dom.out.begin(), dom.out.end(), svg_re), std::sregex_iterator());
    EXPECT_EQ(svgs, 9u + 2u + 2u + 1u + 3u);  // latency, sizes, qd, heatmap, timelines
    for (const char* t :
         {"D2C, writes", "D2C, reads", "Q2D, writes", "VFS write", "fsync", "gap: write → fsync", "write command sizes",
          "queue depth, reads", "LBA heatmap", "whole run", "zoom: first store", "latency (log2 bucket, lower bound)",
          "time since first op (s)", "device offset (MiB)", "[kvio-distilled-phase1]", "Fidelity over time"})
        EXPECT_NE(dom.out.find(t), std::string::npos) << t;
    // The D2C charts have bars (the run wrote and read 128 MiB): their SVG holds <rect> bars with <title> counts.
    EXPECT_NE(dom.out.find("commands"), std::string::npos);
}

/// Starts `kvio run` with stdout+stderr to `log`; returns its pid.
pid_t spawn_run(const std::vector<std::string>& args, const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        FILE* f = std::fopen(log.c_str(), "w");
        if (f) {
            dup2(fileno(f), 1);
            dup2(fileno(f), 2);
        }
        std::vector<std::string> all = {kvio_bin(), "run"};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : all) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

/// Waits for `path`, or for a file the tracer is still writing under PATH.tmp-PID (common/output_file.h: a trace's
/// --events file gets its final name when the trace ends), to hold `min_size` bytes.
bool wait_for_file(const std::string& path, double seconds, uint64_t min_size = 1) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const std::string pending = fs::path(path).filename().string() + ".tmp-";
    while (std::chrono::steady_clock::now() < end) {
        std::error_code ec;
        if (fs::exists(path, ec) && fs::file_size(path, ec) >= min_size) return true;
        for (const auto& e : fs::directory_iterator(fs::path(path).parent_path(), ec))
            if (e.path().filename().string().rfind(pending, 0) == 0 && fs::file_size(e.path(), ec) >= min_size)
                return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

int wait_status(pid_t pid) {
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void expect_clean(const std::string& out) {
    EXPECT_TRUE(loops_under(out).empty()) << loops_under(out)[0];
    EXPECT_TRUE(images_under(out).empty()) << images_under(out)[0];
    EXPECT_TRUE(procs_mentioning(out).empty()) << procs_mentioning(out)[0];
}

// Stopped during the simulation: simulate ends its requests and stops its tracer, what it stored and loaded is
// scored, and the ext4 is unmounted before the loop device goes.
TEST(RunSignals, SigintDuringSimulateUnmountsDetachesAndScores) {
    TempDir d;
    std::string out = d.file("out"), log = d.file("log");
    pid_t pid = spawn_run({"--workload", "simulate", "--duration", "60", "--out", out}, log);
    ASSERT_TRUE(wait_for_file(out + "/semantic.jsonl", 60, 1200)) << slurp(log);  // the meta line and an op
    EXPECT_NE(slurp("/proc/mounts").find(out + "/mnt"), std::string::npos)
        << "the ext4 should be mounted while simulate runs";
    kill(pid, SIGINT);
    EXPECT_EQ(wait_status(pid), 128 + SIGINT) << slurp(log);
    expect_clean(out);
    EXPECT_EQ(slurp("/proc/mounts").find(out), std::string::npos);
    EXPECT_NE(slurp(log).find("the ops the workload completed before the stop: validate: exact-match "),
              std::string::npos)
        << slurp(log);
    json v = json::parse(slurp(out + "/validate.json"));
    EXPECT_GE(v["objects"].get<uint64_t>(), 1u);
    EXPECT_EQ(json::parse(slurp(out + "/simulate.json"))["kvio"]["stop"]["reason"], "signal Interrupt");
}

TEST(RunSignals, SigtermDuringGenDetachesAndRemoves) {
    TempDir d;
    std::string out = d.file("out"), log = d.file("log");
    // 64 chunks (128 ops): the stop comes after the first op, well before the last. With 16 chunks, beside stress-ng
    // and a second e2e shard, gen had finished all 32 ops before the test's SIGTERM arrived.
    pid_t pid = spawn_run({"--num-chunks", "64", "--out", out}, log);
    // Stop it while gen writes under trace: the events file has commands in it, the semantic file an op or more.
    ASSERT_TRUE(wait_for_file(out + "/events.jsonl", 60, 20000)) << slurp(log);
    ASSERT_TRUE(wait_for_file(out + "/semantic.jsonl", 60, 1200)) << slurp(log);  // the meta line and an op
    ASSERT_EQ(loops_under(out).size(), 1u) << "the target image should be attached while gen runs";
    kill(pid, SIGTERM);
    EXPECT_EQ(wait_status(pid), 128 + SIGTERM) << slurp(log);
    EXPECT_NE(slurp(log).find("stopped by"), std::string::npos) << slurp(log);
    expect_clean(out);
    // What gen completed before the stop is scored, and exactly: the tracer ran until gen had finished its ops.
    EXPECT_NE(slurp(log).find("the ops the workload completed before the stop: validate: exact-match "),
              std::string::npos)
        << slurp(log);
    ASSERT_TRUE(fs::exists(out + "/validate.json")) << slurp(log);
    json v = json::parse(slurp(out + "/validate.json"));
    EXPECT_GE(v["objects"].get<uint64_t>(), 1u);
    EXPECT_LT(v["objects"].get<uint64_t>(), 128u) << "gen was not stopped";
    EXPECT_EQ(v["exact_match"], v["objects"]) << slurp(out + "/validate.txt");
    EXPECT_EQ(v["untagged_cmds"], 0) << slurp(out + "/validate.txt");
}

TEST(RunSignals, SigintDuringVerifyDetachesBothAndRemoves) {
    TempDir d;
    std::string out = d.file("out"), log = d.file("log");
    pid_t pid = spawn_run({"--num-chunks", "2", "--out", out}, log);
    // verify.log appears when the replay's `kvio trace -- fio` starts on the second device.
    ASSERT_TRUE(wait_for_file(out + "/verify.log", 90, 0)) << slurp(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(loops_under(out).size(), 2u);
    kill(pid, SIGINT);
    EXPECT_EQ(wait_status(pid), 128 + SIGINT) << slurp(log);
    expect_clean(out);
    // A stopped run flushes what it has: run.json says where the stop came and lists the stages done before it
    // (there was no run.json before); fio's JSON is whole or absent (it was fio's notes and a cut document).
    ASSERT_TRUE(fs::exists(out + "/run.json")) << slurp(log);
    const json rj = json::parse(slurp(out + "/run.json"));
    EXPECT_EQ(rj["interrupted"]["signal"], SIGINT) << rj.dump(2);
    EXPECT_EQ(rj["interrupted"]["stage"], "verify") << rj.dump(2);
    std::vector<std::string> done;
    for (const auto& st : rj["stages"]) done.push_back(st["name"]);
    EXPECT_EQ(done, (std::vector<std::string>{"attach", "trace+gen", "validate", "attach-verify", "distill"}));
    EXPECT_EQ(rj["validate"]["objects"], 4) << "2 chunks: 2 stores and 2 loads, scored before the stop";
    const std::string validated = rj["interrupted"].value("validated", "");
    EXPECT_EQ(validated.rfind("scored before the stop: ", 0), 0u) << validated;
    EXPECT_NE(validated.find("/validate.txt)"), std::string::npos) << validated;
    EXPECT_TRUE(rj["files"].contains("job")) << rj["files"].dump();
    EXPECT_FALSE(rj["files"].contains("verify")) << "verify.json is written only by a completed verify";
    if (fs::exists(out + "/replay.fio.json")) {
        EXPECT_TRUE(json::accept(slurp(out + "/replay.fio.json"))) << slurp(out + "/replay.fio.json");
    }
    for (const auto& e : fs::directory_iterator(out))
        EXPECT_EQ(e.path().filename().string().find("replay.fio.json."), std::string::npos) << e.path();
}

/// Mount points under `dir` (from /proc/mounts).
std::vector<std::string> mounts_under(const std::string& dir) {
    std::vector<std::string> out;
    std::istringstream ms(slurp("/proc/mounts"));
    std::string line;
    while (std::getline(ms, line))
        if (line.find(dir) != std::string::npos) out.push_back(line);
    return out;
}

/// Seconds until no loop device, mount, image or process of the run under `out` is left, or -1 and what is still
/// there after `seconds` (undone here then: a failing test must not leave a loop device to the next one).
std::pair<double, std::string> seconds_until_clean(const std::string& out, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    auto left = [&] {
        std::string s;
        for (const auto& v : {loops_under(out), mounts_under(out), images_under(out), procs_mentioning(out)})
            for (const auto& x : v) s += x + "\n";
        return s;
    };
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
        if (left().empty()) return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), ""};
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string what = left();
    for (const auto& p : procs_mentioning(out)) kill(std::stoi(p), SIGKILL);
    for (const auto& m : mounts_under(out)) {
        std::istringstream f(m);
        std::string src, dir;
        f >> src >> dir;
        run("umount -l " + dir);
    }
    for (const auto& l : loops_under(out)) run("losetup -d " + l.substr(0, l.find(':')));
    return {-1, what};
}

// SIGKILL gives the run no chance to clean up: its guard process does, within a few seconds.
TEST(RunSignals, SigkillDuringGenLeavesNoLoopDeviceOrImage) {
    TempDir d("/dev/shm");  // the images in tmpfs
    std::string out = d.file("out"), log = d.file("log");
    pid_t pid = spawn_run({"--num-chunks", "16", "--out", out}, log);
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (loops_under(out).empty() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(loops_under(out).size(), 1u) << slurp(log);
    auto partial = [&] {  // the trace stage's events file while it writes: NAME.tmp-PID
        std::vector<std::string> v;
        for (const auto& e : fs::directory_iterator(out))
            if (e.path().filename().string().find(".tmp-") != std::string::npos) v.push_back(e.path().string());
        return v;
    };
    while (partial().empty() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::vector<std::string> before = partial();
    ASSERT_FALSE(before.empty()) << "no partial output to leave behind\n" << slurp(log);
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_status(pid), 128 + SIGKILL);
    const auto [s, left] = seconds_until_clean(out, 10);
    EXPECT_GE(s, 0) << "left 10 s after SIGKILL:\n" << left << slurp(log);
    std::cerr << "[ measured ] clean " << s << " s after SIGKILL during gen\n";
    for (int i = 0; i < 200 && slurp(log).find("kvio run guard: the run died") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_NE(slurp(log).find("kvio run guard: the run died"), std::string::npos) << slurp(log);
    EXPECT_TRUE(partial().empty()) << "partial outputs left: " << partial().front();
    EXPECT_NE(slurp(log).find("partial outputs removed: "), std::string::npos) << slurp(log);
}

TEST(RunSignals, SigkillDuringSimulateLeavesNoMountLoopDeviceOrImage) {
    TempDir d("/dev/shm");  // the images in tmpfs
    std::string out = d.file("out"), log = d.file("log");
    pid_t pid = spawn_run({"--workload", "simulate", "--duration", "60", "--out", out}, log);
    ASSERT_TRUE(wait_for_file(out + "/semantic.jsonl", 60, 1200)) << slurp(log);  // simulate stores on the mounted ext4
    ASSERT_EQ(mounts_under(out).size(), 1u) << slurp(log);
    ASSERT_EQ(loops_under(out).size(), 1u) << slurp(log);
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_status(pid), 128 + SIGKILL);
    const auto [s, left] = seconds_until_clean(out, 10);
    EXPECT_GE(s, 0) << "left 10 s after SIGKILL:\n" << left << slurp(log);
    std::cerr << "[ measured ] clean " << s << " s after SIGKILL during simulate\n";
}

TEST(RunErrors, EngineThatCannotDriveTheTargetIsRefusedBeforeTracing) {
    TempDir d;
    std::string out = d.file("out");
    // uring_cmd needs an NVMe generic char device: the embedded loop device is refused before it is even attached.
    auto r = run(kvio_bin() + " run --num-chunks 1 --engine uring_cmd --out " + out);
    EXPECT_EQ(r.status, 2) << r.err;  // a usage error
    EXPECT_NE(r.err.find("--engine uring_cmd needs --target /dev/ngXnY"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "--out was created for a refused run";
    LoopDevice dev(64ull << 20);
    r = run(kvio_bin() + " run --target " + dev.path + " --num-chunks 1 --engine uring_cmd --out " + out);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("engine uring_cmd needs an NVMe generic char device /dev/ngXnY as --target, but " + dev.path +
                         " is a block device"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(out));
    fs::create_directories(out);
    std::ofstream(out + "/x") << "x";
    auto r2 = run(kvio_bin() + " run --num-chunks 1 --out " + out);
    EXPECT_EQ(r2.status, 1);
    EXPECT_NE(r2.err.find("is not empty"), std::string::npos) << r2.err;
}

TEST(RunDisk, TooLittleRoomUnderOutIsRefusedUpFront) {
    Ext4Mount m(80ull << 20);  // ~64 MiB free; 4 chunks fill two sparse images of 131 MiB
    const std::string out = m.mnt + "/out";
    auto r = run(kvio_bin() + " run --num-chunks 4 --out " + out);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("its filesystem has "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" MiB free, but this run needs about "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(loops_under(m.mnt).empty()) << loops_under(m.mnt)[0];
}

TEST(RunDisk, FilesystemFullDuringGenDetachesAndSaysWhy) {
    Ext4Mount m(80ull << 20);
    const std::string out = m.mnt + "/out";
    TempDir d;
    pid_t pid = spawn_run({"--model", "llama3.2-1b", "--num-chunks", "2", "--out", out}, d.file("log"));
    // The up-front check passed; now the filesystem fills before gen writes: every write below --out fails.
    ASSERT_TRUE(wait_for_file(out + "/target.img", 60, 0)) << slurp(d.file("log"));
    auto df = run("df -B1 --output=avail " + m.mnt + " | tail -1");
    ASSERT_EQ(run("fallocate -l " + std::to_string(std::stoull(df.out) - 4096) + " " + m.mnt + "/filler").status, 0);
    EXPECT_EQ(wait_status(pid), 1) << slurp(d.file("log"));
    const std::string err = slurp(d.file("log"));
    EXPECT_NE(err.find("stage "), std::string::npos) << err;
    EXPECT_NE(err.find("No space left on device"), std::string::npos) << "the stage's reason must reach stderr\n"
                                                                      << err;
    EXPECT_TRUE(loops_under(m.mnt).empty()) << loops_under(m.mnt)[0];
    EXPECT_TRUE(images_under(out).empty()) << images_under(out)[0];
    fs::remove(m.mnt + "/filler");
}

TEST(RunTarget, DirectoryTargetDefaultsToFilesLayout) {
    Ext4Mount m(128ull << 20);
    const std::string dir = m.mnt + "/kv";
    fs::create_directory(dir);
    TempDir d;
    auto r = run(kvio_bin() + " run -q --target " + dir + " --model llama3.2-1b --num-chunks 2 --out " + d.file("out"));
    ASSERT_EQ(r.status, 0) << r.err;
    json doc = json::parse(slurp(d.file("out/run.json")));
    EXPECT_EQ(doc["options"]["layout"], "files");
    EXPECT_EQ(doc["validate"]["objects"], 4);
    // Slots on a directory are refused before anything is traced or created.
    r = run(kvio_bin() + " run --target " + dir + " --layout slots --model llama3.2-1b --num-chunks 1 --out " +
            d.file("slots"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--layout slots needs a block device or a regular file as --target, but " + dir +
                         " is a directory."),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(d.file("slots")));
}

TEST(RunTarget, UserTargetIsCheckedBeforeTracing) {
    TempDir d;
    LoopDevice dev(256ull << 20);
    // Data at byte 100 of the first MiB: refused before anything is created, traced or written.
    ASSERT_EQ(run("printf 'data' | dd of=" + dev.path + " bs=1 seek=100 conv=notrunc status=none").status, 0);
    std::string out = d.file("refused");
    auto r = run(kvio_bin() + " run --target " + dev.path + " --num-chunks 1 --out " + out);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("holds data at byte 100 of its first MiB"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("pass --force"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << "--out was created for a refused target";
    // --force writes it; the trace holds only the workload's commands, none of a check's readahead.
    out = d.file("forced");
    r = run(kvio_bin() + " run --target " + dev.path + " --force --num-chunks 1 --out " + out);
    ASSERT_EQ(r.status, 0) << r.err;
    json val = json::parse(slurp(out + "/validate.json"));
    EXPECT_EQ(val["exact_match"], val["objects"]);
    EXPECT_EQ(val["untagged_cmds"], 0);
    EXPECT_EQ(slurp(out + "/job.fio").rfind("; kvio run: filename=", 0), 0u) << "job.fio must say its device is gone";
}

// A device too small for the objects was found by gen, after the trace and gen had started (also with --force);
// now before any stage, and no run directory is made.
TEST(RunErrors, TooSmallDeviceIsRefusedBeforeAnyStage) {
    TempDir d;
    LoopDevice small(16ull << 20);
    for (const std::string force : {"", " --force"}) {
        auto r = run(kvio_bin() + " run --target " + small.path + force + " --num-chunks 2 --out " + d.file("out"));
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_EQ(r.err.find("stage "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("--target " + small.path + " has 16777216 bytes, but 2 objects of "), std::string::npos)
            << r.err;
        EXPECT_FALSE(std::filesystem::exists(d.file("out"))) << force;
    }
}

}  // namespace
}  // namespace kvio::test
