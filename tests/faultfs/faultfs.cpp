// faultfs: a FUSE filesystem of the tests' own that serves one backing file as MOUNT/disk.img and injects device
// faults into chosen byte ranges of it: EIO on reads and/or writes, stalls (the request is served after a delay),
// and bit flips on read. A loop device over MOUNT/disk.img is a disk with bad sectors (docs/testing.md, "Device
// faults").
//
//   faultfs BACKING MOUNT        (runs in the foreground until unmounted: fusermount3 -u MOUNT)
//
// MOUNT/ctl takes one rule a line, applied at once to every later request:
//   eio read|write|rw OFFSET LENGTH      the request fails with EIO when it overlaps [OFFSET, OFFSET+LENGTH)
//   stall read|write|rw OFFSET LENGTH MS  the request is served MS milliseconds late
//   flip OFFSET LENGTH                    a read returns every byte in the range with its lowest bit flipped
//   clear                                 removes every rule
// Reading MOUNT/ctl gives the counters, one "name value" a line: reads, writes, eio_reads, eio_writes, stalls,
// flipped_bytes. Both files are served with direct_io: every read and write of the loop device reaches here (no
// page cache in between), so a rule acts on the next request.
#define FUSE_USE_VERSION 31
#include <fuse3/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

enum class Kind { Eio, Stall, Flip };

struct Rule {
    Kind kind;
    bool read = false, write = false;
    uint64_t off = 0, len = 0;
    unsigned ms = 0;
    bool overlaps(uint64_t o, uint64_t n) const { return o < off + len && off < o + n; }
};

int g_fd = -1;
std::mutex g_mu;
std::vector<Rule> g_rules;
std::atomic<uint64_t> g_reads{0}, g_writes{0}, g_eio_reads{0}, g_eio_writes{0}, g_stalls{0}, g_flipped{0};

constexpr const char* kDisk = "/disk.img";
constexpr const char* kCtl = "/ctl";

std::string counters() {
    std::ostringstream s;
    s << "reads " << g_reads << "\nwrites " << g_writes << "\neio_reads " << g_eio_reads << "\neio_writes "
      << g_eio_writes << "\nstalls " << g_stalls << "\nflipped_bytes " << g_flipped << "\n";
    return s.str();
}

/// Parses one ctl line into the rule list; false when it is not a rule.
bool apply_line(const std::string& line) {
    std::istringstream in(line);
    std::string verb, dir;
    in >> verb;
    if (verb.empty()) return true;
    std::lock_guard<std::mutex> lk(g_mu);
    if (verb == "clear") {
        g_rules.clear();
        return true;
    }
    Rule r{};
    if (verb == "flip") {
        r.kind = Kind::Flip;
        r.read = true;
        return (in >> r.off >> r.len) && (g_rules.push_back(r), true);
    }
    if (verb != "eio" && verb != "stall") return false;
    r.kind = verb == "eio" ? Kind::Eio : Kind::Stall;
    if (!(in >> dir >> r.off >> r.len)) return false;
    if (r.kind == Kind::Stall && !(in >> r.ms)) return false;
    r.read = dir == "read" || dir == "rw";
    r.write = dir == "write" || dir == "rw";
    if (!r.read && !r.write) return false;
    g_rules.push_back(r);
    return true;
}

/// The rules that match a request (copied: a stall sleeps without the lock).
std::vector<Rule> matching(bool is_read, uint64_t off, uint64_t n) {
    std::lock_guard<std::mutex> lk(g_mu);
    std::vector<Rule> out;
    for (const auto& r : g_rules)
        if ((is_read ? r.read : r.write) && r.overlaps(off, n)) out.push_back(r);
    return out;
}

/// Sleeps for the stall rules in `rules`; -EIO when an eio rule is among them, else 0.
int stall_or_fail(const std::vector<Rule>& rules, bool is_read) {
    for (const auto& r : rules)
        if (r.kind == Kind::Stall) {
            ++g_stalls;
            std::this_thread::sleep_for(std::chrono::milliseconds(r.ms));
        }
    for (const auto& r : rules)
        if (r.kind == Kind::Eio) {
            ++(is_read ? g_eio_reads : g_eio_writes);
            return -EIO;
        }
    return 0;
}

int fs_getattr(const char* path, struct stat* st, struct fuse_file_info*) {
    std::memset(st, 0, sizeof *st);
    if (std::strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (std::strcmp(path, kDisk) == 0) {
        struct stat b {};
        if (fstat(g_fd, &b) != 0) return -errno;
        st->st_mode = S_IFREG | 0644;
        st->st_nlink = 1;
        st->st_size = b.st_size;
        st->st_blocks = b.st_blocks;
        return 0;
    }
    if (std::strcmp(path, kCtl) == 0) {
        st->st_mode = S_IFREG | 0644;
        st->st_nlink = 1;
        st->st_size = 0;
        return 0;
    }
    return -ENOENT;
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, struct fuse_file_info*,
               enum fuse_readdir_flags) {
    if (std::strcmp(path, "/") != 0) return -ENOENT;
    fill(buf, ".", nullptr, 0, fuse_fill_dir_flags(0));
    fill(buf, "..", nullptr, 0, fuse_fill_dir_flags(0));
    fill(buf, kDisk + 1, nullptr, 0, fuse_fill_dir_flags(0));
    fill(buf, kCtl + 1, nullptr, 0, fuse_fill_dir_flags(0));
    return 0;
}

int fs_open(const char* path, struct fuse_file_info* fi) {
    if (std::strcmp(path, kDisk) != 0 && std::strcmp(path, kCtl) != 0) return -ENOENT;
    fi->direct_io = 1;  // no page cache: every request of the loop device reaches the rules
    return 0;
}

int fs_truncate(const char* path, off_t, struct fuse_file_info*) {
    return std::strcmp(path, kCtl) == 0 ? 0 : -EPERM;  // `echo > ctl` truncates first; the disk keeps its size
}

int fs_read(const char* path, char* buf, size_t n, off_t off, struct fuse_file_info*) {
    if (std::strcmp(path, kCtl) == 0) {
        const std::string s = counters();
        if (uint64_t(off) >= s.size()) return 0;
        const size_t k = std::min(n, s.size() - size_t(off));
        std::memcpy(buf, s.data() + off, k);
        return int(k);
    }
    ++g_reads;
    const auto rules = matching(true, uint64_t(off), n);
    if (int e = stall_or_fail(rules, true)) return e;
    const ssize_t got = pread(g_fd, buf, n, off);
    if (got < 0) return -errno;
    for (const auto& r : rules) {
        if (r.kind != Kind::Flip) continue;
        const uint64_t lo = std::max<uint64_t>(r.off, uint64_t(off));
        const uint64_t hi = std::min<uint64_t>(r.off + r.len, uint64_t(off) + uint64_t(got));
        for (uint64_t i = lo; i < hi; ++i) buf[i - uint64_t(off)] ^= 1;
        if (hi > lo) g_flipped += hi - lo;
    }
    return int(got);
}

int fs_write(const char* path, const char* buf, size_t n, off_t off, struct fuse_file_info*) {
    if (std::strcmp(path, kCtl) == 0) {
        std::istringstream in(std::string(buf, n));
        std::string line;
        while (std::getline(in, line))
            if (!apply_line(line)) return -EINVAL;
        return int(n);
    }
    ++g_writes;
    if (int e = stall_or_fail(matching(false, uint64_t(off), n), false)) return e;
    const ssize_t put = pwrite(g_fd, buf, n, off);
    return put < 0 ? -errno : int(put);
}

int fs_fsync(const char*, int, struct fuse_file_info*) { return fdatasync(g_fd) == 0 ? 0 : -errno; }

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: faultfs BACKING MOUNT\n");
        return 2;
    }
    g_fd = open(argv[1], O_RDWR);
    if (g_fd < 0) {
        std::fprintf(stderr, "faultfs: %s: %s\n", argv[1], std::strerror(errno));
        return 1;
    }
    fuse_operations ops{};
    ops.getattr = fs_getattr;
    ops.readdir = fs_readdir;
    ops.open = fs_open;
    ops.truncate = fs_truncate;
    ops.read = fs_read;
    ops.write = fs_write;
    ops.fsync = fs_fsync;
    // Foreground, multithreaded (a stalled request does not hold the others), readable by the loop driver as root.
    std::string mnt = argv[2];
    std::vector<std::string> args = {argv[0], "-f", "-o", "fsname=faultfs,allow_other", mnt};
    std::vector<char*> av;
    for (auto& a : args) av.push_back(a.data());
    return fuse_main(int(av.size()), av.data(), &ops, nullptr);
}
