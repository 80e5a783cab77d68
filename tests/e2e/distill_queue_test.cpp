// The queue settings `kvio distill --verify` copies onto a file-level job's target (docs/distill.md, "Queue settings
// the file level copies"), on loop devices whose settings differ: the trace's are in force on the target while the
// replay runs (sampled from sysfs by the test, beside kvio), the target's own are back afterwards, also after a
// SIGTERM in the middle of the replay, and a setting the target cannot take is reported while the verify goes on.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "tests/e2e/helpers.h"

namespace kvio::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using Settings = std::map<std::string, std::string>;
constexpr uint64_t kMiB = 1ull << 20;

// The settings copied, in the order kvio writes them (the scheduler first: switching it resets nr_requests).
const std::vector<std::string> kKeys = {"scheduler", "nr_requests", "max_sectors_kb", "read_ahead_kb", "wbt_lat_usec"};
// The traced disk's settings and the target's own: every one differs.
const Settings kTraced = {{"scheduler", "mq-deadline"},
                          {"nr_requests", "64"},
                          {"max_sectors_kb", "256"},
                          {"read_ahead_kb", "512"},
                          {"wbt_lat_usec", "4000"}};
const Settings kTarget = {{"scheduler", "none"},
                          {"nr_requests", "128"},
                          {"max_sectors_kb", "64"},
                          {"read_ahead_kb", "128"},
                          {"wbt_lat_usec", "2000"}};

// /sys/block/DISK/queue/KEY as kvio records it (the scheduler without its brackets).
std::string queue_setting(const std::string& disk, const std::string& key) {
    std::string v = slurp("/sys/block/" + disk + "/queue/" + key);
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    if (auto a = v.find('['); key == "scheduler" && a != std::string::npos) v = v.substr(a + 1, v.find(']') - a - 1);
    return v;
}

Settings queue_settings(const std::string& disk) {
    Settings s;
    for (const auto& k : kKeys) s[k] = queue_setting(disk, k);
    return s;
}

// Sets `s` on `loop` in kvio's order (LoopDevice restores each at destruction).
void set_all(LoopDevice& loop, const Settings& s) {
    for (const auto& k : kKeys) loop.set_queue_attr(k, s.at(k));
    ASSERT_EQ(queue_settings(loop.name), s) << loop.name;
}

std::string dump(const Settings& s) { return json(s).dump(); }

// One thread stores 40 MiB buffered in 1 MiB writes with an fsync every 4, then drops the file's page cache and
// loads it back in 1 MiB reads, 50 ms apart: about 4 s, so the replay (paced on the trace's clock) lasts as long.
constexpr const char* kStoreLoad = R"PY(
import os, sys, time
p = sys.argv[1]; buf = os.urandom(1 << 20)
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(40):
    os.write(fd, buf)
    if i % 4 == 3: os.fsync(fd)
    time.sleep(0.05)
os.close(fd)
fd = os.open(p, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 1 << 20): time.sleep(0.05)
os.close(fd)
)PY";

// kStoreLoad on ext4 over a loop device set to kTraced, traced with --syscalls: a file-level trace. The device stays
// attached to the end (a target taking its number would be refused as the traced device).
struct TracedDisk {
    TempDir t;
    Ext4Mount m{512 * kMiB};
    std::string events = t.file("ev.jsonl");
    TracedDisk() {
        set_all(m.loop, kTraced);
        { std::ofstream(t.file("w.py")) << kStoreLoad; }
        auto r = run(kvio_bin() + " trace -q --syscalls -d " + m.loop.name + " --events " + events + " -- python3 " +
                     t.file("w.py") + " " + m.mnt + "/kv.bin");
        if (r.status != 0) throw std::runtime_error("trace failed: " + r.err);
    }
};

// The summary record's recorded queue settings of device `majmin` (the trace's last line).
json recorded_queue(const std::string& events, const std::string& majmin) {
    const auto lines = read_jsonl(events);
    if (lines.empty() || !lines.back().contains("queues")) return json();
    return lines.back()["queues"].value(majmin, json());
}

// `events` with the recorded queue settings of `majmin` changed to `change` (a trace of another disk's settings).
void rewrite_queue(const std::string& events, const std::string& majmin, const Settings& change,
                   const std::string& out) {
    auto lines = read_jsonl(events);
    std::ofstream o(out);
    for (size_t i = 0; i + 1 < lines.size(); ++i) o << lines[i].dump() << '\n';
    for (const auto& [k, v] : change) lines.back()["queues"][majmin][k] = v;
    o << lines.back().dump() << '\n';
}

// The pid of a replay fio of a `kvio distill --verify` whose private directory is under `tmpdir` (its command line
// names `tmpdir`/kvio-distill-verify-*/ and its JSON output, replay.fio.json or job.ini.replay.jsonl.fio.json; the
// layout's fio does not), 0 when none runs.
pid_t replay_fio(const std::string& tmpdir) {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string pid = it->path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        if (slurp(it->path() / "comm") != "fio\n") continue;
        std::string cmd = slurp(it->path() / "cmdline");
        for (auto& c : cmd)
            if (c == '\0') c = ' ';
        if (cmd.find(tmpdir + "/kvio-distill-verify-") != std::string::npos &&
            cmd.find(".fio.json") != std::string::npos)
            return pid_t(std::stol(pid));
    }
    return 0;
}

// A `kvio distill --verify` run in the background with TMPDIR=`tmpdir`, and the target's queue settings sampled
// every 20 ms while its replay fio runs.
struct Sampled {
    int status = -1;  ///< exit status (128 + N for a signal)
    std::string out, err;
    std::vector<Settings> during;  ///< one per sample taken while the replay's fio ran
};

// Runs `args` (kvio distill ...) and samples `disk`; with `sigterm_after_samples`, sends kvio SIGTERM after that many
// samples of the replay.
Sampled run_sampling(const std::string& args, const std::string& tmpdir, const std::string& disk,
                     size_t sigterm_after_samples = 0) {
    Sampled s;
    const std::string out = tmpdir + "/distill.out", err = tmpdir + "/distill.err";
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("TMPDIR", tmpdir.c_str(), 1);
        execl("/bin/sh", "sh", "-c", ("exec " + kvio_bin() + " " + args + " >" + out + " 2>" + err).c_str(), nullptr);
        _exit(127);
    }
    int st = 0;
    bool signalled = false;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (replay_fio(tmpdir)) {
            s.during.push_back(queue_settings(disk));
            if (sigterm_after_samples && !signalled && s.during.size() >= sigterm_after_samples) {
                kill(pid, SIGTERM);
                signalled = true;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    s.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    s.out = slurp(out);
    s.err = slurp(err);
    return s;
}

// Every sample equals `want`; at least `min_samples` were taken (the replay ran and was seen).
void expect_in_force(const Sampled& s, const Settings& want, size_t min_samples) {
    ASSERT_GE(s.during.size(), min_samples) << "the replay's fio was seen in too few samples\n" << s.err;
    size_t off = 0;
    for (const auto& x : s.during)
        if (x != want) {
            if (!off) ADD_FAILURE() << "during the replay the target had " << dump(x) << ", not " << dump(want);
            ++off;
        }
    EXPECT_EQ(off, 0u) << "of " << s.during.size() << " samples";
    std::printf("during the replay (%zu samples): %s\n", s.during.size(), dump(s.during.front()).c_str());
}

bool mounted(const std::string& dev) { return slurp("/proc/mounts").find(dev + " ") != std::string::npos; }

TEST(DistillQueue, TracedSettingsInForceDuringTheReplayAndTheTargetsOwnBack) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    TracedDisk traced;
    ASSERT_EQ(recorded_queue(traced.events, traced.m.loop.majmin), json(kTraced)) << "the trace records the disk's";
    LoopDevice target(512 * kMiB);
    set_all(target, kTarget);
    const std::string tmp = traced.t.file("tmp");
    fs::create_directories(tmp);
    const Sampled s = run_sampling("distill --events " + traced.events + " --level file --verify --target " +
                                       target.path + " --json " + traced.t.file("d.json"),
                                   tmp, target.name);
    ASSERT_EQ(s.status, 0) << s.err << s.out;
    // (a) what the replay ran with: sampled beside it, and as kvio read it back.
    expect_in_force(s, kTraced, 5);
    const json q = json::parse(slurp(traced.t.file("d.json")))["verify"]["queue"];
    ASSERT_EQ(q["settings"].size(), kKeys.size()) << q.dump(1);
    for (size_t i = 0; i < kKeys.size(); ++i) {
        const json& x = q["settings"][i];
        EXPECT_EQ(x["name"], kKeys[i]);
        EXPECT_EQ(x["traced"], kTraced.at(kKeys[i])) << x.dump();
        EXPECT_EQ(x["target_before"], kTarget.at(kKeys[i])) << x.dump();
        EXPECT_EQ(x["applied"], kTraced.at(kKeys[i])) << x.dump();
        EXPECT_EQ(x["after_replay"], kTraced.at(kKeys[i])) << x.dump();
        EXPECT_TRUE(x["error"].is_null()) << x.dump();
    }
    EXPECT_TRUE(q["not_reproduced"].empty()) << q.dump();
    EXPECT_NE(s.out.find("queue settings: all 5 reproduced on the target"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("  max_sectors_kb  256 -> 64 -> 256\n"), std::string::npos) << s.out;
    // (b) the target's own back, and nothing left mounted.
    EXPECT_EQ(queue_settings(target.name), kTarget);
    EXPECT_FALSE(mounted(target.path));
}

TEST(DistillQueue, SigtermDuringTheReplayRestoresTheTargetsOwn) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    TracedDisk traced;
    LoopDevice target(512 * kMiB);
    set_all(target, kTarget);
    const std::string tmp = traced.t.file("tmp");
    fs::create_directories(tmp);
    const Sampled s = run_sampling("distill --events " + traced.events + " --level file --verify --target " +
                                       target.path + " --json " + traced.t.file("d.json"),
                                   tmp, target.name, 5);
    EXPECT_EQ(s.status, 128 + SIGTERM) << s.err << s.out;
    EXPECT_NE(s.err.find("kvio: distill --verify: stopped by signal 15 during the traced fio run"), std::string::npos)
        << s.err;
    expect_in_force(s, kTraced, 5);
    EXPECT_EQ(queue_settings(target.name), kTarget) << "the target's own settings after the stop";
    EXPECT_FALSE(mounted(target.path));
    EXPECT_EQ(replay_fio(tmp), 0) << "the replay's fio outlived kvio";
    const json d = json::parse(slurp(traced.t.file("d.json")));
    EXPECT_EQ(d["verify"]["stopped_by_signal"], SIGTERM) << d["verify"].dump();
}

// A trace of a disk with a max_sectors_kb above the target's max_hw_sectors_kb and a scheduler the target does not
// offer (as a trace from another machine has them): both reported with what they mean, the other three copied, the
// verify scored.
TEST(DistillQueue, SettingsTheTargetCannotTakeAreReportedAndTheVerifyGoesOn) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices, mount)";
    TracedDisk traced;
    LoopDevice target(512 * kMiB);
    set_all(target, kTarget);
    std::string hw = slurp("/sys/block/" + target.name + "/queue/max_hw_sectors_kb");
    hw.resize(hw.find_last_not_of(" \n") + 1);
    const std::string above = std::to_string(std::stoull(hw) * 4);
    const std::string events = traced.t.file("other.jsonl");
    rewrite_queue(traced.events, traced.m.loop.majmin, {{"max_sectors_kb", above}, {"scheduler", "kvio-no-such"}},
                  events);
    const std::string tmp = traced.t.file("tmp");
    fs::create_directories(tmp);
    const Sampled s = run_sampling("distill --events " + events + " --level file --verify --target " + target.path +
                                       " --json " + traced.t.file("d.json"),
                                   tmp, target.name);
    ASSERT_EQ(s.status, 0) << s.err << s.out;
    Settings want = kTraced;
    want["max_sectors_kb"] = hw;                  // as near as the target takes it
    want["scheduler"] = kTarget.at("scheduler");  // left
    expect_in_force(s, want, 5);
    const json d = json::parse(slurp(traced.t.file("d.json")));
    const json& q = d["verify"]["queue"];
    EXPECT_EQ(q["not_reproduced"], json({"scheduler", "max_sectors_kb"})) << q.dump(1);
    for (const auto& x : q["settings"]) {
        const std::string k = x["name"];
        EXPECT_EQ(x["after_replay"], want.at(k)) << x.dump();
        if (k == "max_sectors_kb") {
            EXPECT_EQ(x["traced"], above);
            EXPECT_EQ(x["applied"], hw);
            EXPECT_NE(x["error"].get<std::string>().find("set to " + hw + ", its max_hw_sectors_kb"), std::string::npos)
                << x.dump();
        } else if (k == "scheduler") {
            EXPECT_EQ(x["applied"], "none");
            EXPECT_NE(x["error"].get<std::string>().find("writing kvio-no-such failed (Invalid argument; the target "
                                                         "offers none, mq-deadline"),
                      std::string::npos)
                << x.dump();
        } else {
            EXPECT_TRUE(x["error"].is_null()) << x.dump();
        }
    }
    EXPECT_TRUE(d["verify"].contains("size_tv")) << "the verify was scored";
    EXPECT_NE(s.out.find("    not reproduced: set to " + hw +
                         ", its max_hw_sectors_kb: the target splits commands "
                         "above its value: the size TV counts those splits, not the job\n"),
              std::string::npos)
        << s.out;
    EXPECT_NE(s.out.find("    not reproduced: writing kvio-no-such failed"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("queue settings: 2 of 5 not reproduced on the target"), std::string::npos) << s.out;
    EXPECT_EQ(queue_settings(target.name), kTarget);
    EXPECT_FALSE(mounted(target.path));
}

// The device level copies them too: direct 256 KiB reads at QD 4 for 3 s traced on a loop device set to kTraced,
// replayed on one set to kTarget (whose max_sectors_kb 64 would split every command).
TEST(DistillQueue, DeviceLevelReplayRunsWithTheTracedSettings) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (BPF, loop devices)";
    TempDir t;
    LoopDevice src(256 * kMiB), target(256 * kMiB);
    ASSERT_EQ(src.fill(64), 0);
    set_all(src, kTraced);
    set_all(target, kTarget);
    auto r = run(kvio_bin() + " trace -q -d " + src.name + " --events " + t.file("ev.jsonl") + " -- fio --name=r " +
                 "--filename=" + src.path + " --direct=1 --ioengine=libaio --iodepth=4 --rw=randread --bs=256k " +
                 "--size=64m --time_based --runtime=3 --rate_iops=200 --output=/dev/null");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string tmp = t.file("tmp");
    fs::create_directories(tmp);
    const Sampled s = run_sampling("distill --events " + t.file("ev.jsonl") + " --filename " + target.path +
                                       " --verify --force --json " + t.file("d.json"),
                                   tmp, target.name);
    ASSERT_EQ(s.status, 0) << s.err << s.out;
    expect_in_force(s, kTraced, 5);
    const json v = json::parse(slurp(t.file("d.json")))["verify"];
    EXPECT_TRUE(v["queue"]["not_reproduced"].empty()) << v["queue"].dump(1);
    ASSERT_EQ(v["queue"]["settings"].size(), kKeys.size()) << v["queue"].dump(1);
    for (const auto& x : v["queue"]["settings"]) EXPECT_EQ(x["after_replay"], kTraced.at(x["name"])) << x.dump();
    std::printf("device level: %s\n", v["summary"].get<std::string>().c_str());
    // With the traced max_sectors_kb the target kept the 256 KiB commands whole (its own 64 splits each in 4).
    EXPECT_LE(v["size_tv"]["read"].get<double>(), 0.05) << v["size_tv"].dump();
    EXPECT_NE(s.out.find("queue settings: all 5 reproduced on the target"), std::string::npos) << s.out;
    EXPECT_EQ(queue_settings(target.name), kTarget);
}

}  // namespace
}  // namespace kvio::test
