// The file level's derivation (distiller/file_job) on syscall records built in memory: the serving workload's
// buffered pattern (a 128-byte header, 2 MiB writev, fsync; reads after fadvise DONTNEED), what the job and its
// iologs say, and what is left out.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "distiller/file_job.h"
#include "distiller/file_level.h"
#include "distiller/file_verify.h"

namespace kvio::distiller {
namespace {

constexpr uint32_t kFs = (7u << 20) | 3;  // 7:3
constexpr uint64_t kMiB = 1 << 20;

SyscallRec rec(SysKind k, uint32_t tid, uint64_t ino, uint64_t t_us, int64_t ret, uint64_t off = 0, uint64_t count = 0,
               uint64_t size = 0) {
    SyscallRec r;
    r.kind = k;
    r.tid = tid;
    r.pid = 100;
    r.comm = "sim";
    r.ino = ino;
    r.gen = 9;
    r.fs_dev = kFs;
    r.has_file = true;
    r.ts_enter = 1'000'000'000 + t_us * 1000;
    r.ts_exit = r.ts_enter + 100'000;  // 100 µs inside each call
    r.ret = ret;
    r.offset = off;
    r.count = count;
    r.file_size = size;
    return r;
}

// Thread 1 stores file 11 (header, two 2 MiB writev, fsync); thread 2 loads file 12, written before the trace (4 MiB
// reads after fadvise, the last one at end of file), while thread 1 stores.
std::vector<SyscallRec> serving_records() {
    const uint64_t sz = 128 + 4 * kMiB;
    std::vector<SyscallRec> v = {
        rec(SysKind::Write, 1, 11, 0, 128, 0, 128, 128),
        rec(SysKind::Fadvise, 2, 12, 100, 0, 0, 0, 3 * kMiB),
        rec(SysKind::Read, 2, 12, 200, 3 * kMiB, 0, 4 * kMiB, 3 * kMiB),  // 200-700 µs: see below
        rec(SysKind::Write, 1, 11, 300, 2 * kMiB, 128, 1024, 128 + 2 * kMiB),
        rec(SysKind::Read, 2, 12, 1000, 0, 3 * kMiB, 4 * kMiB, 3 * kMiB),  // end of file: nothing moved
        rec(SysKind::Write, 1, 11, 2000, 2 * kMiB, 128 + 2 * kMiB, 1024, sz),
        rec(SysKind::Fsync, 1, 11, 3000, 0),
    };
    v[2].ts_exit += 400'000;
    SyscallRec other = rec(SysKind::Read, 3, 50, 2500, 4096);
    other.fs_dev = (8u << 20) | 1;  // another filesystem
    v.push_back(other);
    SyscallRec bare = rec(SysKind::Write, 3, 0, 2600, 4096);
    bare.has_file = false;  // a record without identity
    v.push_back(bare);
    return v;
}

TEST(FileJob, DerivesTheServingPattern) {
    const auto recs = serving_records();
    EXPECT_EQ(busiest_fs_dev(recs), kFs);
    const FilePattern p = derive_file_pattern(recs, kFs);
    ASSERT_EQ(p.files.size(), 2u);
    EXPECT_EQ(p.files[0].name, "i11g9");
    EXPECT_EQ(p.files[0].size, 128 + 4 * kMiB);
    EXPECT_EQ(p.files[0].written_bytes, 128 + 4 * kMiB);
    EXPECT_EQ(p.files[1].size, 3 * kMiB);
    EXPECT_EQ(p.files[1].read_bytes, 3 * kMiB);
    ASSERT_EQ(p.streams.size(), 2u);
    EXPECT_EQ(p.streams[0].tid, 1u);
    EXPECT_EQ(p.streams[0].ops.size(), 4u);  // header, 2 writev, fsync
    EXPECT_EQ(p.streams[1].ops.size(), 2u);  // fadvise, one read (the EOF read moved nothing)
    EXPECT_EQ(p.streams[1].reads_after_dontneed, 1u);
    EXPECT_EQ(p.streams[1].reads_cold, 0u);
    EXPECT_FALSE(p.streams[0].direct);
    EXPECT_EQ(p.buffered_write_bytes, 128 + 4 * kMiB);
    EXPECT_EQ(p.buffered_read_bytes, 3 * kMiB);
    EXPECT_EQ(p.direct_read_bytes + p.direct_write_bytes, 0u);
    EXPECT_EQ(p.write_sizes.at(2 * kMiB), 2u);
    EXPECT_EQ(p.write_sizes.at(128), 1u);
    EXPECT_EQ(p.read_sizes.at(3 * kMiB), 1u);
    EXPECT_EQ(p.fsyncs, 1u);
    EXPECT_EQ(p.dontneeds, 1u);
    EXPECT_EQ(p.max_threads_in_calls, 2u);  // thread 2's read (200-700 µs) overlaps thread 1's writev (300-400)
    EXPECT_EQ(p.other_fs_calls, 1u);
    EXPECT_EQ(p.no_identity_calls, 1u);
    EXPECT_EQ(p.span_ns, 3'100'000u);
}

TEST(FileJob, WritesOneSectionPerThreadAndLaysOutWhatIsRead) {
    const FilePattern p = derive_file_pattern(serving_records(), kFs);
    FileJobOptions o;
    o.directory = "/mnt/x";
    o.iolog_prefix = "/tmp/j.";
    o.header = {"level: file (buffered)"};
    const FileJob j = make_file_job(p, o);
    EXPECT_EQ(j.layout_section, "layout");
    ASSERT_EQ(j.replay_sections.size(), 2u);
    EXPECT_EQ(j.replay_sections[0], "kvio-file-t1");
    ASSERT_EQ(j.iologs.size(), 3u);
    // The layout writes only the file that is read (file 12, 3 MiB) whole, in 1 MiB calls.
    EXPECT_EQ(j.iologs[0].first, "/tmp/j.layout.iolog");
    EXPECT_EQ(j.iologs[0].second,
              "fio version 2 iolog\n/mnt/x/i12g9 add\n/mnt/x/i12g9 open\n/mnt/x/i12g9 write 0 1048576\n"
              "/mnt/x/i12g9 write 1048576 1048576\n/mnt/x/i12g9 write 2097152 1048576\n/mnt/x/i12g9 sync 0 0\n"
              "/mnt/x/i12g9 close\n");
    // The writer: a wait (ms since fio started its threads: fio 3.33's v2 `wait` is absolute) before each call in a
    // later traced millisecond, its writes widened to whole 4 KiB pages (the same pages dirtied), one open, the fsync,
    // a close.
    EXPECT_EQ(j.iologs[1].second,
              "fio version 2 iolog\n/mnt/x/i11g9 add\n/mnt/x/i11g9 open\n/mnt/x/i11g9 write 0 4096\n"
              "/mnt/x/i11g9 write 0 2101248\n/mnt/x/i11g9 wait 2 0\n/mnt/x/i11g9 write 2097152 2101248\n"
              "/mnt/x/i11g9 wait 3 0\n/mnt/x/i11g9 sync 0 0\n/mnt/x/i11g9 close\n");
    // The reader: the fadvise is an open (its page cache dropped by invalidate=1), then the read; both in the trace's
    // first millisecond, so no wait.
    EXPECT_EQ(j.iologs[2].second,
              "fio version 2 iolog\n/mnt/x/i12g9 add\n/mnt/x/i12g9 open\n/mnt/x/i12g9 read 0 3145728\n"
              "/mnt/x/i12g9 close\n");
    EXPECT_NE(j.text.find("; level: file (buffered)\n"), std::string::npos);
    EXPECT_NE(j.text.find("[layout]\nread_iolog=/tmp/j.layout.iolog\n"), std::string::npos) << j.text;
    EXPECT_NE(j.text.find("[kvio-file-t1]\nstonewall\nread_iolog=/tmp/j.kvio-file-t1.iolog\ndirect=0"),
              std::string::npos)
        << j.text;
    EXPECT_EQ(j.text.find("[kvio-file-t2]\nstonewall"), std::string::npos);  // the threads run together
    EXPECT_NE(j.text.find("[kvio-file-t2]\nread_iolog=/tmp/j.kvio-file-t2.iolog\ndirect=0"), std::string::npos);
    EXPECT_NE(j.text.find("invalidate=1"), std::string::npos);
    EXPECT_NE(j.text.find("1 calls without file identity, 1 calls on other filesystems"), std::string::npos);
    EXPECT_EQ(j.needs_bytes, (128 + 4 * kMiB + 4095) / 4096 * 4096 + 3 * kMiB);
}

// A file the trace made (its first call a write) and another thread read later is created sparse at its size by the
// layout's script, not written whole: the replayed writes allocate its blocks as the traced ones did. With no file
// to write whole, the layout writes one page of a stamp file so that its section has I/O.
TEST(FileJob, AFileTheTraceMadeIsLaidOutSparse) {
    const std::vector<SyscallRec> v = {rec(SysKind::Write, 1, 30, 0, 8192, 0, 8192, 8192),
                                       rec(SysKind::Fsync, 1, 30, 100, 0, 0, 0, 8192),
                                       rec(SysKind::Read, 2, 30, 2'000, 8192, 0, 8192, 8192)};
    FileJobOptions o;
    o.directory = "/d";
    o.iolog_prefix = "/tmp/j.";
    const FileJob j = make_file_job(derive_file_pattern(v, kFs), o);
    EXPECT_EQ(j.layout_section, "layout");
    ASSERT_EQ(j.iologs.size(), 4u);  // layout, its script, one per thread
    EXPECT_EQ(j.iologs[0].second,
              "fio version 2 iolog\n/d/kvio-layout.stamp add\n/d/kvio-layout.stamp open\n"
              "/d/kvio-layout.stamp write 0 4096\n/d/kvio-layout.stamp close\n");
    EXPECT_EQ(j.iologs[1].first, "/tmp/j.layout.sh");
    EXPECT_NE(j.iologs[1].second.find("\ntruncate -s 8192 '/d/i30g9'\n"), std::string::npos) << j.iologs[1].second;
    EXPECT_NE(j.text.find("replay_no_stall=1\n; the 1 files the trace made and read, created sparse"),
              std::string::npos)
        << j.text;
    EXPECT_NE(j.text.find("exec_prerun=sh /tmp/j.layout.sh\n"), std::string::npos) << j.text;
    EXPECT_EQ(j.needs_bytes, 8192u + 4096u);  // the file and the stamp
}

// A thread whose first call came 400 ms into the trace starts 400 ms into the replay, and one that fell behind
// catches up: every wait is the traced time since the trace's first call, not a gap after the previous call.
TEST(FileJob, ThreadsKeepTheTracesClock) {
    const std::vector<SyscallRec> v = {rec(SysKind::Read, 1, 20, 0, 4096, 0, 4096, 8192),
                                       rec(SysKind::Read, 1, 20, 250'000, 4096, 4096, 4096, 8192),
                                       rec(SysKind::Write, 2, 21, 400'000, 4096, 0, 4096, 4096),
                                       rec(SysKind::Write, 2, 21, 400'700, 4096, 4096, 4096, 8192),
                                       rec(SysKind::Write, 2, 21, 1'900'000, 4096, 8192, 4096, 12288)};
    FileJobOptions o;
    o.directory = "/d";
    const FileJob j = make_file_job(derive_file_pattern(v, kFs), o);
    ASSERT_EQ(j.iologs.size(), 3u);  // layout (file 20 is read), then one per thread
    EXPECT_EQ(j.iologs[1].second,
              "fio version 2 iolog\n/d/i20g9 add\n/d/i20g9 open\n/d/i20g9 read 0 4096\n/d/i20g9 wait 250 0\n"
              "/d/i20g9 read 4096 4096\n/d/i20g9 close\n");
    EXPECT_EQ(j.iologs[2].second,
              "fio version 2 iolog\n/d/i21g9 add\n/d/i21g9 wait 400 0\n/d/i21g9 open\n/d/i21g9 write 0 4096\n"
              "/d/i21g9 write 4096 4096\n/d/i21g9 wait 1900 0\n/d/i21g9 write 8192 4096\n/d/i21g9 close\n");
}

// Records come in the order their calls returned: thread 2's fsync entered 3 ms before thread 1's write, which is
// recorded first. The clock starts at the earliest entry: the write waits 3 ms, the fsync none (before, the fsync's
// wait was its entry minus the write's, wrapped around to ~1.8e13 ms).
TEST(FileJob, TheClockStartsAtTheEarliestEntryNotTheFirstRecord) {
    const std::vector<SyscallRec> v = {rec(SysKind::Write, 1, 20, 3'000, 4096, 0, 4096, 4096),
                                       rec(SysKind::Fsync, 2, 21, 0, 0, 0, 0, 4096),
                                       rec(SysKind::Write, 2, 21, 5'000, 4096, 0, 4096, 4096)};
    FileJobOptions o;
    o.directory = "/d";
    const FileJob j = make_file_job(derive_file_pattern(v, kFs), o);
    ASSERT_EQ(j.iologs.size(), 2u);  // nothing is read: no layout
    EXPECT_EQ(j.iologs[0].second,
              "fio version 2 iolog\n/d/i20g9 add\n/d/i20g9 wait 3 0\n/d/i20g9 open\n/d/i20g9 write 0 4096\n"
              "/d/i20g9 close\n");
    EXPECT_EQ(j.iologs[1].second,
              "fio version 2 iolog\n/d/i21g9 add\n/d/i21g9 open\n/d/i21g9 sync 0 0\n/d/i21g9 wait 5 0\n"
              "/d/i21g9 write 0 4096\n/d/i21g9 close\n");
}

TEST(FileJob, ColdReadsAndDirectStreamsAreSaidSo) {
    std::vector<SyscallRec> v = {rec(SysKind::Read, 5, 20, 0, 4096, 0, 4096, 8192),
                                 rec(SysKind::Read, 5, 20, 10, 4096, 4096, 4096, 8192)};
    for (auto& r : v) r.direct = true;
    const FilePattern p = derive_file_pattern(v, kFs);
    ASSERT_EQ(p.streams.size(), 1u);
    EXPECT_TRUE(p.streams[0].direct);
    EXPECT_EQ(p.streams[0].reads_cold, 1u);
    EXPECT_EQ(p.direct_read_bytes, 8192u);
    FileJobOptions o;
    o.directory = "/d";
    const FileJob j = make_file_job(p, o);
    EXPECT_NE(j.text.find("direct=1"), std::string::npos);
    EXPECT_NE(j.text.find("invalidate=0"), std::string::npos);
}

TEST(FileJob, RefusesNoStreamsAndRelativeDirectories) {
    std::vector<SyscallRec> v = serving_records();
    for (auto& r : v) r.has_file = false;  // a trace from a kvio that did not record file identity
    const FilePattern none = derive_file_pattern(v, kFs);
    EXPECT_TRUE(none.streams.empty());
    EXPECT_EQ(busiest_fs_dev(v), 0u);
    FileJobOptions o;
    o.directory = "/d";
    EXPECT_THROW(make_file_job(none, o), Error);
    o.directory = "rel/dir";
    EXPECT_THROW(make_file_job(derive_file_pattern(serving_records(), kFs), o), Error);
}

}  // namespace
}  // namespace kvio::distiller

namespace kvio::distiller {
namespace {

// A kvio.events/1 file of syscall records: `n` calls of `bytes` each on inode 5 of 7:3, direct or buffered, with
// file identity or without.
/// Removes a test's file in /tmp when the test ends, however it ends.
struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd() { std::remove(path.c_str()); }
};

std::string calls_file(const std::string& name, int n, uint64_t bytes, bool direct, bool identity) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream o(path);
    for (int i = 0; i < n; ++i) {
        nlohmann::json r = {{"type", "syscall"},
                            {"name", "pwrite64"},
                            {"pid", 1},
                            {"tid", 2},
                            {"comm", "app"},
                            {"fd", 3},
                            {"ts_enter", 1000 * i},
                            {"ts_exit", 1000 * i + 10},
                            {"ret", bytes},
                            {"offset", bytes * i},
                            {"count", bytes}};
        if (identity)
            r.update({{"ino", 5}, {"fs_dev", "7:3"}, {"gen", 1}, {"direct", direct}, {"file_size", bytes * (i + 1)}});
        o << r.dump() << '\n';
    }
    return path;
}

std::vector<Profile> device_7_3(uint64_t write_bytes) {
    Profile p;
    p.dev = "7:3";
    p.disk = "loop3";
    p.write.bytes = write_bytes;
    p.write.cmds = 1;
    return {p};
}

TEST(FileLevel, AutoPicksTheFileLevelForPageCacheBytes) {
    DistillOptions o;
    o.level = DistillLevel::Auto;
    o.events = calls_file("buffered.jsonl", 8, kMiB, false, true);
    const RemoveAtEnd rm{o.events};
    const LevelChoice c = choose_level(o, device_7_3(8 * kMiB));
    EXPECT_TRUE(c.file);
    EXPECT_FALSE(c.device);
    EXPECT_DOUBLE_EQ(c.page_cache_share, 1.0);
    EXPECT_EQ(c.pattern.streams.size(), 1u);
    EXPECT_EQ(c.level_name(), "file");
}

TEST(FileLevel, AutoKeepsTheDeviceLevelAndSaysWhy) {
    DistillOptions o;
    o.level = DistillLevel::Auto;
    o.events = calls_file("direct.jsonl", 8, kMiB, true, true);  // the device's bytes are the direct calls'
    const RemoveAtEnd rm{o.events};
    LevelChoice c = choose_level(o, device_7_3(8 * kMiB));
    EXPECT_TRUE(c.device);
    EXPECT_FALSE(c.file);
    EXPECT_NE(c.reason.find("mostly from direct calls"), std::string::npos) << c.reason;
    o.events = calls_file("bare.jsonl", 8, kMiB, false, false);  // no file identity
    const RemoveAtEnd rm_bare{o.events};
    c = choose_level(o, device_7_3(8 * kMiB));
    EXPECT_TRUE(c.device);
    EXPECT_NE(c.reason.find("carry no file identity"), std::string::npos) << c.reason;
    o.level = DistillLevel::File;  // asked for: an error naming why
    EXPECT_THROW(choose_level(o, device_7_3(8 * kMiB)), Error);
    o.level = DistillLevel::Device;  // no syscall record is read
    c = choose_level(o, device_7_3(8 * kMiB));
    EXPECT_EQ(c.syscalls, 0u);
    EXPECT_EQ(c.level_name(), "device");
}

// The header's queue lines: the traced values, how to set them, and what a target with other limits will not
// reproduce (docs/distill.md, "Queue settings the file level copies").
TEST(FileJob, QueueHeaderSaysWhatATargetWithOtherLimitsWillNotReproduce) {
    const QueueSettings s = {{"scheduler", "mq-deadline"},
                             {"nr_requests", "64"},
                             {"max_sectors_kb", "1280"},
                             {"read_ahead_kb", "512"},
                             {"wbt_lat_usec", "4000"}};
    const std::vector<std::string> l = queue_settings_header(s);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_NE(l[0].find("target needs: the traced device's queue settings"), std::string::npos) << l[0];
    EXPECT_NE(l[0].find(": scheduler mq-deadline, nr_requests 64, max_sectors_kb 1280, read_ahead_kb 512, "
                        "wbt_lat_usec 4000"),
              std::string::npos)
        << l[0];
    EXPECT_NE(l[1].find("echo VALUE > /sys/block/DEV/queue/NAME"), std::string::npos) << l[1];
    for (const char* says : {"on a target with other limits: max_sectors_kb 1280 (the largest command",
                             "above its max_hw_sectors_kb", "max_segments x max_segment_size", "is split at its limit",
                             "a scheduler it does not offer leaves its own", "logical block size up to 4096"})
        EXPECT_NE(l[2].find(says), std::string::npos) << says << "\n" << l[2];
    // In the job, as comment lines.
    FileJobOptions o;
    o.directory = "/mnt/x";
    o.iolog_prefix = "/tmp/j.";
    o.header = l;
    const FileJob j = make_file_job(derive_file_pattern(serving_records(), kFs), o);
    EXPECT_NE(j.text.find("; on a target with other limits: max_sectors_kb 1280"), std::string::npos) << j.text;
    // Not recorded: one line that says so.
    const std::vector<std::string> none = queue_settings_header({});
    ASSERT_EQ(none.size(), 1u);
    EXPECT_NE(none[0].find("not recorded in the trace"), std::string::npos) << none[0];
}

// A thread that only dropped a file's cache (fio's parent before its jobs start) is no stream: fio refuses an iolog
// without a read, write or sync (EINVAL, measured with fio 3.33); the header says it was left out.
TEST(FileJob, AThreadWithOnlyFadviseIsNotAStream) {
    std::vector<SyscallRec> v = serving_records();
    v.push_back(rec(SysKind::Fadvise, 7, 12, 50, 0, 0, 0, 3 * kMiB));
    const FilePattern p = derive_file_pattern(v, kFs);
    ASSERT_EQ(p.streams.size(), 2u);
    EXPECT_EQ(p.streams[0].tid, 1u);
    EXPECT_EQ(p.streams[1].tid, 2u);
    EXPECT_EQ(p.fadvise_only_threads, 1u);
    EXPECT_EQ(p.dontneeds, 2u) << "both fadvise calls counted";
    FileJobOptions o;
    o.directory = "/mnt/x";
    o.iolog_prefix = "/tmp/j.";
    const FileJob j = make_file_job(p, o);
    EXPECT_EQ(j.replay_sections.size(), 2u);
    EXPECT_NE(j.text.find("; left out: 1 thread(s) whose only calls were fadvise"), std::string::npos) << j.text;
    EXPECT_EQ(derive_file_pattern(serving_records(), kFs).fadvise_only_threads, 0u);
}

}  // namespace
}  // namespace kvio::distiller
