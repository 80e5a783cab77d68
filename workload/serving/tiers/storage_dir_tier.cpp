// Storage tier in a directory, buffered I/O: the benchmark's NVMeBackend device pattern (docs/mlperf-benchmark.md,
// "Storage I/O and data generation").
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "common/error.h"
#include "workload/execute.h"
#include "workload/serving/tiers/storage_common.h"
#include "workload/serving/tiers/storage_io.h"

namespace kvio::serving {
namespace {

// Entry bytes per writev: two iovecs per 4 KiB block (its stamp, then the pool's rest of it) within IOV_MAX (1024).
constexpr size_t kGatherBlocks = 512;
constexpr size_t kGatherBytes = kGatherBlocks * 4096;

/// Seconds spent inside system calls, summed over an op (kvio's host/device split: OpTiming::syscall).
struct SyscallClock {
    double s = 0;
    template <class F>
    auto operator()(F&& f) {
        double t = now_s();
        auto r = f();
        s += now_s() - t;
        return r;
    }
};

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path, SyscallClock& sc) {
    while (n > 0) {
        ssize_t w = sc([&] { return ::write(fd, p, n); });
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw Error(errno_text("write", path));
        p += w, n -= size_t(w);
    }
}

void writev_all(int fd, iovec* iov, size_t n, const std::string& path, SyscallClock& sc) {
    while (n > 0) {
        ssize_t w = sc([&] { return ::writev(fd, iov, int(n)); });
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw Error(errno_text("write", path));
        for (size_t left = size_t(w); left > 0;) {  // a short writev: skip what went out
            if (left >= iov->iov_len)
                left -= iov->iov_len, ++iov, --n;
            else
                iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left, iov->iov_len -= left, left = 0;
        }
    }
}

class BufferedDirTier final : public StorageTier {
public:
    explicit BufferedDirTier(const StorageOptions& o) : dir_(o.path) {
        delete_npy_files(dir_);
        try {
            target_ = workload::inspect_target(dir_);
        } catch (const Error&) {  // tmpfs and other filesystems without a block device
        }
        sem_ = open_semantic_log(o, target_ ? &*target_ : nullptr, "posix", "files", true, kBufferedNpyHeaderBytes,
                                 kGatherBytes);
    }
    ~BufferedDirTier() override {
        if (sem_) sem_->close();
        for (const auto& p : cut_files_) ::unlink(p.c_str());
    }
    std::string name() const override { return "storage-buffered"; }
    std::string description() const override {
        std::string fs = target_ ? " on " + target_->fs_type + " (" + target_->dev.name + ")" : "";
        return dir_ + fs +
               ": files <key>.npy, 128-byte .npy header, buffered writes + fsync, reads after fadvise DONTNEED";
    }
    uint64_t footprint(uint64_t bytes) const override { return round_up(kBufferedNpyHeaderBytes + bytes, block_); }
    uint64_t auto_capacity() const override { return dir_auto_capacity(dir_); }

    // Write: the data goes from a copy of the noise pool straight to writev, so the kernel's copy into the page
    // cache is the only copy, as fio's write from its buffer is. Each 2 MiB chunk's stamps are XORed into a pool
    // copy in place (StampedRange: one iovec, two where the pool wraps) and back after the writev: the stamps in
    // iovecs of their own (gather, 2 per 4 KiB block) cost ~15-20 % of the tmpfs write path in the kernel's iovec
    // walk (docs/performance.md, simulate). When every copy is in use, gather is the fallback.
    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const std::string path = npy_path(dir_, key);
        StorageOpRecord rec;
        rec.store = true;
        rec.key = key;
        rec.payload_bytes = bytes;
        rec.header_bytes = kBufferedNpyHeaderBytes;
        rec.ts_start = workload::monotonic_ns();
        SyscallClock sc;
        double gen = 0, t0 = now_s();
        int fd = sc([&] { return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); });
        if (fd < 0) throw Error(errno_text("cannot create", path));
        OpTiming t;
        try {
            std::string h = npy_header(bytes, kBufferedNpyHeaderBytes);
            write_all(fd, reinterpret_cast<const uint8_t*>(h.data()), h.size(), path, sc);
            if (bytes > 0 &&
                sc([&] {
                    return ::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(kBufferedNpyHeaderBytes), off_t(bytes));
                }) != 0 &&
                errno != EOPNOTSUPP)
                throw Error(errno_text("fallocate", path));
            thread_local iovec iov[2 * kGatherBlocks];
            thread_local uint8_t stamps[16 * kGatherBlocks];
            for (uint64_t off = 0; off < bytes;) {
                if (cut_requested()) throw OpCut(kBufferedNpyHeaderBytes + off);
                const size_t want = size_t(std::min<uint64_t>(kGatherBytes, bytes - off));
                size_t n_iov = 0, n = 0;
                double g0 = now_s();  // generation (stamping, gathering): not timed
                std::optional<StampedRange> r(std::in_place, data, off, want);
                if (r->ok()) {
                    n_iov = r->n_iov(), n = r->bytes();
                    std::copy(r->iov(), r->iov() + n_iov, iov);
                } else {  // every pool copy is in use: iovecs per block, no waiting
                    r.reset();
                    n = data.gather(off, want, iov, 2 * kGatherBlocks, n_iov, stamps);
                }
                gen += now_s() - g0;
                writev_all(fd, iov, n_iov, path, sc);
                g0 = now_s();
                r.reset();  // stamps undone, the copy back for the next writer (an exception does it too)
                gen += now_s() - g0;
                off += n;
                rec.transfers++;
            }
            double t1 = now_s();
            if (sc([&] { return ::fsync(fd); }) != 0) throw Error(errno_text("fsync", path));
            double t2 = now_s();
            t.host = t1 - t0 - gen;
            t.device = t2 - t1;
            rec.ts = workload::monotonic_ns();
            rec.bytes = kBufferedNpyHeaderBytes + bytes;
            if (sem_) record(rec, fd, path);
        } catch (const OpCut&) {
            ::close(fd);
            // A cut write leaves nothing behind either, but its file goes after the run's clock has stopped (the
            // destructor): unlinking entries fallocated in full was the whole drain (0.2-2 s of freeing pages on
            // tmpfs, docs/performance.md). Nothing writes the key again: cuts only happen at the stop.
            std::lock_guard<std::mutex> g(cut_mu_);
            cut_files_.push_back(path);
            throw;
        } catch (...) {
            ::close(fd);
            ::unlink(path.c_str());  // a failed write leaves nothing behind (the benchmark left partial files)
            throw;
        }
        if (sc([&] { return ::close(fd); }) != 0) {
            ::unlink(path.c_str());
            throw Error(errno_text("close", path));
        }
        t.total = now_s() - t0 - gen;
        t.syscall = sc.s;
        t.gen = gen;
        return t;
    }

    // --verify-reads: file bytes [pos, pos + n) read into `buf`, their payload part checked against the entry's
    // bytes (EntryData::first_mismatch), its CPU time and byte count added to `t`. Throws "payload mismatch in entry
    // KEY at payload byte N (file PATH)".
    void check_read(const std::string& key, const std::string& path, uint64_t pos, const uint8_t* buf, size_t n,
                    OpTiming& t) const {
        if (pos + n <= kBufferedNpyHeaderBytes) return;
        const double c0 = thread_cpu_s();
        const uint64_t skip = pos < kBufferedNpyHeaderBytes ? kBufferedNpyHeaderBytes - pos : 0;
        const EntryData d(*check_pool_, key_hash(key, check_seed_));
        const uint64_t bad = d.first_mismatch(pos + skip - kBufferedNpyHeaderBytes, buf + skip, n - size_t(skip));
        t.check_cpu += thread_cpu_s() - c0;
        t.checked_bytes += n - size_t(skip);
        if (bad != EntryData::kNoMismatch)
            throw PayloadMismatch("payload mismatch in entry " + key + " at payload byte " + std::to_string(bad) +
                                  " (file byte " + std::to_string(bad + kBufferedNpyHeaderBytes) + " of " + path + ")");
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const std::string path = npy_path(dir_, key);
        StorageOpRecord rec;
        rec.store = false;
        rec.key = key;
        rec.payload_bytes = bytes;
        rec.ts_start = workload::monotonic_ns();
        SyscallClock sc;
        double t0 = now_s();
        struct stat st;
        if (sc([&] { return ::stat(path.c_str(), &st); }) != 0) throw Error(errno_text("stat", path));
        int fd = sc([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
        if (fd < 0) throw Error(errno_text("cannot open", path));
        sc([&] { return ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); });
        double t1 = now_s();
        uint8_t* chunk = thread_chunk();
        uint64_t got = 0;
        OpTiming checked;  // check_cpu and checked_bytes of --verify-reads
        for (;;) {
            if (cut_requested()) {
                ::close(fd);
                throw OpCut(got);
            }
            ssize_t r = sc([&] { return ::read(fd, chunk, kChunkBytes); });
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                std::string e = errno_text("read", path);
                ::close(fd);
                throw Error(e);
            }
            if (r == 0) break;
            if (check_pool_) check_read(key, path, got, chunk, size_t(r), checked);
            got += uint64_t(r);
            rec.transfers++;
        }
        double t2 = now_s();
        rec.ts = workload::monotonic_ns();
        rec.bytes = got;
        if (sem_) {
            try {
                record(rec, fd, path);
            } catch (...) {
                ::close(fd);
                throw;
            }
        }
        sc([&] { return ::close(fd); });
        if (got != kBufferedNpyHeaderBytes + bytes)
            throw Error("read " + path + ": " + std::to_string(got) + " bytes, expected " +
                        std::to_string(kBufferedNpyHeaderBytes + bytes));
        OpTiming t{now_s() - t0, t1 - t0, t2 - t1};
        t.syscall = sc.s;
        t.check_cpu = checked.check_cpu;
        t.checked_bytes = checked.checked_bytes;
        return t;
    }

    void remove(const std::string& key) override { ::unlink(npy_path(dir_, key).c_str()); }

private:
    void record(StorageOpRecord& rec, int fd, const std::string& path) {
        rec.trace_id = sem_->next_trace_id();
        try {
            rec.extents = merge_adjacent(workload::device_extents(*target_, fd, 0, rec.bytes, path));
        } catch (const Error& e) {
            rec.error = e.what();
        }
        sem_->write(rec);
    }

    std::string dir_;
    uint64_t block_ = dir_block_bytes(dir_);
    std::optional<workload::TargetInfo> target_;
    std::unique_ptr<StorageSemanticLog> sem_;
    std::mutex cut_mu_;
    std::vector<std::string> cut_files_;  // files of cut writes, removed by the destructor
};

}  // namespace

std::unique_ptr<StorageTier> make_buffered_dir_tier(const StorageOptions& o) {
    return std::make_unique<BufferedDirTier>(o);
}

}  // namespace kvio::serving
