// kvio audit's counting and checks on figures built by hand (docs/audit.md, "Checks").
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "audit/audit.h"
#include "audit/preload.h"
#include "common/error.h"

using namespace kvio;
using namespace kvio::audit;

namespace {

FsFigures clean() {
    FsFigures f;
    f.dirs = {"/mnt/kv"};
    f.app_read_bytes = 1000 << 20, f.app_read_calls = 250;
    f.app_write_bytes = 500 << 20, f.app_write_calls = 250;
    f.fsync_calls = 10, f.fadvise_calls = 10;
    f.dev_read_bytes = 1010 << 20, f.dev_read_cmds = 800;
    f.dev_write_bytes = 505 << 20, f.dev_write_cmds = 400, f.dev_flushes = 20;
    return f;
}

Verdict verdict_of(const std::vector<Check>& cs, const std::string& name) {
    for (const auto& c : cs)
        if (c.name == name) return c.verdict;
    ADD_FAILURE() << "no check " << name;
    return Verdict::Na;
}

SyscallRec call(SysKind k, int64_t ret, uint32_t fs_dev, bool direct = false) {
    SyscallRec r;
    r.kind = k, r.ret = ret, r.fs_dev = fs_dev, r.direct = direct, r.has_file = true, r.ino = 12;
    return r;
}

}  // namespace

TEST(Audit, ACleanRunPassesEveryCheck) {
    auto cs = judge_fs(clean(), AuditOptions{});
    for (const auto& c : cs) EXPECT_EQ(c.verdict, Verdict::Pass) << c.line;
    EXPECT_NE(cs[0].line.find("100.0 % of the 0.977 GiB the application read came from the device"), std::string::npos)
        << cs[0].line;
}

// Reads served from memory: a no-op posix_fadvise left the pages cached, so the device read a tenth.
TEST(Audit, ReadsFromThePageCacheFailReadsAndFadvise) {
    FsFigures f = clean();
    f.dev_read_bytes = 100 << 20;
    auto cs = judge_fs(f, AuditOptions{});
    EXPECT_EQ(verdict_of(cs, "reads"), Verdict::Fail);
    EXPECT_NE(cs[0].line.find("10.0 %"), std::string::npos) << cs[0].line;
    EXPECT_EQ(verdict_of(cs, "fadvise"), Verdict::Fail);  // calls made, pages stayed
    f.fadvise_calls = 0;
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "fadvise"), Verdict::Fail);
    f.dev_read_bytes = 1000 << 20;  // no fadvise but a cold cache: the reads still reached the device
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "fadvise"), Verdict::Note);
}

// libeatmydata: fsync() returns without a system call, so no fsync is seen after buffered writes.
TEST(Audit, BufferedWritesWithoutFsyncOrFlushFail) {
    FsFigures f = clean();
    f.fsync_calls = 0;
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "fsync"), Verdict::Fail);
    f = clean();
    f.dev_flushes = 0;
    auto cs = judge_fs(f, AuditOptions{});
    EXPECT_EQ(verdict_of(cs, "fsync"), Verdict::Fail);
    EXPECT_NE(cs[2].line.find("10 calls, 0 device flushes"), std::string::npos) << cs[2].line;
    f.volatile_cache = false;  // a write-through device gets no flushes from fsync
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "fsync"), Verdict::Pass);
}

TEST(Audit, DirectIoHasNothingForFsyncOrFadviseToDo) {
    FsFigures f = clean();
    f.app_read_direct_bytes = f.app_read_bytes, f.app_write_direct_bytes = f.app_write_bytes;
    f.fsync_calls = f.fadvise_calls = f.dev_flushes = 0;
    auto cs = judge_fs(f, AuditOptions{});
    EXPECT_EQ(verdict_of(cs, "fsync"), Verdict::Na);
    EXPECT_EQ(verdict_of(cs, "fadvise"), Verdict::Na);
    EXPECT_EQ(verdict_of(cs, "reads"), Verdict::Pass);
    FsFigures idle;
    for (const auto& c : judge_fs(idle, AuditOptions{})) EXPECT_EQ(c.verdict, Verdict::Na) << c.line;
}

TEST(Audit, CountsOnlyTheCacheFilesystemsCallsAndTheirBytes) {
    const uint32_t kv = (7u << 20) | 3, root = (254u << 20) | 1;
    std::vector<SyscallRec> calls = {
        call(SysKind::Read, 4096, kv),      call(SysKind::Read, 8192, kv, true), call(SysKind::Read, -5, kv),
        call(SysKind::Read, 1 << 20, root), call(SysKind::Write, 2 << 20, kv),   call(SysKind::Fsync, 0, kv),
        call(SysKind::Fdatasync, 0, kv),    call(SysKind::Fadvise, 0, kv),       call(SysKind::Fsync, 0, root)};
    calls.push_back(calls[0]);
    calls.back().has_file = false;  // an fd the tracer could not name: not counted
    FsFigures f;
    count_app_io(calls, kv, f);
    EXPECT_EQ(f.app_read_bytes, 4096u + 8192u);
    EXPECT_EQ(f.app_read_calls, 3u);  // the failed read is a call that moved nothing
    EXPECT_EQ(f.app_read_direct_bytes, 8192u);
    EXPECT_EQ(f.app_write_bytes, 2u << 20);
    EXPECT_EQ(f.fsync_calls, 2u);
    EXPECT_EQ(f.fadvise_calls, 1u);
}

// A write the stop cut (its file never synced, then deleted) need not reach the device; a synced file's must.
TEST(Audit, WritesNoFsyncCoveredAreNotRequiredOnTheDevice) {
    const uint32_t kv = (7u << 20) | 3;
    auto on = [&](SysKind k, int64_t ret, uint64_t ino, bool direct = false) {
        SyscallRec r = call(k, ret, kv, direct);
        r.ino = ino;
        return r;
    };
    const std::vector<SyscallRec> calls = {on(SysKind::Write, 100 << 20, 1),    on(SysKind::Fsync, 0, 1),      // synced
                                           on(SysKind::Write, 50 << 20, 2),     on(SysKind::Fdatasync, 0, 2),  // synced
                                           on(SysKind::Write, 10 << 20, 2),        // after file 2's sync: not covered
                                           on(SysKind::Write, 40 << 20, 3),        // cut at the stop: never synced
                                           on(SysKind::Write, 8 << 20, 4, true)};  // direct: needs no fsync
    FsFigures f;
    count_app_io(calls, kv, f);
    EXPECT_EQ(f.app_write_bytes, 208u << 20);
    EXPECT_EQ(f.app_write_unsynced_bytes, 50u << 20);
    f.fsync_calls = 2, f.dev_flushes = 4, f.dev_write_bytes = 150u << 20;  // 150 of the 158 required
    const auto cs = judge_fs(f, AuditOptions{});
    EXPECT_EQ(verdict_of(cs, "writes"), Verdict::Pass);
    // Each percentage names its base: 150 MiB is 72.1 % of the 208 MiB written and 94.9 % of the 158 MiB required.
    const std::string line =
        std::find_if(cs.begin(), cs.end(), [](const Check& c) { return c.name == "writes"; })->line;
    EXPECT_NE(line.find("0.146 GiB reached the device in 0 commands (72.1 % of the bytes written; 94.9 % of the "
                        "0.154 GiB required: 0.049 GiB no fsync covered"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("90.0 % of the required bytes needed)"), std::string::npos) << line;
    f.dev_write_bytes = 130u << 20;  // 82 % of the required
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "writes"), Verdict::Fail);
    EXPECT_EQ(f.app_files_written, 3u);  // the direct file needs no fsync
    EXPECT_EQ(f.app_files_unsynced, 2u);
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "fsync"), Verdict::Fail);  // 2 of 3 files left unsynced
    FsFigures g = f;
    g.app_files_unsynced = 1;
    EXPECT_EQ(verdict_of(judge_fs(g, AuditOptions{}), "fsync"), Verdict::Pass);  // one cut at the stop
    // Nothing synced at all: every byte is required again (and the fsync check fails).
    f = FsFigures{};
    count_app_io({on(SysKind::Write, 100 << 20, 5)}, kv, f);
    f.dev_write_bytes = 20u << 20;
    EXPECT_EQ(verdict_of(judge_fs(f, AuditOptions{}), "writes"), Verdict::Fail);
}

TEST(Audit, CountsThePartitionsCommandsAndEveryKindOfFlush) {
    EventTrace t;
    auto cmd = [&](Op op, uint64_t sector, uint64_t bytes, bool preflush = false, bool fua = false) {
        Cmd c;
        c.op = op, c.sector = sector, c.bytes = bytes, c.preflush = preflush, c.fua = fua;
        t.cmds.push_back(c);
    };
    cmd(Op::Read, 2048, 4096);
    cmd(Op::Read, 10, 4096);  // before the partition: another filesystem's
    cmd(Op::Write, 4096, 8192, true);
    cmd(Op::Write, 4100, 4096, false, true);
    cmd(Op::Write, 5000, 4096);
    cmd(Op::Flush, 0, 0);
    FsFigures f;
    count_device_io(t, 2048, 1 << 20, f);
    EXPECT_EQ(f.dev_read_bytes, 4096u);
    EXPECT_EQ(f.dev_read_cmds, 1u);
    EXPECT_EQ(f.dev_write_bytes, 16384u);
    EXPECT_EQ(f.dev_flushes, 3u);
}

TEST(Audit, PreloadedLibrariesThatDefineIoFunctionsFail) {
    EXPECT_EQ(judge_preloads({}).verdict, Verdict::Na);
    Check c = judge_preloads({{"/usr/lib/libeatmydata.so", "LD_PRELOAD of pid 7 (python3)", {"fdatasync", "fsync"}}});
    EXPECT_EQ(c.verdict, Verdict::Fail);
    EXPECT_NE(c.line.find("/usr/lib/libeatmydata.so (LD_PRELOAD of pid 7 (python3)) interposes fdatasync, fsync"),
              std::string::npos)
        << c.line;
    EXPECT_EQ(judge_preloads({{"/opt/libfoo.so", "/etc/ld.so.preload", {}}}).verdict, Verdict::Note);
}

// The ELF reader finds what libc defines and refuses a file that is not ELF.
TEST(Audit, ReadsTheIoFunctionsAnObjectDefines) {
    std::string libc;
    for (const char* p : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6"})
        if (std::ifstream(p).good()) libc = p;
    ASSERT_FALSE(libc.empty()) << "no libc.so.6 at the usual places";
    auto fns = interposed_io_functions(libc);
    for (const char* f : {"fsync", "fdatasync", "posix_fadvise", "pread64", "write"})
        EXPECT_NE(std::find(fns.begin(), fns.end(), f), fns.end()) << f;
    EXPECT_THROW(interposed_io_functions("/proc/self/status"), Error);
}

// A shim that blanks its own LD_PRELOAD in its constructor is still named: it is mapped into the process, and the
// executable (sleep) does not need it.
TEST(Audit, AShimThatBlanksItsLdPreloadIsFoundInTheMaps) {
    char tmpl[] = "/tmp/kvio-audit-unit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl, so = dir + "/libhidden.so";
    {
        std::ofstream c(dir + "/hidden.c");
        c << "#include <stdlib.h>\n#include <string.h>\n"
             "int posix_fadvise(int fd, long off, long len, int advice) { (void)fd; (void)off; (void)len; "
             "(void)advice; return 0; }\n"
             "static void __attribute__((constructor)) hide(void) { char *p = getenv(\"LD_PRELOAD\"); "
             "if (p) memset(p, 0, strlen(p)); }\n";
    }
    ASSERT_EQ(std::system(("cc -shared -fPIC -o " + so + " " + dir + "/hidden.c").c_str()), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setenv("LD_PRELOAD", so.c_str(), 1);
        ::execlp("sleep", "sleep", "5", nullptr);
        _exit(127);
    }
    ASSERT_GT(pid, 0);
    PreloadWatch w;
    for (int i = 0; i < 50 && w.preloads().empty(); ++i) {  // until sleep has exec'd and mapped the shim
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        w.sample(pid);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    const auto pre = w.preloads();  // reads the shim's symbols again: before it is removed
    std::filesystem::remove_all(dir);
    ASSERT_EQ(pre.size(), 1u);
    EXPECT_EQ(pre[0].path, so);
    EXPECT_NE(pre[0].source.find("mapped into pid " + std::to_string(pid) + " (sleep), not needed by"),
              std::string::npos)
        << pre[0].source;
    EXPECT_EQ(pre[0].interposes, std::vector<std::string>{"posix_fadvise"});
    EXPECT_TRUE(w.maps_read().count(pid));
    EXPECT_EQ(judge_preloads(pre).verdict, Verdict::Fail);
}

// An inspection counts for the program a process ran when it began: after that program's exec, before the next one.
// A program no sample inspected is named, and the preload check never calls it clean.
TEST(Audit, AProgramNoSampleInspectedIsNamed) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint64_t before = uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execlp("sleep", "sleep", "5", nullptr);
        _exit(127);
    }
    ASSERT_GT(pid, 0);
    PreloadWatch w;
    const std::vector<ExecImage> one = {{pid, before, "sleep"}};
    for (int i = 0; i < 50 && !w.not_inspected(one).empty(); ++i) {  // until sleep's loader has mapped libc
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        w.sample(pid);
    }
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint64_t after = uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    EXPECT_TRUE(w.not_inspected(one).empty());
    // The same process exec'd again after the last sample: that program was never inspected, the first one was.
    const auto unseen = w.not_inspected({{pid, before, "sleep"}, {pid, after, "true"}});
    ASSERT_EQ(unseen.size(), 1u);
    EXPECT_EQ(unseen[0].comm, "true");
    // An exec after the inspections hides the first program from them too when it came before any of them.
    EXPECT_EQ(w.not_inspected({{pid, after, "sleep"}}).size(), 1u);

    const Check none = judge_preloads({}, {"pid 7 (true)"});
    EXPECT_EQ(none.verdict, Verdict::Note);
    EXPECT_NE(none.line.find("none seen in the programs inspected, but 1 program(s) the command ran ended before a "
                             "sample could read their environment and maps, what they preloaded is not known: pid 7 "
                             "(true)"),
              std::string::npos)
        << none.line;
    const Check found =
        judge_preloads({{"/x/libeatmydata.so", "LD_PRELOAD of pid 6 (sh)", {"fsync"}}}, {"pid 7 (true)"});
    EXPECT_EQ(found.verdict, Verdict::Fail);
    EXPECT_NE(found.line.find("interposes fsync; 1 program(s)"), std::string::npos) << found.line;
    EXPECT_NE(judge_preloads({}, {}, false).line.find("sampled every 100 ms"), std::string::npos);
    EXPECT_NE(judge_preloads({}).line.find("no preloaded library in any program the command ran"), std::string::npos);
}
