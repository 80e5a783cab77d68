// `kvio trace --syscalls`: each syscall record names the file its fd named (inode, filesystem device, generation),
// whether it was open with O_DIRECT, where a plain read()/write() started in it, and its size at exit
// (docs/formats.md), read back through common/syscall_trace.h as the file-level distiller reads them.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/syscall_trace.h"
#include "tests/e2e/helpers.h"

using namespace kvio;
using namespace kvio::test;
using json = nlohmann::json;

namespace {

constexpr uint64_t KiB = 1024;

struct FileId {
    uint64_t ino = 0;
    uint32_t fs_dev = 0;  // kernel dev_t (MAJOR << 20 | MINOR), as the records carry it
    uint32_t gen = 0;
    uint64_t size = 0;
};

// What stat(2) and FS_IOC_GETVERSION (ext4: i_generation) say of `path`.
FileId file_id(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    FileId id;
    id.ino = st.st_ino;
    id.fs_dev = (major(st.st_dev) << 20) | minor(st.st_dev);
    id.size = uint64_t(st.st_size);
    int fd = open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << path;
    int gen = 0;
    EXPECT_EQ(ioctl(fd, FS_IOC_GETVERSION, &gen), 0) << path;
    id.gen = uint32_t(gen);
    close(fd);
    return id;
}

// The variants of attaching the syscall programs (docs/formats.md, `syscall_hooks`), each with the events format it
// writes: both ways in and both formats reach the same fields.
struct Variant {
    const char* env;
    const char* hooks;
    const char* format;
};
const Variant kVariants[] = {{"", "per_syscall", "jsonl"},
                             {"KVIO_TRACE_RAW_SYSCALLS=1 ", "raw_syscalls", "bin"},
                             {"KVIO_TRACE_THREAD_HASHES=1 ", "per_syscall", "jsonl"}};

}  // namespace

// dd writes file A with eight plain 16 KiB write() calls and fsyncs it (conv=fsync), then a second dd reads file B,
// written before the trace, with four 64 KiB read() calls through O_DIRECT (iflag=direct).
TEST(TraceSyscallFiles, RecordsNameTheFileItsPositionAndSize) {
    Ext4Mount m(64 * 1024 * KiB);
    TempDir dir;
    const std::string a = m.mnt + "/a.bin", b = m.mnt + "/b.bin";
    ASSERT_EQ(run("dd if=/dev/urandom of=" + b + " bs=1M count=1 conv=fsync status=none").status, 0);
    const FileId idb = file_id(b);
    for (const Variant& v : kVariants) {
        SCOPED_TRACE(std::string(v.env) + v.format);
        const std::string ev = dir.file(std::string("ev.") + v.format), js = dir.file("t.json");
        const std::string io = "sh -c 'dd if=/dev/zero of=" + a +
                               " bs=16k count=8 conv=fsync status=none && dd if=" + b +
                               " of=/dev/null bs=64k count=4 iflag=direct status=none'";
        CmdResult r = run(std::string(v.env) + kvio_bin() + " trace -q -d " + m.loop.name + " --syscalls --events " +
                          ev + " --events-format " + v.format + " --json " + js + " -- " + io);
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(json::parse(slurp(js))["syscall_hooks"], v.hooks);
        const FileId ida = file_id(a);
        ASSERT_EQ(ida.size, 128 * KiB);
        ASSERT_NE(ida.ino, idb.ino);

        std::vector<SyscallRec> writes, reads, syncs;
        for (const SyscallRec& s : load_syscalls(ev, {.comm = "dd"})) {
            ASSERT_TRUE(s.has_file) << "fd " << s.fd;
            EXPECT_EQ(s.fs_dev, ida.fs_dev);  // -d: only files of the traced disk's filesystem
            if (s.kind == SysKind::Write) writes.push_back(s);
            if (s.kind == SysKind::Read) reads.push_back(s);
            if (s.kind == SysKind::Fsync) syncs.push_back(s);
        }
        ASSERT_EQ(writes.size(), 8u);
        for (size_t i = 0; i < writes.size(); ++i) {
            const SyscallRec& w = writes[i];
            SCOPED_TRACE("write " + std::to_string(i));
            EXPECT_EQ(w.ino, ida.ino);
            EXPECT_EQ(w.gen, ida.gen);
            EXPECT_FALSE(w.direct);
            EXPECT_FALSE(w.vectored);
            EXPECT_EQ(w.ret, int64_t(16 * KiB));
            EXPECT_EQ(w.count, 16 * KiB);
            EXPECT_EQ(w.offset, i * 16 * KiB);           // the file position at entry
            EXPECT_EQ(w.file_size, (i + 1) * 16 * KiB);  // bytes written so far, at exit
        }
        ASSERT_EQ(syncs.size(), 1u);
        EXPECT_EQ(syncs[0].ino, ida.ino);
        EXPECT_GT(syncs[0].ts_enter, writes.back().ts_exit);
        EXPECT_EQ(syncs[0].file_size, 128 * KiB);
        ASSERT_EQ(reads.size(), 4u);
        for (size_t i = 0; i < reads.size(); ++i) {
            const SyscallRec& rd = reads[i];
            SCOPED_TRACE("read " + std::to_string(i));
            EXPECT_EQ(rd.ino, idb.ino);
            EXPECT_EQ(rd.gen, idb.gen);
            EXPECT_TRUE(rd.direct);
            EXPECT_EQ(rd.ret, int64_t(64 * KiB));
            EXPECT_EQ(rd.offset, i * 64 * KiB);
            EXPECT_EQ(rd.file_size, idb.size);
        }
    }
}
