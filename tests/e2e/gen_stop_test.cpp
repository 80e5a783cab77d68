// Ctrl-C of `kvio trace -- kvio gen` in the middle of the stream: gen finishes the ops in flight, starts no new
// one, and --semantic and --record hold exactly the completed ops, so the partial trace validates exactly.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Starts `cmd` under /bin/sh as the leader of a new process group (what a terminal's Ctrl-C reaches), output to `log`.
pid_t spawn_group(const std::string& cmd, const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", (cmd + " >" + log + " 2>&1").c_str(), nullptr);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/// `kvio trace -d LOOP --events EV -- kvio gen ... --semantic SEM --record REC` in a new process group, signalled with
/// `sig` 0.6 s after gen started; returns when the whole group is gone, with the output in `out`.
/// --iters 4 and --verify full (every loaded byte compared): the 96 ops last seconds even on a fast machine, so
/// the signal lands in the middle of the stream.
/// --force: the fresh device is empty, and the first-MiB check's buffered read (readahead) would be traced too.
void stop_traced_gen_midway(const LoopDevice& loop, const std::string& ev, const std::string& sem,
                            const std::string& rec, const std::string& log, int sig, std::string& out) {
    pid_t pg = spawn_group(kvio_bin() + " trace -q -d " + loop.name + " --events " + ev + " -- " + kvio_bin() +
                               " gen -q --force --model llama3.1-8b --num-chunks 12 --iters 4 --verify full --target " +
                               loop.path + " --semantic " + sem + " --record " + rec,
                           log);
    // 0.6 s after gen started (its semantic file appears when it does, as SEM.tmp-PID until gen closes it).
    auto started = [&] {
        std::error_code ec;
        for (fs::directory_iterator it(fs::path(sem).parent_path(), ec), end; !ec && it != end; it.increment(ec))
            if (it->path().filename().string().rfind(fs::path(sem).filename().string() + ".tmp-", 0) == 0) return true;
        return fs::exists(sem);
    };
    for (int i = 0; i < 600 && !started(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(started()) << slurp(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    ASSERT_EQ(kill(-pg, sig), 0);
    int st = 0;
    ASSERT_EQ(waitpid(pg, &st, 0), pg);
    // The trace may end before gen has finished its ops in flight: wait for the whole group.
    for (int i = 0; i < 600 && kill(-pg, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out = slurp(log);
}

}  // namespace

TEST(GenStop, SigintKeepsEveryCompletedOpAndTheRecord) {
    TempDir d;
    LoopDevice loop(420ull << 20);  // 12 llama3.1-8b chunks: 12 × (4 KiB + 32 MiB) after the 1 MiB metadata region
    const std::string sem = d.file("sem.jsonl"), rec = d.file("rec.json"), ev = d.file("ev.jsonl"), log = d.file("log");
    std::string out;
    ASSERT_NO_FATAL_FAILURE(stop_traced_gen_midway(loop, ev, sem, rec, log, SIGINT, out));
    // SIGINT reaches gen with the group, SIGTERM from the tracer stopping its command: the first one is named.
    EXPECT_NE(out.find("kvio gen: stopped by signal "), std::string::npos) << out;

    auto lines = read_jsonl(sem);
    ASSERT_GE(lines.size(), 2u) << "no completed op in the semantic file\n" << out;
    const size_t done = lines.size() - 1;
    EXPECT_LT(done, 96u) << "the stream ended before the signal: nothing was stopped\n" << out;
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_FALSE(lines[i].contains("error")) << lines[i].dump();

    ASSERT_TRUE(fs::exists(rec)) << out;
    json r = json::parse(slurp(rec));
    size_t rec_ops = 0;
    for (const auto& o : r["objects"]) rec_ops += o["ops"].size();
    EXPECT_EQ(rec_ops, done) << "the record must hold the completed ops";

    auto v = run(kvio_bin() + " validate --commands " + ev + " --semantic " + sem + " --record " + rec + " --json " +
                 d.file("v.json"));
    ASSERT_EQ(v.status, 0) << v.err;
    json vj = json::parse(slurp(d.file("v.json")));
    EXPECT_EQ(vj["objects"].get<size_t>(), done) << v.out;
    EXPECT_EQ(vj["exact_match"], vj["objects"]) << v.out;
    EXPECT_EQ(vj["untagged_cmds"], 0) << v.out;
}

// The same stop with SIGTERM and compressed outputs (`--events X.zst`, `--semantic Y.zst`): both files are finished
// zstd frames (`zstd -t`), hold every completed op and command, and validate as read directly.
TEST(GenStop, SigtermLeavesFinishedZstdFramesWithEveryCompletedOp) {
    TempDir d;
    LoopDevice loop(420ull << 20);
    const std::string sem = d.file("sem.jsonl.zst"), rec = d.file("rec.json"), ev = d.file("ev.jsonl.zst"),
                      log = d.file("log");
    std::string out;
    ASSERT_NO_FATAL_FAILURE(stop_traced_gen_midway(loop, ev, sem, rec, log, SIGTERM, out));
    EXPECT_NE(out.find("kvio gen: stopped by signal 15"), std::string::npos) << out;
    for (const std::string& f : {sem, ev}) {
        EXPECT_EQ(slurp(f).substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4)) << f;
        CmdResult t = run("zstd -q -t " + f);
        EXPECT_EQ(t.status, 0) << f << ": not a finished zstd frame\n" << t.err << out;
        ASSERT_EQ(run("zstd -q -dc " + f + " > " + f + ".plain").status, 0);
    }
    auto lines = read_jsonl(sem + ".plain");
    ASSERT_GE(lines.size(), 2u) << out;
    const size_t done = lines.size() - 1;
    EXPECT_LT(done, 96u) << "the stream ended before the signal: nothing was stopped\n" << out;
    json r = json::parse(slurp(rec));
    size_t rec_ops = 0;
    for (const auto& o : r["objects"]) rec_ops += o["ops"].size();
    EXPECT_EQ(rec_ops, done) << "the semantic file must hold every completed op";
    auto evl = read_jsonl(ev + ".plain");
    ASSERT_FALSE(evl.empty());
    EXPECT_EQ(evl.back().value("type", ""), "summary") << "the trace's summary is the last record of the frame";

    auto v = run(kvio_bin() + " validate --commands " + ev + " --semantic " + sem + " --record " + rec + " --json " +
                 d.file("v.json"));
    ASSERT_EQ(v.status, 0) << v.err;
    json vj = json::parse(slurp(d.file("v.json")));
    EXPECT_EQ(vj["objects"].get<size_t>(), done) << v.out;
    EXPECT_EQ(vj["exact_match"], vj["objects"]) << v.out;
}
