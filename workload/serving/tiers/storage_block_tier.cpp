// Storage tier on a raw block device (--cache-dir /dev/X): entries in 1 MiB-aligned extents after the
// device's first MiB (extent_alloc.h), a 4 KiB .npy header then the data, O_DIRECT through kvio's engines.
// The device is checked as kvio gen checks its targets (workload/target.h check_device_safe) and refused
// read-only.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <unordered_map>

#include "common/error.h"
#include "workload/execute.h"
#include "workload/serving/tiers/extent_alloc.h"
#include "workload/serving/tiers/storage_common.h"
#include "workload/serving/tiers/storage_io.h"

namespace kvio::serving {
namespace {

constexpr uint64_t kAlign = 1 << 20;     // extent alignment
constexpr uint64_t kReserved = 1 << 20;  // first MiB left alone (partition tables, signatures)

class BlockTier final : public StorageTier {
public:
    explicit BlockTier(const StorageOptions& o)
        : path_(o.path),
          engine_(o.io == "io_uring" ? "io_uring" : "posix"),
          target_(workload::inspect_target(o.path)),
          alloc_(kReserved, target_.capacity_bytes, kAlign) {
        workload::check_device_safe(target_, o.force);
        refuse_read_only();
        fd_ = ::open(path_.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
        if (fd_ < 0 && errno == EROFS) throw Error("refusing " + path_ + ": the device is read-only");
        if (fd_ < 0) throw Error(errno_text("cannot open", path_));
        uint64_t max_io = o.max_io_bytes ? o.max_io_bytes : workload::default_max_io(target_, false);
        if (max_io % 4096) throw Error("--max-io-bytes " + std::to_string(max_io) + " is not a multiple of 4096");
        pool_ = std::make_unique<EnginePool>(engine_, engine_ == "io_uring" ? o.qd : 1, max_io);
        sem_ = open_semantic_log(o, &target_, engine_, "files", false, kDirectHeader, pool_->max_io());
    }
    ~BlockTier() override {
        if (sem_) sem_->close();
        ::close(fd_);
    }
    std::string name() const override { return "storage-block"; }
    std::string description() const override {
        return path_ + " (raw block device, " + std::to_string(alloc_.capacity()) +
               " B in 1 MiB extents after the first MiB, 4 KiB header, O_DIRECT via the " + engine_ +
               " engine, transfers <= " + std::to_string(pool_->max_io()) + " B, qd " + std::to_string(pool_->qd()) +
               ")";
    }
    uint64_t footprint(uint64_t bytes) const override {
        return round_up(kDirectHeader + round_up(bytes, 4096), kAlign);
    }
    uint64_t auto_capacity() const override { return alloc_.capacity(); }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const uint64_t total = kDirectHeader + round_up(bytes, 4096);
        ExtentAllocator::Pieces where;
        {
            std::lock_guard<std::mutex> g(mu_);
            where = alloc_.allocate(footprint(bytes));
        }
        if (where.empty()) throw Error(path_ + ": no room for " + std::to_string(total) + " bytes");
        StorageOpRecord rec{true, key, bytes, total, kDirectHeader};
        rec.ts_start = workload::monotonic_ns();
        OpTiming t;
        try {
            auto lease = pool_->take();
            if (sem_) rec.trace_id = sem_->next_trace_id();
            TransferResult r = pool_->run(*lease, fd_, true, where, total, npy_header(bytes, kDirectHeader), &data,
                                          bytes, rec.trace_id, [this] { return cut_requested(); });
            t = {r.host + r.device, r.host, r.device};
            rec.transfers = r.transfers;
        } catch (...) {
            std::lock_guard<std::mutex> g(mu_);
            alloc_.release(where);
            throw;
        }
        rec.ts = workload::monotonic_ns();
        if (sem_) record(rec, where);
        std::lock_guard<std::mutex> g(mu_);
        entries_[key] = std::move(where);
        return t;
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        ExtentAllocator::Pieces where;
        {
            std::lock_guard<std::mutex> g(mu_);
            auto it = entries_.find(key);
            if (it == entries_.end()) throw Error(path_ + ": no entry '" + key + "'");
            where = it->second;
        }
        const uint64_t io = round_up(bytes, 4096);
        StorageOpRecord rec{false, key, bytes, io, 0};  // a load reads the data, not the header
        rec.ts_start = workload::monotonic_ns();
        where = skip(where, kDirectHeader);
        auto lease = pool_->take();
        if (sem_) rec.trace_id = sem_->next_trace_id();
        TransferResult r = pool_->run(*lease, fd_, false, where, io, {}, nullptr, bytes, rec.trace_id,
                                      [this] { return cut_requested(); });
        rec.transfers = r.transfers;
        rec.ts = workload::monotonic_ns();
        if (sem_) record(rec, where);
        return {r.host + r.device, r.host, r.device};
    }

    void remove(const std::string& key) override {
        std::lock_guard<std::mutex> g(mu_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return;
        alloc_.release(it->second);
        entries_.erase(it);
    }

private:
    // The pieces without their first `n` bytes.
    static ExtentAllocator::Pieces skip(const ExtentAllocator::Pieces& p, uint64_t n) {
        ExtentAllocator::Pieces out;
        for (auto [off, len] : p) {
            uint64_t k = std::min(n, len);
            n -= k;
            if (len > k) out.push_back({off + k, len - k});
        }
        return out;
    }

    // BLKROGET: a read-only device opens O_RDWR for root, and only its writes fail.
    void refuse_read_only() const {
        int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw Error(errno_text("cannot open", path_));
        int ro = 0;
        int r = ::ioctl(fd, BLKROGET, &ro);
        ::close(fd);
        if (r == 0 && ro) throw Error("refusing " + path_ + ": the device is read-only");
    }

    // The op's bytes on the whole disk: the pieces clipped to the op's length, shifted by the partition start.
    void record(StorageOpRecord& rec, const ExtentAllocator::Pieces& where) {
        uint64_t left = rec.bytes;
        for (auto [off, len] : where) {
            if (left == 0) break;
            uint64_t n = std::min(len, left);
            rec.extents.push_back({target_.part_start_bytes + off, n});
            left -= n;
        }
        rec.extents = merge_adjacent(rec.extents);
        sem_->write(rec);
    }

    std::string path_, engine_;
    workload::TargetInfo target_;
    std::mutex mu_;
    ExtentAllocator alloc_;
    std::unordered_map<std::string, ExtentAllocator::Pieces> entries_;
    int fd_ = -1;
    std::unique_ptr<EnginePool> pool_;
    std::unique_ptr<StorageSemanticLog> sem_;
};

}  // namespace

std::unique_ptr<StorageTier> make_block_tier(const StorageOptions& o) { return std::make_unique<BlockTier>(o); }

}  // namespace kvio::serving
