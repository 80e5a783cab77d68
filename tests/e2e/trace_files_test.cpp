// kvio trace --files: each device command is attributed in the kernel to the file whose data it moves, with no help
// from the traced process (buffered writeback and readahead from the page's mapping, direct I/O from the syscall's
// file, io_uring from the SQE's file), and the table per file is checked against what the test wrote and read on
// ext4 over a loop device (docs/trace.md, "Per-file attribution").
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"
#include "tests/e2e/tracefs.h"

using namespace kvio::test;
using json = nlohmann::json;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

uint64_t inode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_ino;
}

// The rows of "files" in a --json summary, by path.
std::map<std::string, json> rows_by_path(const json& summary) {
    std::map<std::string, json> rows;
    for (const json& r : summary.at("files")) rows[r.at("path").get<std::string>()] = r;
    return rows;
}

// Where direct I/O's file comes from (bpf/file_attr.bpf.h): the bio's iomap dio at completion (the default where the
// kernel has it), or the submitting context (the syscall's or SQE's file, forced by KVIO_TRACE_FILES_FROM_SUBMITTER).
enum class Source { Default, Submitter };

// `kvio trace -q -d LOOP --files ARGS --json JS -- sh -c SCRIPT`; returns the summary.
json trace_files(const Ext4Mount& m, const TempDir& dir, const std::string& script, const std::string& args = "",
                 Source src = Source::Default) {
    const std::string js = dir.file("t.json");
    const std::string env = src == Source::Submitter ? "KVIO_TRACE_FILES_FROM_SUBMITTER=1 " : "";
    CmdResult r = run(env + kvio_bin() + " trace -q -d " + m.loop.name + " --files " + args + " --json " + js +
                      " -- sh -c '" + script + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(slurp(js));
}

// Does this kernel have iomap's direct-I/O completion (the dio source's condition, besides BTF)?
bool kernel_has_iomap_dio() {
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string addr, type, sym;
        if (ls >> addr >> type >> sym && sym == "iomap_dio_bio_end_io") return true;
    }
    return false;
}

// The commands a direct-I/O trace attributed from the submitting context or, by default where the kernel has
// iomap, from the bio's dio: the default run must have used the dio source for every one of them.
void expect_direct_sources(const json& s, Source src, const char* submitter_counter) {
    const json& at = s.at("files_attribution");
    if (src == Source::Submitter || !kernel_has_iomap_dio()) {
        EXPECT_GT(at[submitter_counter].get<uint64_t>(), 0u) << at.dump();
        EXPECT_EQ(at["by_dio"], 0) << at.dump();
        return;
    }
    EXPECT_GT(at["by_dio"].get<uint64_t>(), 0u) << at.dump();
    EXPECT_EQ(at["by_syscall"], 0) << at.dump();
    EXPECT_EQ(at["by_uring"], 0) << at.dump();
    // requests of one bio have their file found at issue (bpf/file_attr.bpf.h files_at_issue)
    EXPECT_GT(at["dio_at_issue"].get<uint64_t>(), 0u) << at.dump();
    EXPECT_LE(at["dio_at_issue"].get<uint64_t>(), at["by_dio"].get<uint64_t>()) << at.dump();
}

}  // namespace

// Two files written buffered and fsynced, their pages dropped (dd iflag=nocache count=0: posix_fadvise DONTNEED of
// the whole file), then read back: readahead moves each file's bytes again. A third file is written, fsynced and
// deleted while the trace runs: it keeps the path it had when first seen. Each file's device bytes are exactly its
// size (its data blocks: ext4's journal and metadata go through the block device's own cache, attributed to no file),
// and the application's bytes from the syscall layer equal the device's (page-cache share 0).
TEST(TraceFiles, BufferedWritebackAndReadaheadPerFile) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string a = m.mnt + "/a.bin", b = m.mnt + "/sub/b.bin", c = m.mnt + "/c.bin";
    ASSERT_EQ(mkdir((m.mnt + "/sub").c_str(), 0755), 0);
    const std::string script =
        "dd if=/dev/zero of=" + a + " bs=256k count=16 conv=fsync status=none && dd if=/dev/zero of=" + b +
        " bs=64k count=16 conv=fsync status=none && dd if=/dev/zero of=" + c +
        " bs=128k count=4 conv=fsync status=none && sleep 0.5 && rm " + c + " && dd if=" + a +
        " iflag=nocache count=0 status=none && dd if=" + b + " iflag=nocache count=0 status=none && dd if=" + a +
        " of=/dev/null bs=1M status=none && dd if=" + b + " of=/dev/null bs=128k status=none";
    const json s = trace_files(m, dir, script);
    auto rows = rows_by_path(s);
    // a failure names how commands were attributed and whether completions were lost (no file for those)
    const std::string why =
        s["files_attribution"].dump() + " lost_completes " + s.value("lost_completes", json()).dump();
    ASSERT_TRUE(rows.count(a)) << s["files"].dump();
    ASSERT_TRUE(rows.count(b)) << s["files"].dump();
    ASSERT_TRUE(rows.count(c)) << "the deleted file lost its path: " << s["files"].dump();
    EXPECT_EQ(rows[a]["ino"], inode_of(a));
    EXPECT_EQ(rows[b]["ino"], inode_of(b));
    const struct {
        std::string path;
        uint64_t size;
        bool read;
    } want[] = {{a, 4 * MiB, true}, {b, 1 * MiB, true}, {c, 512 * KiB, false}};
    for (const auto& w : want) {
        SCOPED_TRACE(w.path);
        const json& wr = rows[w.path]["write"];
        const json& rd = rows[w.path]["read"];
        EXPECT_EQ(wr["bytes"], w.size) << why;
        EXPECT_EQ(wr["app_bytes"], w.size);
        EXPECT_GT(wr["cmds"].get<uint64_t>(), 0u);
        EXPECT_EQ(wr["size"]["count"], wr["cmds"]);
        EXPECT_EQ(wr["size"]["sum"], wr["bytes"]);
        EXPECT_EQ(wr["d2c"]["count"], wr["cmds"]);
        EXPECT_GT(wr["d2c_percentiles"]["p50"]["value"].get<double>(), 0);
        EXPECT_NEAR(wr["page_cache_share"].get<double>(), 0.0, 1e-9);
        EXPECT_EQ(rd["bytes"], w.read ? w.size : 0);
        EXPECT_EQ(rd["app_bytes"], w.read ? w.size : 0);
        if (w.read) {
            EXPECT_NEAR(rd["page_cache_share"].get<double>(), 0.0, 1e-9);
            EXPECT_EQ(rd["d2c"]["count"], rd["cmds"]);
        }
    }
    const json& at = s["files_attribution"];
    EXPECT_GT(at["by_page"].get<uint64_t>(), 0u);
    EXPECT_EQ(at["by_syscall"], 0);
    EXPECT_EQ(at["map_full"], 0);
}

namespace {

// The rows of "files" in a --json summary, by inode.
std::map<uint64_t, json> rows_by_ino(const json& summary) {
    std::map<uint64_t, json> rows;
    for (const json& r : summary.at("files")) rows[r.at("ino").get<uint64_t>()] = r;
    return rows;
}

// `kvio trace -q -d LOOP --files --json JS -- sh TRACED`, where TRACED ends by waiting for the test's go; meanwhile,
// outside the traced command, OUTSIDE runs and then `sync`, whose writeback of the traced files flusher threads
// submit (docs/trace.md, "Writeback under a command filter"). Returns the summary.
json trace_with_outside_sync(const Ext4Mount& m, const TempDir& dir, const std::string& traced,
                             const std::string& outside) {
    const std::string js = dir.file("t.json"), ready = dir.file("ready"), go = dir.file("go");
    const std::string wait_for = "i=0; while [ ! -e %s ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n";
    auto waiting = [&](const std::string& f) {
        std::string w = wait_for;
        return w.replace(w.find("%s"), 2, f);
    };
    std::ofstream(dir.file("traced.sh")) << traced << "\ntouch " << ready << "\n" << waiting(go);
    std::ofstream(dir.file("outer.sh")) << kvio_bin() << " trace -q -d " << m.loop.name << " --files --json " << js
                                        << " -- sh " << dir.file("traced.sh") << " &\nk=$!\n"
                                        << waiting(ready) << outside << "\nsync\ntouch " << go << "\nwait $k\n";
    CmdResult r = run("sh " + dir.file("outer.sh"));
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(slurp(js));
}

// The size of `path` rounded up to its filesystem's blocks: what its writeback moves.
uint64_t size_in_blocks(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    const uint64_t b = st.st_blksize;
    return (uint64_t(st.st_size) + b - 1) / b * b;
}

// The extents of `path` on its device per FIEMAP: [byte offset, byte length] each (flushed first).
std::vector<std::pair<uint64_t, uint64_t>> extents_of(const std::string& path) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const int fd = open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << path;
    if (fd < 0) return out;
    constexpr unsigned kMax = 64;
    std::vector<char> buf(sizeof(struct fiemap) + kMax * sizeof(struct fiemap_extent));
    auto* fm = reinterpret_cast<struct fiemap*>(buf.data());
    fm->fm_length = FIEMAP_MAX_OFFSET;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kMax;
    EXPECT_EQ(ioctl(fd, FS_IOC_FIEMAP, fm), 0) << path;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i)
        out.emplace_back(fm->fm_extents[i].fe_physical, fm->fm_extents[i].fe_length);
    close(fd);
    return out;
}

// What tracefs saw written (block_rq_complete lines: "MAJ,MIN WS () SECTOR + N [0]") in each file's extents
// (`files`: the FIEMAP extents of each), and how many write requests held bytes of two files or more.
std::pair<std::vector<uint64_t>, uint64_t> tracefs_writes_per_file(
    const TracefsInstance& t, const std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& files) {
    std::vector<uint64_t> bytes(files.size());
    uint64_t merged = 0;
    for (const std::string& line : t.lines()) {
        const size_t at = line.find("block_rq_complete:");
        if (at == std::string::npos) continue;
        std::istringstream ls(line.substr(at + 18));
        std::string dev, rwbs, paren, plus;
        uint64_t sector = 0, n = 0;
        if (!(ls >> dev >> rwbs >> paren >> sector >> plus >> n) || rwbs.find('W') == std::string::npos) continue;
        const uint64_t lo = sector * 512, hi = lo + n * 512;
        int touched = 0;
        for (size_t f = 0; f < files.size(); ++f) {
            uint64_t in = 0;
            for (const auto& [off, len] : files[f])
                if (std::min(hi, off + len) > std::max(lo, off)) in += std::min(hi, off + len) - std::max(lo, off);
            bytes[f] += in;
            touched += in > 0;
        }
        merged += touched > 1;
    }
    return {bytes, merged};
}

// 100 files of 6000 bytes by the traced side and 100 by an outside process, created alternately (each side waits
// for the other's file through two FIFOs) so that ext4's delayed allocation puts their blocks side by side, then an
// outside `sync`: its writeback merges both sides' pages into the same requests. `filtered`: the trace is of the
// traced side's command (-- sh); else of the whole device, stopped after the sync. Returns the summary; `tfs` saw the
// device's completions meanwhile.
json trace_interleaved_small_files(const Ext4Mount& m, const TempDir& dir, bool filtered, const std::string& events) {
    const std::string js = dir.file("t.json"), go = dir.file("go"), a = dir.file("a"), b = dir.file("b");
    EXPECT_EQ(mkfifo(a.c_str(), 0600), 0);
    EXPECT_EQ(mkfifo(b.c_str(), 0600), 0);
    EXPECT_EQ(mkdir((m.mnt + "/d").c_str(), 0755), 0);
    const std::string d = m.mnt + "/d/";
    std::ofstream(dir.file("traced.sh")) << "exec 3<" << a << " 4>" << b << "\nfor i in $(seq 100); do head -c 6000 "
                                         << "/dev/urandom > " << d << "t$i; echo >&4; read x <&3; done\n"
                                         << "i=0; while [ ! -e " << go << " ] && [ $i -lt 1200 ]; do sleep 0.05; "
                                         << "i=$((i+1)); done\n";
    std::ofstream(dir.file("outside.sh")) << "exec 3>" << a << " 4<" << b << "\nfor i in $(seq 100); do read x <&4; "
                                          << "head -c 6000 /dev/urandom > " << d << "o$i; echo >&3; done\n";
    const std::string trace = kvio_bin() + " trace -q -d " + m.loop.name + " --files --json " + js + " " + events;
    std::ofstream outer(dir.file("outer.sh"));
    if (filtered)
        outer << trace << " -- sh " << dir.file("traced.sh") << " &\nk=$!\nsh " << dir.file("outside.sh") << "\n";
    else
        outer << trace << " --ready-file " << dir.file("ready") << " &\nk=$!\ni=0; while [ ! -e " << dir.file("ready")
              << " ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done\nsh " << dir.file("traced.sh") << " &\nt=$!\n"
              << "sh " << dir.file("outside.sh") << "\n";
    outer << "sync\ntouch " << go << "\n" << (filtered ? "" : "wait $t\nkill -INT $k\n") << "wait $k\n";
    outer.close();
    CmdResult r = run("sh " + dir.file("outer.sh"));
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(slurp(js));
}

// Bytes written per inode as summed from a kvio.events/1 stream: a command's `files` when it has them (each file its
// own part), else its `ino`, whole. *split: write commands that carry `files` (not all one file's bytes).
std::map<uint64_t, uint64_t> event_write_bytes(const std::vector<json>& events, size_t* split) {
    std::map<uint64_t, uint64_t> by;
    *split = 0;
    for (const json& e : events) {
        if (e.value("type", "") != "cmd" || e.value("op", "") != "write") continue;
        if (e.contains("files")) {
            ++*split;
            uint64_t sum = e["nofile_bytes"].get<uint64_t>();
            for (const json& f : e["files"]) {
                by[f["ino"].get<uint64_t>()] += f["bytes"].get<uint64_t>();
                sum += f["bytes"].get<uint64_t>();
            }
            EXPECT_EQ(sum, e["bytes"].get<uint64_t>()) << e.dump();  // parts and bytes of no file add up
        } else if (e.contains("ino")) {
            by[e["ino"].get<uint64_t>()] += e["bytes"].get<uint64_t>();
        }
    }
    return by;
}

// Checks the interleaved small files' rows: each file of `sides` ("t", "o") has exactly its FIEMAP bytes written,
// which is what tracefs saw the device write in its extents; every file of the sides `absent` has no row. The events
// (`events`, kvio.events/1 records) give each file the same bytes: a merged command's `files`, each its own part;
// `joined` (validate --join files --json), when not null, likewise.
void expect_exact_small_files(const Ext4Mount& m, const json& s, const TracefsInstance& tfs,
                              const std::vector<std::string>& sides, const std::vector<std::string>& absent,
                              const std::vector<json>& events, const json& joined) {
    auto rows = rows_by_ino(s);
    size_t split = 0;
    std::map<uint64_t, uint64_t> from_events = event_write_bytes(events, &split);
    EXPECT_GT(split, 0u) << "no write record carries files: the events did not split a merged command";
    std::map<uint64_t, uint64_t> from_join;
    if (!joined.is_null())
        for (const json& f : joined.at("files")) from_join[f.at("ino").get<uint64_t>()] = f.at("write_bytes");
    ASSERT_EQ(s["files_attribution"]["parts_incomplete"], 0) << s["files_attribution"].dump();
    ASSERT_EQ(s["files_attribution"]["parts_lost"], 0) << s["files_attribution"].dump();
    const std::string why = s["files_attribution"].dump();
    std::vector<std::string> paths;
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> extents;
    for (const char* side : {"t", "o"})
        for (int i = 1; i <= 100; ++i) {
            paths.push_back(m.mnt + "/d/" + side + std::to_string(i));
            extents.push_back(extents_of(paths.back()));
        }
    ASSERT_EQ(tfs.overruns(), 0u);
    const auto [seen, merged] = tracefs_writes_per_file(tfs, extents);
    EXPECT_GT(merged, 0u) << "no write request held two files' blocks: the test did not test the merge";
    uint64_t sum = 0, expected = 0;
    for (size_t f = 0; f < paths.size(); ++f) {
        const std::string side = paths[f].substr(paths[f].rfind('/') + 1, 1);
        const uint64_t ino = inode_of(paths[f]);
        if (std::find(absent.begin(), absent.end(), side) != absent.end()) {
            EXPECT_FALSE(rows.count(ino)) << "a file written outside the trace has a row: " << paths[f];
            EXPECT_FALSE(from_events.count(ino)) << "a file written outside the trace is in the events: " << paths[f];
            continue;
        }
        if (std::find(sides.begin(), sides.end(), side) == sides.end()) continue;
        uint64_t len = 0;
        for (const auto& e : extents[f]) len += e.second;
        EXPECT_EQ(len, size_in_blocks(paths[f])) << paths[f];
        EXPECT_EQ(seen[f], len) << paths[f] << ": tracefs saw other bytes written in its extents";
        const uint64_t got = rows.count(ino) ? rows[ino]["write"]["bytes"].get<uint64_t>() : 0;
        EXPECT_EQ(got, len) << paths[f] << " " << why;
        if (rows.count(ino)) {
            EXPECT_EQ(rows[ino]["write"]["size"]["sum"], got) << paths[f];
        }
        EXPECT_EQ(from_events[ino], len) << paths[f] << ": bytes summed from the events";
        if (!joined.is_null()) EXPECT_EQ(from_join[ino], len) << paths[f] << ": validate --join files";
        sum += got;
        expected += seen[f];
    }
    EXPECT_EQ(sum, expected) << why;
}

}  // namespace

// Under a command filter, a file the traced command wrote buffered (no fsync) reaches the device from flusher
// threads when a process outside the trace runs `sync`: those commands are the traced workload's writeback and count
// for it, exactly the file's bytes. A file a process outside the trace writes meanwhile is not counted.
TEST(TraceFiles, WritebackOfTheTracedCommandsFilesUnderACommandFilter) {
    Ext4Mount m(128 * MiB);
    TempDir dir;
    const std::string f = m.mnt + "/wb.bin", other = m.mnt + "/other.bin";
    const json s = trace_with_outside_sync(m, dir, "dd if=/dev/zero of=" + f + " bs=1M count=32 status=none",
                                           "dd if=/dev/zero of=" + other + " bs=1M count=8 status=none");
    auto rows = rows_by_ino(s);
    const std::string why = s["files_attribution"].dump();
    ASSERT_TRUE(rows.count(inode_of(f))) << s["files"].dump();
    const json& wr = rows[inode_of(f)]["write"];
    EXPECT_EQ(wr["bytes"], 32 * MiB) << why;
    EXPECT_EQ(wr["app_bytes"], 32 * MiB);
    EXPECT_EQ(wr["size"]["sum"], wr["bytes"]);
    EXPECT_GT(s["files_attribution"]["writeback_followed"].get<uint64_t>(), 0u) << why;
    EXPECT_EQ(s["files_attribution"]["written_files_full"], 0) << why;
    EXPECT_FALSE(rows.count(inode_of(other))) << "a file written outside the trace was counted: " << s["files"].dump();
    uint64_t written = 0;
    for (const auto& [ino, r] : rows) written += r["write"]["bytes"].get<uint64_t>();
    EXPECT_EQ(written, 32 * MiB) << s["files"].dump();
}

// vLLM's pattern under a command filter: the KV file is written buffered as `x.tmp`, renamed to `x`, never fsynced;
// a `sync` outside the trace writes it back. Its device bytes are its size rounded up to the filesystem's blocks.
TEST(TraceFiles, RenamedTmpFileWithoutFsyncUnderACommandFilter) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string x = m.mnt + "/x";
    const json s = trace_with_outside_sync(m, dir,
                                           "dd if=/dev/zero of=" + x + ".tmp bs=4k count=768 status=none && " +
                                               "head -c 100 /dev/zero >> " + x + ".tmp && mv " + x + ".tmp " + x,
                                           "true");
    auto rows = rows_by_ino(s);
    ASSERT_TRUE(rows.count(inode_of(x))) << s["files"].dump();
    const json& wr = rows[inode_of(x)]["write"];
    EXPECT_GT(wr["bytes"].get<uint64_t>(), 0u) << s["files_attribution"].dump();
    EXPECT_EQ(wr["bytes"], size_in_blocks(x)) << s["files_attribution"].dump();
    EXPECT_EQ(wr["app_bytes"], 3 * MiB + 100);
    EXPECT_EQ(rows[inode_of(x)]["path"], x);
}

// --under keeps the files below a directory; --group-by makes a row of each distinct match (its first group) over
// the path. The same writes as above, two files in each of two directories.
TEST(TraceFiles, UnderAndGroupBy) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    for (const char* d : {"/x", "/y"}) ASSERT_EQ(mkdir((m.mnt + d).c_str(), 0755), 0);
    std::string script = "true";
    for (const char* f : {"/x/1", "/x/2", "/y/1", "/y/2"})
        script += " && dd if=/dev/zero of=" + m.mnt + f + " bs=64k count=4 conv=fsync status=none";
    const json under = trace_files(m, dir, script, "--under " + m.mnt + "/x");
    auto rows = rows_by_path(under);
    ASSERT_EQ(rows.size(), 2u) << under["files"].dump();
    for (const char* f : {"/x/1", "/x/2"}) {
        ASSERT_TRUE(rows.count(m.mnt + f)) << under["files"].dump();
        EXPECT_EQ(rows[m.mnt + f]["write"]["bytes"], 256 * KiB);
    }
    const json grouped = trace_files(m, dir, "rm -f " + m.mnt + "/*/* && " + script, "--group-by '^(.*)/[^/]*$'");
    rows = rows_by_path(grouped);
    for (const char* d : {"/x", "/y"}) {
        ASSERT_TRUE(rows.count(m.mnt + d)) << grouped["files"].dump();
        EXPECT_EQ(rows[m.mnt + d]["files"], 2);
        EXPECT_EQ(rows[m.mnt + d]["write"]["bytes"], 512 * KiB);
        EXPECT_EQ(rows[m.mnt + d]["write"]["app_bytes"], 512 * KiB);
    }
}

// A file renamed during the trace (an engine's `x.tmp` made `x` once complete) is shown by its path at the end; a
// file deleted during the trace keeps the path it had.
TEST(TraceFiles, RenamedFileShowsItsPathAtTheEnd) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string x = m.mnt + "/x", gone = m.mnt + "/gone";
    const json s = trace_files(m, dir,
                               "dd if=/dev/zero of=" + x + ".tmp bs=64k count=4 conv=fsync status=none && dd " +
                                   "if=/dev/zero of=" + gone + " bs=64k count=2 conv=fsync status=none && sleep 1 && " +
                                   "mv " + x + ".tmp " + x + " && rm " + gone);
    auto rows = rows_by_path(s);
    EXPECT_FALSE(rows.count(x + ".tmp")) << s["files"].dump();
    ASSERT_TRUE(rows.count(x)) << s["files"].dump();
    EXPECT_EQ(rows[x]["ino"], inode_of(x));
    EXPECT_EQ(rows[x]["write"]["bytes"], 256 * KiB);
    ASSERT_TRUE(rows.count(gone)) << "the deleted file lost its path: " << s["files"].dump();
    EXPECT_EQ(rows[gone]["write"]["bytes"], 128 * KiB);
}

// ext4 gives a deleted file's inode number to the next file created at once: the two are told apart by generation,
// in the table (two rows) and in the paths (the deleted file keeps its own, not the new file's, which the end-of-trace
// walk finds by number). Direct writes: each file's bytes are exactly its own.
TEST(TraceFiles, ADeletedFileWhoseInodeNumberIsReusedKeepsItsPath) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string old_f = m.mnt + "/old", new_f = m.mnt + "/new", ino = dir.file("old.ino");
    const json s =
        trace_files(m, dir,
                    "dd if=/dev/zero of=" + old_f + " bs=64k count=10 oflag=direct status=none && stat -c %i " + old_f +
                        " > " + ino + " && rm " + old_f + " && sync && sleep 1 && dd if=/dev/zero of=" + new_f +
                        " bs=32k count=3 oflag=direct status=none");
    auto rows = rows_by_path(s);
    ASSERT_TRUE(rows.count(old_f)) << "the deleted file lost its path: " << s["files"].dump();
    ASSERT_TRUE(rows.count(new_f)) << s["files"].dump();
    EXPECT_EQ(rows[old_f]["write"]["bytes"], 640 * KiB) << s["files"].dump();
    EXPECT_EQ(rows[new_f]["write"]["bytes"], 96 * KiB) << s["files"].dump();
    EXPECT_EQ(rows[new_f]["ino"], inode_of(new_f));
    // the case this test is about (ext4 here reuses the number every time; say so if a kernel stops doing it)
    EXPECT_EQ(std::stoull(slurp(ino)), inode_of(new_f)) << "the inode number was not reused";
}

// A stop while --group-by matches (a pattern that backtracks without end) ends the grouping: the summary is written
// with the table per file and says so, and the exit is the stop's (128 + SIGTERM), not 0. SIGTERM is sent every 2 s
// from 4 s on: on a machine slow enough that the first one ends the trace itself, the next one ends the matching.
TEST(TraceFiles, AStopWhileGroupingWritesTheTableUngroupedAndExitsAsStopped) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string js = dir.file("t.json"), f = m.mnt + "/" + std::string(40, 'a');
    const auto t0 = std::chrono::steady_clock::now();
    CmdResult r = run(kvio_bin() + " trace -q -d " + m.loop.name + " --files --group-by '(.*)*#' --json " + js +
                      " -- dd if=/dev/zero of=" + f + " bs=64k count=2 conv=fsync status=none & p=$!; sleep 4; " +
                      "while kill -TERM $p 2>/dev/null; do sleep 2; done; wait $p");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, 143) << r.err;
    EXPECT_LT(took, 60.0);
    EXPECT_NE(r.err.find("did not finish"), std::string::npos) << r.err;
    const json s = json::parse(slurp(js));
    EXPECT_EQ(s["files_group_by_stopped"], true);
    auto rows = rows_by_path(s);
    ASSERT_TRUE(rows.count(f)) << s["files"].dump();
    EXPECT_EQ(rows[f]["write"]["bytes"], 128 * KiB);
}

// Files whose dentries the kernel dropped (memory pressure; here `drop_caches` 2) open by handle as disconnected
// dentries, whose /proc/self/fd link reads "/": each file keeps its own row under its path, never one "/" row.
TEST(TraceFiles, DroppedDentriesKeepEachFilesPath) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    ASSERT_EQ(mkdir((m.mnt + "/d").c_str(), 0755), 0);
    std::string script = "true";
    for (const char* f : {"/d/a", "/d/b", "/d/c"})
        script += " && dd if=/dev/zero of=" + m.mnt + f + " bs=64k count=2 conv=fsync status=none";
    const json s = trace_files(m, dir, script + " && sync && echo 2 > /proc/sys/vm/drop_caches");
    auto rows = rows_by_path(s);
    EXPECT_FALSE(rows.count("/")) << s["files"].dump();
    for (const char* f : {"/d/a", "/d/b", "/d/c"}) {
        ASSERT_TRUE(rows.count(m.mnt + f)) << s["files"].dump();
        EXPECT_EQ(rows[m.mnt + f]["files"], 1);
        EXPECT_EQ(rows[m.mnt + f]["write"]["bytes"], 128 * KiB);
    }
}

// What a command prints to standard output must reach it: a table written to /dev/full (ENOSPC) fails the run with
// one line on stderr, for kvio trace as for any other command (cli/stdout_check.h: one check in main).
TEST(TraceFiles, WriteErrorsOnStdoutFailTheRun) {
    Ext4Mount m(64 * MiB);
    const std::string cmds[] = {
        kvio_bin() + " trace -d " + m.loop.name + " --files -- dd if=/dev/zero of=" + m.mnt +
            "/a bs=64k count=4 conv=fsync status=none",
        kvio_bin() + " geometry --model llama3.1-8b --tp 2",
        kvio_bin() + " --help",
    };
    for (const std::string& c : cmds) {
        SCOPED_TRACE(c);
        const CmdResult ok = run(c + " > /dev/null");
        EXPECT_EQ(ok.status, 0) << ok.err;
        const CmdResult r = run(c + " > /dev/full");
        EXPECT_EQ(r.status, 1) << r.err;
        // one line; the reason (ENOSPC) when the failed write was the last flush, else none is left to tell
        EXPECT_EQ(r.err.rfind("kvio: cannot write to standard output", 0), 0u) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
}

// --files needs the syscall programs (app bytes, the files whose writeback a command filter follows): with
// --block-only it is refused as a command line whose options do not go together, before anything is traced.
TEST(TraceFiles, BlockOnlyIsRefused) {
    for (const char* order : {"--files --block-only", "--block-only --files"}) {
        SCOPED_TRACE(order);
        const CmdResult r = run(kvio_bin() + " trace " + order + " --duration 1");
        EXPECT_EQ(r.status, 2) << r.err;
        EXPECT_NE(r.err.find("kvio trace: --files excludes --block-only"), std::string::npos) << r.err;
        EXPECT_EQ(r.out, "");
    }
}

// Direct I/O: dd writes and reads a file with O_DIRECT; the commands' pages are dd's buffer (anonymous memory), so
// the file comes from the bio's iomap dio (or, forced, from the syscall that submitted them): both sources give the
// same table. The events stream carries the inode of each data command.
TEST(TraceFiles, DirectIoFromTheSyscallsFile) {
    for (Source src : {Source::Default, Source::Submitter}) {
        SCOPED_TRACE(src == Source::Default ? "default source" : "submitter source");
        Ext4Mount m(64 * MiB);
        TempDir dir;
        const std::string d = m.mnt + "/direct.bin", ev = dir.file("ev.jsonl");
        const json s = trace_files(m, dir,
                                   "dd if=/dev/zero of=" + d +
                                       " bs=64k count=16 oflag=direct conv=fsync status=none && dd if=" + d +
                                       " of=/dev/null bs=128k iflag=direct status=none",
                                   "--events " + ev, src);
        auto rows = rows_by_path(s);
        ASSERT_TRUE(rows.count(d)) << s["files"].dump();
        const json& r = rows[d];
        // a failure names how commands were attributed and whether completions were lost (no file for those)
        const std::string why =
            s["files_attribution"].dump() + " lost_completes " + s.value("lost_completes", json()).dump();
        EXPECT_EQ(r["ino"], inode_of(d));
        EXPECT_EQ(r["write"]["bytes"], 1 * MiB) << why;
        EXPECT_EQ(r["write"]["app_bytes"], 1 * MiB);
        EXPECT_EQ(r["read"]["bytes"], 1 * MiB) << why;
        EXPECT_EQ(r["read"]["app_bytes"], 1 * MiB);
        EXPECT_NEAR(r["read"]["page_cache_share"].get<double>(), 0.0, 1e-9);
        expect_direct_sources(s, src, "by_syscall");
        uint64_t ev_bytes = 0;
        for (const json& e : read_jsonl(ev))
            if (e.value("type", "") == "cmd" && e.value("ino", uint64_t(0)) == inode_of(d))
                ev_bytes += e["bytes"].get<uint64_t>();
        EXPECT_EQ(ev_bytes, 2 * MiB);  // every data command of the file, in the events stream too
    }
}

// io_uring: fio overwrites and reads a file (written before the trace) with O_DIRECT through io_uring at depth 4;
// the file comes from the bio's iomap dio (or, forced, from each SQE's file). io_uring reads and writes are not
// syscalls: no app bytes.
TEST(TraceFiles, IoUringFromTheSqesFile) {
    for (Source src : {Source::Default, Source::Submitter}) {
        SCOPED_TRACE(src == Source::Default ? "default source" : "submitter source");
        Ext4Mount m(64 * MiB);
        TempDir dir;
        const std::string u = m.mnt + "/uring.bin";
        ASSERT_EQ(run("dd if=/dev/zero of=" + u + " bs=1M count=1 conv=fsync status=none").status, 0);
        const std::string fio = "fio --output=/dev/null --filename=" + u +
                                " --ioengine=io_uring --direct=1 --bs=64k --size=1M --iodepth=4 --name=w";
        const json s = trace_files(m, dir, fio + " --rw=write && " + fio + " --rw=read", "", src);
        auto rows = rows_by_path(s);
        ASSERT_TRUE(rows.count(u)) << s["files"].dump();
        EXPECT_EQ(rows[u]["write"]["bytes"], 1 * MiB);
        EXPECT_EQ(rows[u]["read"]["bytes"], 1 * MiB);
        expect_direct_sources(s, src, "by_uring");
    }
}

// The cheap source against the submitter's on direct I/O that tests its edges: libaio and io_uring at depth 8 on two
// files at once (two fio jobs, interleaved submissions), and 4 MiB O_DIRECT transfers the loop device splits at its
// max_sectors_kb, set to 64 (each split-off bio chains to the remainder, whose dio names the file). The dio source
// must attribute exactly each file's bytes per direction, and give the libaio and syscall files the same table as the
// submitter's source; io_uring from the submitter may miss requests the kernel punts to io-wq, the dio source not.
TEST(TraceFiles, DioSourceAndSubmitterSourceGiveTheSameTable) {
    std::map<std::string, json> tables[2];
    for (Source src : {Source::Default, Source::Submitter}) {
        SCOPED_TRACE(src == Source::Default ? "default source" : "submitter source");
        Ext4Mount m(96 * MiB);
        TempDir dir;
        const std::string a = m.mnt + "/a.bin", b = m.mnt + "/b.bin", big = m.mnt + "/big.bin";
        for (const std::string& f : {a, b})
            ASSERT_EQ(run("dd if=/dev/zero of=" + f + " bs=1M count=2 conv=fsync status=none").status, 0);
        // iomap's bios are at most 1 MiB here; at 64 KiB per command every one of them is split
        ASSERT_EQ(run("echo 64 > /sys/block/" + m.loop.name + "/queue/max_sectors_kb").status, 0);
        const std::string job = " --direct=1 --bs=16k --size=2M --iodepth=8 --output=/dev/null";
        const std::string script = "fio --name=a --filename=" + a + " --ioengine=libaio --rw=randwrite" + job +
                                   " --name=b --filename=" + b + " --ioengine=io_uring --rw=randread" + job +
                                   " && dd if=/dev/zero of=" + big +
                                   " bs=4M count=4 oflag=direct conv=fsync status=none && dd if=" + big +
                                   " of=/dev/null bs=4M iflag=direct status=none";
        const json s = trace_files(m, dir, script, "", src);
        auto rows = rows_by_path(s);
        for (const std::string& f : {a, b, big}) ASSERT_TRUE(rows.count(f)) << f << " " << s["files"].dump();
        EXPECT_EQ(rows[a]["write"]["bytes"], 2 * MiB);
        EXPECT_EQ(rows[a]["read"]["bytes"], 0);
        // io_uring from the submitter misses what the kernel punts to an io-wq worker (docs/trace.md, "Known
        // limits": 384 KiB of the 2 MiB once, beside other tests); the dio source has the file in the bio: exact
        if (src == Source::Submitter)
            EXPECT_LE(rows[b]["read"]["bytes"].get<uint64_t>(), 2 * MiB);
        else
            EXPECT_EQ(rows[b]["read"]["bytes"], 2 * MiB);
        EXPECT_EQ(rows[b]["write"]["bytes"], 0);
        // what the trace counted besides the files, should big.bin's bytes be short (once under load, 8 KiB of its
        // reads from the submitter source: the cause is still unknown)
        json health = s["files_attribution"];
        for (const char* k : {"unattributed", "lost_completes", "partial_completes", "map_full", "stale_entries",
                              "unmatched_completes", "in_flight_at_stop", "dropped"})
            health[k] = s.value(k, json());
        EXPECT_EQ(rows[big]["write"]["bytes"], 16 * MiB) << rows[big].dump() << "\n" << health.dump();
        EXPECT_EQ(rows[big]["read"]["bytes"], 16 * MiB) << rows[big].dump() << "\n" << health.dump();
        // split at 64 KiB: 256 commands of at most 64 KiB per direction, each attributed
        EXPECT_GE(rows[big]["read"]["cmds"].get<uint64_t>(), 256u) << rows[big].dump();
        EXPECT_GE(rows[big]["write"]["cmds"].get<uint64_t>(), 256u) << rows[big].dump();
        expect_direct_sources(s, src, "by_syscall");
        for (const std::string& f : {a, big}) {  // the sources exact both ways: libaio and syscalls
            json& t = tables[src == Source::Submitter][f.substr(m.mnt.size())];
            for (const char* dir_name : {"read", "write"})
                t[dir_name] = {{"bytes", rows[f][dir_name]["bytes"]},
                               {"app_bytes", rows[f][dir_name]["app_bytes"]},
                               {"size_sum", rows[f][dir_name]["size"]["sum"]}};
        }
    }
    EXPECT_EQ(tables[0], tables[1]);
}

// The direct-I/O file found at issue is kept as a number per file (bpf/file_attr.bpf.h file_id_of). With one number
// to give (test hook KVIO_TRACE_FILE_IDS=2: numbers start at 1), the first file of two interleaved fio jobs takes it
// and the other's commands are found at completion, as before numbers: both files' bytes stay exact, and only some
// commands were found at issue.
TEST(TraceFiles, FileNumbersRunningOutLeaveTheFileToTheCompletion) {
    if (!kernel_has_iomap_dio()) GTEST_SKIP() << "no iomap direct I/O on this kernel: no dio source";
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string a = m.mnt + "/a.bin", b = m.mnt + "/b.bin", js = dir.file("t.json");
    for (const std::string& f : {a, b})
        ASSERT_EQ(run("dd if=/dev/zero of=" + f + " bs=1M count=2 conv=fsync status=none").status, 0);
    const std::string job = " --direct=1 --bs=16k --size=2M --iodepth=8 --output=/dev/null";
    CmdResult r = run("KVIO_TRACE_FILE_IDS=2 " + kvio_bin() + " trace -q -d " + m.loop.name + " --files --json " + js +
                      " -- fio --name=a --filename=" + a + " --ioengine=libaio --rw=randread" + job +
                      " --name=b --filename=" + b + " --ioengine=io_uring --rw=randwrite" + job);
    ASSERT_EQ(r.status, 0) << r.err;
    const json s = json::parse(slurp(js));
    auto rows = rows_by_path(s);
    for (const std::string& f : {a, b}) ASSERT_TRUE(rows.count(f)) << f << " " << s["files"].dump();
    const json& at = s.at("files_attribution");
    EXPECT_EQ(rows[a]["read"]["bytes"], 2 * MiB) << at.dump();
    EXPECT_EQ(rows[b]["write"]["bytes"], 2 * MiB) << at.dump();
    EXPECT_EQ(rows[a]["write"]["bytes"], 0);
    EXPECT_EQ(rows[b]["read"]["bytes"], 0);
    // one file's 128 commands at issue, the other's at completion
    EXPECT_GE(at["dio_at_issue"].get<uint64_t>(), 128u) << at.dump();
    EXPECT_GE(at["by_dio"].get<uint64_t>() - at["dio_at_issue"].get<uint64_t>(), 128u) << at.dump();
}

// A request merged of several files' bios counts each bio's bytes for its own file (docs/trace.md, "What the counts
// mean"). Under a command filter only the traced side's files count: an outsider's pages merged into the same
// requests make no row and add no bytes, and requests that begin with an outsider's page are admitted for the traced
// pages they hold.
TEST(TraceFiles, InterleavedSmallFilesUnderACommandFilterAreExactPerFile) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    TracefsInstance tfs({"block_rq_complete"}, "dev == " + std::to_string(kernel_dev_of(m.loop.majmin)));
    const std::string ev = dir.file("ev.jsonl");
    const json s = trace_interleaved_small_files(m, dir, true, "--events " + ev);
    tfs.stop();
    expect_exact_small_files(m, s, tfs, {"t"}, {"o"}, read_jsonl(ev), json());
}

// The same files traced by device, without a command filter: every file's bytes are exact, however the writeback
// merged them. The events go to a binary capture: `kvio dump` and `kvio validate --join files` read each file's part
// back from it.
TEST(TraceFiles, InterleavedSmallFilesByDeviceAreExactPerFile) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    TracefsInstance tfs({"block_rq_complete"}, "dev == " + std::to_string(kernel_dev_of(m.loop.majmin)));
    const std::string ev = dir.file("ev.kvb"), dumped = dir.file("ev.jsonl"), vj = dir.file("join.json");
    const json s = trace_interleaved_small_files(m, dir, false, "--events " + ev + " --events-format bin");
    tfs.stop();
    CmdResult d = run(kvio_bin() + " dump " + ev + " -o " + dumped);
    ASSERT_EQ(d.status, 0) << d.err;
    CmdResult v = run(kvio_bin() + " validate --join files --commands " + ev + " --json " + vj);
    ASSERT_EQ(v.status, 0) << v.err;
    expect_exact_small_files(m, s, tfs, {"t", "o"}, {}, read_jsonl(dumped), json::parse(slurp(vj)));
}
