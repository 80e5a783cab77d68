// The waterfall placement policy of the multi-tier KV cache (docs/mlperf-benchmark.md, "Tiers and the waterfall";
// benchmark cache.py:_ensure_space_in_tier / _demote_entry), on sizes alone: no I/O happens in here. The cache asks for
// a placement step, executes the demotions and deletions it is handed (I/O outside the policy lock), reports them done,
// and asks again until the entry has a reservation.
//
// The rules (the benchmark's): tiers in order (GPU if present, CPU, storage); a non-terminal tier fills to
// target_ratio × limit (0.8), the last tier to 100 %; a non-terminal tier refuses an entry larger than
// large_entry_ratio × limit (0.95) and the next tier is tried; room is made by demoting the tier's LRU entries
// (ascending last_access, access_count) to the next tier, recursively (depth cap), and by deleting LRU entries on
// the last tier; entries are never promoted; a limit of 0 skips the tier; kUnlimited never evicts.
//
// kvio's accounting (the benchmark's drift fixed, docs/simulate.md): per tier `claimed` = resident bytes
// (including entries selected to leave, until their bytes are gone) + reservations of writes in progress, and a
// reservation is only made when claimed + need <= the tier's effective limit. So the bytes present or being
// written in a tier never exceed its limit, whatever the number of threads. The benchmark's near-empty rule
// (usage < 5 % admits anything) is kept but capped at the limit; its empty-snapshot recount (which discarded
// other threads' reservations) and its admit-anyway on a full last tier do not exist here.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kvio::serving {

/// A tier limit meaning "no limit" (trace mode storage without --storage-capacity-gb).
inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

struct WaterfallOptions {
    double target_ratio = 0.8;        ///< eviction.target_usage_ratio
    double large_entry_ratio = 0.95;  ///< eviction.large_entry_limit_ratio
    int max_depth = 10;               ///< eviction.max_recursion_depth
    /// Bytes an entry of `bytes` occupies in `tier` (what the limit counts): default the entry size; the cache
    /// adds the storage layout's header and block rounding so the limit holds on disk (du).
    std::function<uint64_t(int tier, uint64_t bytes)> footprint;
};

/// One piece of work a placement step hands to the caller. Demote: read `key` from tier `from`, write it to
/// tier `to` (already reserved there), remove it from `from`, then finish_demotion(). Delete: remove `key`
/// from the last tier, then finish_delete().
struct WaterfallAction {
    enum class Kind { Demote, Delete } kind = Kind::Delete;
    std::string key;
    int from = 0, to = -1;  ///< tier indexes (to = -1 for Delete)
    uint64_t bytes = 0;
};

/// The answer of place_step().
struct PlaceStep {
    enum class Kind {
        Reserved,  ///< `bytes` reserved in `tier`: write, then commit_write() or abort_write()
        Work,      ///< execute `actions` (every one of them), then ask again
        Wait,      ///< bytes are leaving or being written: wait_change(generation), then ask again
        Fail,      ///< no tier can ever take the entry (larger than every usable tier)
    } kind = Kind::Fail;
    int tier = -1;
    std::vector<WaterfallAction> actions;
    uint64_t generation = 0;  ///< state generation seen by this step (for wait_change)
};

/// Where a read goes (begin_read()).
struct ReadGrant {
    int tier = -1;
    uint64_t bytes = 0;
    bool cut = false;  ///< no read: the run is stopping (cut()) and it would have waited
};

/// Per-tier figures (bytes).
struct TierUsage {
    uint64_t limit = 0;
    uint64_t claimed = 0;   ///< resident + reserved
    uint64_t resident = 0;  ///< committed entries, including those selected to leave
    uint64_t reserved = 0;  ///< writes in progress (new entries and demotion destinations)
    uint64_t entries = 0;   ///< committed entries
};

class WaterfallPolicy {
public:
    /// `limits[i]` = limit of tier i in bytes (order = waterfall order; 0 = skipped; kUnlimited).
    explicit WaterfallPolicy(std::vector<uint64_t> limits, WaterfallOptions o = {});

    int tiers() const { return int(limits_.size()); }
    uint64_t limit(int tier) const { return limits_[tier]; }

    /// Starts an allocation of `key`: false when the key is cached or being written already (benchmark step 1).
    bool begin_allocate(const std::string& key);
    /// One placement round for `bytes` (see PlaceStep), trying tiers from `first_tier` on. Never blocks. After
    /// Work or Wait the caller passes the step's tier back as first_tier, so a tier that gave up stays given up
    /// (the benchmark's single pass over the tiers).
    PlaceStep place_step(uint64_t bytes, int first_tier = 0);
    /// The write of `key` into the reserved tier succeeded: the reservation becomes a resident entry.
    void commit_write(const std::string& key, int tier, uint64_t bytes);
    /// The write failed or was given up: the reservation is released, nothing becomes resident.
    void abort_write(const std::string& key, int tier, uint64_t bytes);
    /// The write was cut at the stop and its bytes stay on the tier until the tier is closed (the storage tiers
    /// remove a cut write's file at their end, docs/simulate.md, "Stop rules"): nothing becomes resident, but the
    /// reservation stays claimed, so the writes of the drain never count on room the filesystem does not have.
    void hold_cut_write(const std::string& key, int tier, uint64_t bytes);
    /// Ends a begin_allocate() that never got a reservation.
    void end_allocate(const std::string& key);

    /// A demotion's bytes are in `to` and gone from `from` (ok), or it failed (the entry is dropped from both).
    void finish_demotion(const WaterfallAction& a, bool ok);
    /// A deletion's bytes are gone.
    void finish_delete(const WaterfallAction& a);

    /// Blocks until the state generation differs from `seen` or `timeout_ms` passed.
    void wait_change(uint64_t seen, int timeout_ms);

    /// A hit: marks `key` read (last_access, access_count updated; it cannot be selected to leave until
    /// end_read()). Waits while the entry is being demoted or deleted, or read by another thread (reads of one key
    /// are serialised, as the benchmark's per-key lock does: docs/mlperf-benchmark.md, "Tiers and the waterfall").
    /// Empty grant (tier -1) on a miss.
    ReadGrant begin_read(const std::string& key);
    /// The run is stopping: waits in begin_read() and wait_change() end now and from now on (cut_requested()).
    void cut();
    bool cut_requested() const { return cut_.load(); }
    void end_read(const std::string& key);
    /// Ends a begin_read() whose entry turned out never to have reached its tier (a remote write-back write lost at a
    /// fault): the entry is dropped, its bytes released; a later read is a miss.
    void drop_read(const std::string& key);

    bool contains(const std::string& key) const;
    std::vector<std::string> keys_with_prefix(const std::string& prefix) const;
    /// The sizes (bytes, as committed) of every resident entry of every tier, in no order: the block-size
    /// statistics the benchmark prints from its live cache entries (docs/mlperf-benchmark.md, "Console report").
    std::vector<uint64_t> entry_sizes() const;
    TierUsage usage(int tier) const;
    /// Tier of a committed entry, -1 when absent.
    int tier_of(const std::string& key) const;
    /// Sets last_access / access_count of a committed entry (tests build LRU orders with it).
    void set_lru(const std::string& key, uint64_t last_access, uint64_t access_count);
    /// Keys of `tier` in LRU order (oldest first).
    std::vector<std::string> lru_order(int tier) const;
    /// The tier takes no more entries, for the rest of the run (a remote server that is full or gone:
    /// docs/simulate.md, "Remote tier"): placement skips it, the tier above demotes past it (to the next tier that is
    /// up, or deletes when none is: it is then the last tier). With `readable` false its entries are gone too: a read
    /// of one is a miss and drops the entry. Idempotent.
    void mark_down(int tier, bool readable);
    /// Whether mark_down() was called for `tier`.
    bool is_down(int tier) const;

private:
    struct Entry {
        int tier = 0;
        uint64_t bytes = 0;
        uint64_t last_access = 0, access_count = 1;
        bool leaving = false;
        int readers = 0;
    };
    using LruKey = std::tuple<uint64_t, uint64_t, std::string>;  // (last_access, access_count, key)
    struct TierState {
        std::set<LruKey> lru;
        uint64_t resident = 0, reserved = 0, leaving = 0, entries = 0;
        uint64_t held = 0;  ///< bytes of cut writes still on the tier (hold_cut_write)
        uint64_t claimed() const { return resident + reserved + held; }
    };

    /// The first tier after `t` that is not down (tiers() when none is).
    int next_up(int t) const {
        int n = t + 1;
        while (n < tiers() && down_[n] != kUp) ++n;
        return n;
    }
    bool terminal(int t) const { return next_up(t) == tiers(); }
    uint64_t fp(int t, uint64_t bytes) const { return opt_.footprint ? opt_.footprint(t, bytes) : bytes; }
    uint64_t effective(int t) const;
    bool too_large(int t, uint64_t bytes) const;
    bool fits(int t, uint64_t bytes) const;
    bool make_room(int t, uint64_t bytes, int depth, std::vector<WaterfallAction>& out);
    void insert(const std::string& key, Entry e);
    void erase(const std::string& key);
    void changed();

    std::vector<uint64_t> limits_;
    WaterfallOptions opt_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> cut_{false};
    enum : uint8_t { kUp = 0, kNoWrites = 1, kGone = 2 };
    std::vector<uint8_t> down_;  ///< per tier (mark_down)
    uint64_t generation_ = 0, clock_ = 0;
    std::unordered_map<std::string, Entry> entries_;
    std::unordered_set<std::string> writing_;
    std::vector<TierState> st_;
};

}  // namespace kvio::serving
