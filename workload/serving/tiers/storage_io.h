// The direct-I/O path of the storage tier: kvio's engines (workload/engine.h, O_DIRECT) moving one entry as
// a 4 KiB header transfer followed by data transfers of at most max_io_bytes, up to qd in flight. Engines
// are not thread-safe, so each op leases one (with its registered buffers) from a pool.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "workload/engine.h"
#include "workload/serving/tiers/kv_data.h"

namespace kvio::serving {

/// Header bytes of the direct layouts: a .npy header padded to one 4 KiB block, its own transfer.
inline constexpr uint64_t kDirectHeader = 4096;

/// What moving one entry took. Seconds (CLOCK_MONOTONIC); generation of the data is not in them.
struct TransferResult {
    double host = 0;    ///< submitting transfers (io_uring queue + submit)
    double device = 0;  ///< waiting for completions (posix: the pread/pwrite calls themselves)
    uint32_t transfers = 0;
    uint64_t bytes = 0;
};

class EnginePool {
public:
    /// `engine` "posix" | "io_uring"; each leased engine has qd buffers of max_io bytes (4 KiB-aligned).
    EnginePool(const std::string& engine, uint32_t qd, uint64_t max_io);
    ~EnginePool();
    EnginePool(const EnginePool&) = delete;
    EnginePool& operator=(const EnginePool&) = delete;

    struct Slot {
        std::unique_ptr<workload::Engine> engine;
        std::vector<void*> bufs;
    };
    /// RAII lease of one engine.
    class Lease {
    public:
        Lease(EnginePool& p, std::unique_ptr<Slot> s) : pool_(p), slot_(std::move(s)) {}
        ~Lease() { pool_.give(std::move(slot_)); }
        Slot& operator*() { return *slot_; }
        Slot* operator->() { return slot_.get(); }

    private:
        EnginePool& pool_;
        std::unique_ptr<Slot> slot_;
    };
    Lease take();
    const std::string& engine_name() const { return engine_; }
    uint32_t qd() const { return qd_; }
    uint64_t max_io() const { return max_io_; }

    /// Moves an op's stream of `total` bytes through `fd`. With `header` non-empty (a store) stream bytes
    /// [0, kDirectHeader) are the header, one transfer of its own, and the rest entry bytes; without it (a
    /// load, which skips the known header) the whole stream is entry bytes. Entry bytes are `data` up to
    /// `payload`, zero after (writes). `where` maps the stream onto target offsets as consecutive
    /// {offset, len} pieces (a transfer never crosses a piece). Throws kvio::Error on a failed or short
    /// transfer. `cut` (may be empty) is asked before each transfer is queued: once it says true no transfer
    /// is queued, those in flight are reaped and OpCut (the bytes moved) is thrown, so a stop waits for at most
    /// the transfers in flight, not the op's remaining ones (docs/simulate.md, "Stopping").
    TransferResult run(Slot& s, int fd, bool write, const std::vector<std::pair<uint64_t, uint64_t>>& where,
                       uint64_t total, const std::string& header, const EntryData* data, uint64_t payload,
                       uint32_t trace_id, const std::function<bool()>& cut = {});

private:
    void give(std::unique_ptr<Slot> s);
    std::string engine_;
    uint32_t qd_;
    uint64_t max_io_;
    std::mutex mu_;
    std::vector<std::unique_ptr<Slot>> free_;
};

/// `v` rounded up to a multiple of `a`.
inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace kvio::serving
