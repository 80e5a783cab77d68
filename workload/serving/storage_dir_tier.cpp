// Storage tier in a directory, buffered I/O: the benchmark's NVMeBackend device pattern (spec §5.8).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "workload/serving/tiers.h"

namespace kvio::serving {
namespace {

constexpr size_t kNpyHeader = 128;  // numpy 1.24's header for these shapes (spec §5.8)

std::string errno_text(const std::string& what, const std::string& path) {
    return what + " " + path + ": " + std::strerror(errno);
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw Error(errno_text("write", path));
        p += w, n -= size_t(w);
    }
}

class StorageDirTier final : public TierBackend {
public:
    explicit StorageDirTier(const std::string& dir) : dir_(dir) { delete_old_entries(); }
    std::string name() const override { return "storage-buffered"; }
    std::string description() const override {
        return dir_ + " (files <key>.npy, 128-byte header, buffered writes + fsync, reads after fadvise DONTNEED)";
    }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const std::string path = file(key);
        double gen = 0, t0 = now_s();
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw Error(errno_text("cannot create", path));
        OpTiming t;
        try {
            std::string h = npy_header(bytes, kNpyHeader);
            write_all(fd, reinterpret_cast<const uint8_t*>(h.data()), h.size(), path);
            if (bytes > 0 && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(kNpyHeader), off_t(bytes)) != 0 &&
                errno != EOPNOTSUPP)
                throw Error(errno_text("fallocate", path));
            uint8_t* chunk = thread_chunk();
            for (uint64_t off = 0; off < bytes; off += kChunkBytes) {
                size_t n = size_t(std::min<uint64_t>(kChunkBytes, bytes - off));
                double g0 = now_s();
                data.fill(off, chunk, n);
                gen += now_s() - g0;
                write_all(fd, chunk, n, path);
            }
            double t1 = now_s();
            if (::fsync(fd) != 0) throw Error(errno_text("fsync", path));
            double t2 = now_s();
            t.host = t1 - t0 - gen;
            t.device = t2 - t1;
        } catch (...) {
            ::close(fd);
            ::unlink(path.c_str());  // a failed write leaves nothing behind (the benchmark left partial files)
            throw;
        }
        if (::close(fd) != 0) {
            ::unlink(path.c_str());
            throw Error(errno_text("close", path));
        }
        t.total = now_s() - t0 - gen;
        return t;
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const std::string path = file(key);
        double t0 = now_s();
        struct stat st;
        if (::stat(path.c_str(), &st) != 0) throw Error(errno_text("stat", path));
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw Error(errno_text("cannot open", path));
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        double t1 = now_s();
        uint8_t* chunk = thread_chunk();
        uint64_t got = 0;
        for (;;) {
            ssize_t r = ::read(fd, chunk, kChunkBytes);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                std::string e = errno_text("read", path);
                ::close(fd);
                throw Error(e);
            }
            if (r == 0) break;
            got += uint64_t(r);
        }
        double t2 = now_s();
        ::close(fd);
        if (got != kNpyHeader + bytes)
            throw Error("read " + path + ": " + std::to_string(got) + " bytes, expected " +
                        std::to_string(kNpyHeader + bytes));
        return {now_s() - t0, t1 - t0, t2 - t1};
    }

    void remove(const std::string& key) override { ::unlink(file(key).c_str()); }

private:
    // The benchmark deletes every *.npy left in the cache directory by an earlier run before it starts.
    void delete_old_entries() {
        DIR* d = ::opendir(dir_.c_str());
        if (!d) throw Error(errno_text("cannot open cache directory", dir_));
        while (dirent* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0) ::unlinkat(::dirfd(d), n.c_str(), 0);
        }
        ::closedir(d);
    }
    std::string file(const std::string& key) const { return dir_ + "/" + key + ".npy"; }
    std::string dir_;
};

}  // namespace

std::unique_ptr<TierBackend> make_storage_dir_tier(const std::string& dir) {
    return std::make_unique<StorageDirTier>(dir);
}

}  // namespace kvio::serving
