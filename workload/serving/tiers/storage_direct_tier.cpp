// Storage tier in a directory through kvio's engines with O_DIRECT (--storage-io direct | io_uring): the
// benchmark's files (<key>.npy), but with a 4 KiB-aligned .npy header and the data padded to 4 KiB, so every
// transfer is aligned and capped at the device's default_max_io (workload/target.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "workload/execute.h"
#include "workload/serving/tiers/storage_common.h"
#include "workload/serving/tiers/storage_io.h"

namespace kvio::serving {
namespace {

class DirectDirTier final : public StorageTier {
public:
    explicit DirectDirTier(const StorageOptions& o) : dir_(o.path), engine_(o.io == "io_uring" ? "io_uring" : "posix") {
        delete_npy_files(dir_);
        try {
            target_ = workload::inspect_target(dir_);
        } catch (const Error&) {}
        uint64_t max_io = o.max_io_bytes ? o.max_io_bytes
                          : target_      ? workload::default_max_io(*target_, false)
                                         : 128 * 1024;
        if (max_io % 4096) throw Error("--max-io-bytes " + std::to_string(max_io) + " is not a multiple of 4096");
        pool_ = std::make_unique<EnginePool>(engine_, engine_ == "io_uring" ? o.qd : 1, max_io);
        sem_ = open_semantic_log(o, target_ ? &*target_ : nullptr, engine_, "files", false, kDirectHeader,
                                 pool_->max_io());
    }
    ~DirectDirTier() override {
        if (sem_) sem_->close();
        for (const auto& p : cut_files_) ::unlink(p.c_str());
    }
    std::string name() const override { return "storage-" + std::string(engine_ == "posix" ? "direct" : "io_uring"); }
    std::string description() const override {
        std::string fs = target_ ? " on " + target_->fs_type + " (" + target_->dev.name + ")" : "";
        return dir_ + fs + ": files <key>.npy, 4 KiB .npy header, O_DIRECT via the " + engine_ +
               " engine, transfers <= " + std::to_string(pool_->max_io()) + " B, qd " + std::to_string(pool_->qd());
    }
    uint64_t footprint(uint64_t bytes) const override {
        return round_up(kDirectHeader + round_up(bytes, 4096), block_);
    }
    uint64_t auto_capacity() const override { return dir_auto_capacity(dir_); }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const std::string path = npy_path(dir_, key);
        const uint64_t total = kDirectHeader + round_up(bytes, 4096);
        StorageOpRecord rec{true, key, bytes, total, kDirectHeader};
        rec.ts_start = workload::monotonic_ns();
        double t0 = now_s();
        auto lease = pool_->take();
        int fd = lease->engine->open(path, workload::OpenFor::Store, true);
        OpTiming t;
        try {
            if (::fallocate(fd, 0, 0, off_t(total)) != 0 && errno != EOPNOTSUPP)
                throw Error(errno_text("fallocate", path));
            t = transfer(*lease, fd, 0, rec, npy_header(bytes, kDirectHeader), &data, t0, path);
        } catch (const OpCut&) {
            lease->engine->close(fd);
            // As the buffered tier: the file of a cut write goes in the destructor, after the run's clock stopped.
            std::lock_guard<std::mutex> g(cut_mu_);
            cut_files_.push_back(path);
            throw;
        } catch (...) {
            lease->engine->close(fd);
            ::unlink(path.c_str());
            throw;
        }
        lease->engine->close(fd);
        return t;
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const std::string path = npy_path(dir_, key);
        const uint64_t total = kDirectHeader + round_up(bytes, 4096);
        StorageOpRecord rec{false, key, bytes, total - kDirectHeader, 0};  // a load reads the data, not the header
        rec.ts_start = workload::monotonic_ns();
        double t0 = now_s();
        struct stat st;
        if (::stat(path.c_str(), &st) != 0) throw Error(errno_text("stat", path));
        if (uint64_t(st.st_size) < total)
            throw Error(path + " holds " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(total));
        auto lease = pool_->take();
        int fd = lease->engine->open(path, workload::OpenFor::Load, false);
        OpTiming t;
        try {
            t = transfer(*lease, fd, kDirectHeader, rec, {}, nullptr, t0, path);
        } catch (...) {
            lease->engine->close(fd);
            throw;
        }
        lease->engine->close(fd);
        return t;
    }

    void remove(const std::string& key) override { ::unlink(npy_path(dir_, key).c_str()); }

private:
    // Moves rec.bytes between file offset `off` and the engine (a store: `header` first, then `data`), fills in
    // the record and writes it. `t0` = when the op started: open, stat and fallocate are host time.
    OpTiming transfer(EnginePool::Slot& s, int fd, uint64_t off, StorageOpRecord& rec, const std::string& header,
                      const EntryData* data, double t0, const std::string& path) {
        if (sem_) rec.trace_id = sem_->next_trace_id();
        double t1 = now_s();
        TransferResult r = pool_->run(s, fd, rec.store, {{off, rec.bytes}}, rec.bytes, header, data, rec.payload_bytes,
                                      rec.trace_id, [this] { return cut_requested(); });
        rec.transfers = r.transfers;
        rec.ts = workload::monotonic_ns();
        if (sem_) record(rec, fd, path);
        OpTiming t;
        t.host = (t1 - t0) + r.host;
        t.device = r.device;
        t.total = t.host + t.device;
        return t;
    }

    void record(StorageOpRecord& rec, int fd, const std::string& path) {
        try {
            rec.extents = merge_adjacent(
                workload::device_extents(*target_, fd, kDirectHeader - rec.header_bytes, rec.bytes, path));
        } catch (const Error& e) {
            rec.error = e.what();
        }
        sem_->write(rec);
    }

    std::string dir_, engine_;
    uint64_t block_ = dir_block_bytes(dir_);
    std::optional<workload::TargetInfo> target_;
    std::unique_ptr<EnginePool> pool_;
    std::unique_ptr<StorageSemanticLog> sem_;
    std::mutex cut_mu_;
    std::vector<std::string> cut_files_;  // files of cut writes, removed by the destructor
};

}  // namespace

std::unique_ptr<StorageTier> make_direct_dir_tier(const StorageOptions& o) {
    return std::make_unique<DirectDirTier>(o);
}

}  // namespace kvio::serving
