// Per-stream scores (distiller/stream_scores) on hand-made command streams whose scores are worked out by hand:
// which replay pid is which stream, each stream's command counts, size TV per direction and read share, and the
// "(others)" row for the commands no stream submitted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "distiller/stream_scores.h"

namespace kvio::distiller {
namespace {

constexpr uint32_t kFs = (7u << 20) | 3;  // 7:3

Cmd cmd(Op op, uint64_t bytes, uint32_t pid, uint32_t tid) {
    Cmd c;
    c.op = op, c.bytes = bytes, c.pid = pid, c.tid = tid;
    return c;
}

SyscallRec call(SysKind kind, uint32_t pid, uint32_t fs_dev, bool has_file = true) {
    SyscallRec r;
    r.kind = kind, r.pid = pid, r.tid = pid, r.fs_dev = fs_dev, r.has_file = has_file;
    return r;
}

// Two streams: A (pid 100, tid 101) and B (pid 200, tid 201). Trace side: A 2 reads of 4 KiB and 2 writes of
// 8 KiB; B 1 read of 64 KiB and 3 writes of 4 KiB; a flusher (tid 9) 1 write of 128 KiB; a flush (not data).
// Replay side: A is pid 500 (2 reads of 4 KiB, writes of 8 and 16 KiB: write TV 0.5), B is pid 600 (3 reads of
// 64 KiB, 1 write of 4 KiB: read share 25 -> 75 %), pid 42 1 write of 128 KiB.
struct Fixture {
    EventTrace orig, replay;
    FilePattern p;
    Fixture() {
        p.streams.resize(2);
        p.streams[0].pid = 100, p.streams[0].tid = 101, p.streams[0].comm = "a";
        p.streams[1].pid = 200, p.streams[1].tid = 201, p.streams[1].comm = "b";
        orig.cmds = {cmd(Op::Read, 4096, 100, 101),  cmd(Op::Read, 4096, 100, 101),  cmd(Op::Write, 8192, 100, 101),
                     cmd(Op::Write, 8192, 100, 101), cmd(Op::Read, 65536, 200, 201), cmd(Op::Write, 4096, 200, 201),
                     cmd(Op::Write, 4096, 200, 201), cmd(Op::Write, 4096, 200, 201), cmd(Op::Write, 131072, 9, 9),
                     cmd(Op::Flush, 0, 100, 101)};
        replay.cmds = {cmd(Op::Read, 4096, 500, 500),   cmd(Op::Read, 4096, 500, 500),  cmd(Op::Write, 8192, 500, 500),
                       cmd(Op::Write, 16384, 500, 500), cmd(Op::Read, 65536, 600, 600), cmd(Op::Read, 65536, 600, 600),
                       cmd(Op::Read, 65536, 600, 600),  cmd(Op::Write, 4096, 600, 600), cmd(Op::Write, 131072, 42, 42),
                       cmd(Op::Discard, 4096, 600, 600)};
    }
};

TEST(DistillStreamScores, ReplayPidsAreTheFioProcessesInPidOrder) {
    // Reads and writes on the target's filesystem count; calls elsewhere, without a file, or of other kinds do not.
    const std::vector<SyscallRec> calls = {call(SysKind::Write, 600, kFs),       call(SysKind::Read, 500, kFs),
                                           call(SysKind::Read, 600, kFs),        call(SysKind::Write, 700, kFs + 1),
                                           call(SysKind::Read, 800, kFs, false), call(SysKind::Fsync, 900, kFs)};
    EXPECT_EQ(replay_stream_pids(calls, kFs, 2), (std::vector<uint32_t>{500, 600}));
    EXPECT_TRUE(replay_stream_pids(calls, kFs, 3).empty());  // 2 pids for 3 streams: no match
}

TEST(DistillStreamScores, EachStreamScoredAgainstItsReplayPid) {
    Fixture f;
    const auto s = score_streams(f.orig, f.p, f.replay, {500, 600});
    ASSERT_EQ(s.size(), 3u);

    EXPECT_EQ(s[0].tid, 101u);
    EXPECT_EQ(s[0].pid, 100u);
    EXPECT_EQ(s[0].comm, "a");
    EXPECT_EQ(s[0].replay_pid, 500u);
    EXPECT_EQ(s[0].orig_reads, 2u);
    EXPECT_EQ(s[0].orig_writes, 2u);  // the flush is not a data command
    EXPECT_EQ(s[0].replay_reads, 2u);
    EXPECT_EQ(s[0].replay_writes, 2u);
    EXPECT_DOUBLE_EQ(s[0].size_tv_read, 0.0);
    EXPECT_DOUBLE_EQ(s[0].size_tv_write, 0.5);  // {8K:1} vs {8K:.5, 16K:.5}
    EXPECT_DOUBLE_EQ(s[0].read_share_orig, 50.0);
    EXPECT_DOUBLE_EQ(s[0].read_share_replay, 50.0);
    EXPECT_DOUBLE_EQ(s[0].read_share_err(), 0.0);

    EXPECT_EQ(s[1].tid, 201u);
    EXPECT_EQ(s[1].replay_pid, 600u);
    EXPECT_EQ(s[1].orig_reads, 1u);
    EXPECT_EQ(s[1].orig_writes, 3u);
    EXPECT_EQ(s[1].replay_reads, 3u);
    EXPECT_EQ(s[1].replay_writes, 1u);  // the discard is not a data command
    EXPECT_DOUBLE_EQ(s[1].size_tv_read, 0.0);
    EXPECT_DOUBLE_EQ(s[1].size_tv_write, 0.0);
    EXPECT_DOUBLE_EQ(s[1].read_share_orig, 25.0);
    EXPECT_DOUBLE_EQ(s[1].read_share_replay, 75.0);
    EXPECT_DOUBLE_EQ(s[1].read_share_err(), 50.0);

    EXPECT_EQ(s[2].comm, "(others)");
    EXPECT_EQ(s[2].tid, 0u);
    EXPECT_EQ(s[2].orig_writes, 1u);
    EXPECT_EQ(s[2].replay_writes, 1u);
    EXPECT_EQ(s[2].orig_reads + s[2].replay_reads, 0u);
    EXPECT_DOUBLE_EQ(s[2].size_tv_write, 0.0);
}

TEST(DistillStreamScores, SwappedPidsShowInTheScores) {
    // The same commands with the pids matched the wrong way round: A is scored against B's replay.
    Fixture f;
    const auto s = score_streams(f.orig, f.p, f.replay, {600, 500});
    ASSERT_EQ(s.size(), 3u);
    EXPECT_DOUBLE_EQ(s[0].size_tv_read, 1.0);   // {4K:1} vs {64K:1}
    EXPECT_DOUBLE_EQ(s[0].size_tv_write, 1.0);  // {8K:1} vs {4K:1}
    EXPECT_DOUBLE_EQ(s[0].read_share_err(), 25.0);
}

TEST(DistillStreamScores, WithoutReplayPidsOnlyTheTraceSideIsScored) {
    Fixture f;
    const auto s = score_streams(f.orig, f.p, f.replay, {});
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].replay_pid, 0u);
    EXPECT_EQ(s[0].orig_reads, 2u);
    EXPECT_EQ(s[0].replay_reads + s[0].replay_writes, 0u);
    EXPECT_DOUBLE_EQ(s[0].size_tv_write, 0.0);  // not scored, not "identical"
    EXPECT_EQ(s[2].replay_reads, 5u);           // every replay data command lands in the others row
    EXPECT_EQ(s[2].replay_writes, 4u);
}

TEST(DistillStreamScores, JsonAndTextCarryTheScores) {
    Fixture f;
    const auto s = score_streams(f.orig, f.p, f.replay, {500, 600});
    const auto j = streams_json(s);
    ASSERT_EQ(j.size(), 3u);
    EXPECT_EQ(j[1]["replay_pid"], 600);
    EXPECT_EQ(j[1]["cmds"]["orig"]["write"], 3);
    EXPECT_EQ(j[1]["cmds"]["replay"]["read"], 3);
    EXPECT_DOUBLE_EQ(j[0]["size_tv"]["write"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(j[1]["read_share"]["err_points"].get<double>(), 50.0);
    const std::string t = streams_text(s);
    EXPECT_NE(t.find("stream 200/201 b: cmds r/w 1/3 -> 3/1, size TV r 0.000 w 0.000, read share 25.0 -> 75.0 % "
                     "(50.0 points)"),
              std::string::npos)
        << t;
}

}  // namespace
}  // namespace kvio::distiller
