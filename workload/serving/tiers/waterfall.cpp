#include "workload/serving/tiers/waterfall.h"

#include <algorithm>
#include <chrono>

namespace kvio::serving {

WaterfallPolicy::WaterfallPolicy(std::vector<uint64_t> limits, WaterfallOptions o)
    : limits_(std::move(limits)), opt_(o), st_(limits_.size()), down_(limits_.size(), kUp) {}

uint64_t WaterfallPolicy::effective(int t) const {
    uint64_t lim = limits_[t];
    if (lim == kUnlimited || terminal(t)) return lim;
    return uint64_t(double(lim) * opt_.target_ratio);
}

bool WaterfallPolicy::too_large(int t, uint64_t entry) const {
    uint64_t bytes = fp(t, entry);
    if (limits_[t] == 0) return true;
    if (limits_[t] == kUnlimited) return false;
    if (terminal(t)) return bytes > limits_[t];
    return double(bytes) > double(limits_[t]) * opt_.large_entry_ratio;
}

// claimed + need within the effective limit, or (the benchmark's near-empty rule, capped at the limit) the tier
// is below 5 % of its limit and the entry fits under the limit itself.
bool WaterfallPolicy::fits(int t, uint64_t entry) const {
    uint64_t lim = limits_[t], bytes = fp(t, entry);
    if (lim == kUnlimited) return true;
    uint64_t c = st_[t].claimed();
    if (c + bytes <= effective(t)) return true;
    return double(c) < 0.05 * double(lim) && c + bytes <= lim;
}

bool WaterfallPolicy::begin_allocate(const std::string& key) {
    std::lock_guard<std::mutex> g(mu_);
    if (entries_.count(key) || writing_.count(key)) return false;
    writing_.insert(key);
    return true;
}

void WaterfallPolicy::end_allocate(const std::string& key) {
    std::lock_guard<std::mutex> g(mu_);
    writing_.erase(key);
    changed();
}

PlaceStep WaterfallPolicy::place_step(uint64_t bytes, int first_tier) {
    std::lock_guard<std::mutex> g(mu_);
    PlaceStep s;
    s.generation = generation_;
    for (int t = std::max(first_tier, 0); t < tiers(); ++t) {
        if (down_[t] != kUp || too_large(t, bytes)) continue;
        TierState& ts = st_[t];
        if (fits(t, bytes)) {
            ts.reserved += fp(t, bytes);
            s.kind = PlaceStep::Kind::Reserved;
            s.tier = t;
            return s;
        }
        // Benchmark rule: a non-terminal tier holding < 20 % of its limit does not evict for an entry larger
        // than half its target (it would empty itself for one entry).
        if (!terminal(t) && double(ts.resident - ts.leaving) < 0.2 * double(limits_[t]) &&
            double(fp(t, bytes)) > 0.5 * double(effective(t)))
            continue;
        bool waiting = make_room(t, bytes, 0, s.actions);
        if (!s.actions.empty()) {
            s.kind = PlaceStep::Kind::Work;
            s.tier = t;
            return s;
        }
        // Bytes on their way out of this tier (or its chain) will make room: wait rather than spill. The last
        // tier also waits for writes in progress and entries being read.
        if (waiting || (terminal(t) && ts.claimed() > 0)) {
            s.kind = PlaceStep::Kind::Wait;
            s.tier = t;
            return s;
        }
    }
    s.kind = PlaceStep::Kind::Fail;
    return s;
}

// Selects LRU victims of tier t so that `bytes` more fit once they are gone. The last tier's victims are
// deleted; a non-terminal tier's victims are demoted when the next tier can reserve them now, else room is made
// in the next tier first (the victim is picked in a later round, once that work is done). Returns true when
// bytes already leaving will make the room (nothing more to select).
bool WaterfallPolicy::make_room(int t, uint64_t bytes, int depth, std::vector<WaterfallAction>& out) {
    if (depth > opt_.max_depth) return false;
    TierState& ts = st_[t];
    uint64_t eff = effective(t);
    uint64_t after =
        ts.claimed() - ts.leaving + fp(t, bytes);  // what the tier holds once the selected victims are gone
    if (after <= eff) return ts.leaving > 0;
    uint64_t need = after - eff, freed = 0;
    for (auto it = ts.lru.begin(); it != ts.lru.end() && freed < need; ++it) {
        const std::string& key = std::get<2>(*it);
        Entry& e = entries_.at(key);
        if (e.leaving || e.readers > 0) continue;
        if (terminal(t)) {
            e.leaving = true;
            ts.leaving += fp(t, e.bytes);
            freed += fp(t, e.bytes);
            out.push_back({WaterfallAction::Kind::Delete, key, t, -1, e.bytes});
            continue;
        }
        int n = next_up(t);                       // a tier marked down is passed over
        if (too_large(n, e.bytes)) return false;  // the benchmark: "Could not make space in <next> for demotion"
        if (fits(n, e.bytes)) {
            st_[n].reserved += fp(n, e.bytes);
            e.leaving = true;
            ts.leaving += fp(t, e.bytes);
            freed += fp(t, e.bytes);
            out.push_back({WaterfallAction::Kind::Demote, key, t, n, e.bytes});
            continue;
        }
        bool waiting = make_room(n, e.bytes, depth + 1, out);
        return waiting || !out.empty();
    }
    return false;
}

void WaterfallPolicy::insert(const std::string& key, Entry e) {
    TierState& ts = st_[e.tier];
    ts.lru.insert({e.last_access, e.access_count, key});
    ts.resident += fp(e.tier, e.bytes);
    ts.entries += 1;
    entries_[key] = e;
}

void WaterfallPolicy::erase(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    TierState& ts = st_[e.tier];
    ts.lru.erase({e.last_access, e.access_count, key});
    ts.resident -= fp(e.tier, e.bytes);
    ts.entries -= 1;
    if (e.leaving) ts.leaving -= fp(e.tier, e.bytes);
    entries_.erase(it);
}

void WaterfallPolicy::changed() {
    ++generation_;
    cv_.notify_all();
}

void WaterfallPolicy::commit_write(const std::string& key, int tier, uint64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    st_[tier].reserved -= fp(tier, bytes);
    writing_.erase(key);
    Entry e;
    e.tier = tier;
    e.bytes = bytes;
    e.last_access = ++clock_;
    insert(key, e);
    changed();
}

void WaterfallPolicy::abort_write(const std::string& key, int tier, uint64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    st_[tier].reserved -= fp(tier, bytes);
    writing_.erase(key);
    changed();
}

void WaterfallPolicy::hold_cut_write(const std::string& key, int tier, uint64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    st_[tier].reserved -= fp(tier, bytes);
    st_[tier].held += fp(tier, bytes);
    writing_.erase(key);
    changed();
}

void WaterfallPolicy::finish_demotion(const WaterfallAction& a, bool ok) {
    std::lock_guard<std::mutex> g(mu_);
    st_[a.to].reserved -= fp(a.to, a.bytes);
    auto it = entries_.find(a.key);
    if (it != entries_.end()) {
        Entry e = it->second;
        erase(a.key);
        if (ok) {
            e.tier = a.to;
            e.leaving = false;
            insert(a.key, e);
        }
    }
    changed();
}

void WaterfallPolicy::finish_delete(const WaterfallAction& a) {
    std::lock_guard<std::mutex> g(mu_);
    erase(a.key);
    changed();
}

void WaterfallPolicy::wait_change(uint64_t seen, int timeout_ms) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(timeout_ms), [&] { return generation_ != seen || cut_.load(); });
}

void WaterfallPolicy::cut() {
    std::lock_guard<std::mutex> l(mu_);
    cut_ = true;
    cv_.notify_all();
}

ReadGrant WaterfallPolicy::begin_read(const std::string& key) {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
        auto it = entries_.find(key);
        if (it == entries_.end()) return {};
        if (down_[it->second.tier] == kGone && !it->second.leaving && it->second.readers == 0) {
            erase(key);  // its bytes were on a server that is gone: a miss from now on
            changed();
            return {};
        }
        // One reader per key at a time, as the benchmark's per-key lock (cache.py access_cache,
        // docs/mlperf-benchmark.md, "Tiers and the waterfall"): two loads of one entry never overlap, which also keeps
        // `kvio validate`'s offset join unambiguous.
        if (!it->second.leaving && it->second.readers == 0) break;
        if (cut_) return {-1, 0, true};
        cv_.wait(l);
    }
    Entry& e = entries_.at(key);
    TierState& ts = st_[e.tier];
    ts.lru.erase({e.last_access, e.access_count, key});
    e.last_access = ++clock_;
    e.access_count += 1;
    e.readers += 1;
    ts.lru.insert({e.last_access, e.access_count, key});
    return {e.tier, e.bytes};
}

void WaterfallPolicy::end_read(const std::string& key) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.readers > 0) it->second.readers -= 1;
    changed();
}

void WaterfallPolicy::drop_read(const std::string& key) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
        if (it->second.readers > 0) it->second.readers -= 1;
        if (it->second.readers == 0 && !it->second.leaving) erase(key);
    }
    changed();
}

bool WaterfallPolicy::contains(const std::string& key) const {
    std::lock_guard<std::mutex> g(mu_);
    return entries_.count(key) > 0;
}

std::vector<std::string> WaterfallPolicy::keys_with_prefix(const std::string& prefix) const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::string> out;
    for (const auto& [k, e] : entries_)
        if (k.compare(0, prefix.size(), prefix) == 0) out.push_back(k);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<uint64_t> WaterfallPolicy::entry_sizes() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<uint64_t> out;
    out.reserve(entries_.size());
    for (const auto& [k, e] : entries_) out.push_back(e.bytes);
    return out;
}

TierUsage WaterfallPolicy::usage(int tier) const {
    std::lock_guard<std::mutex> g(mu_);
    const TierState& ts = st_[tier];
    return {limits_[tier], ts.claimed(), ts.resident, ts.reserved, ts.entries};
}

int WaterfallPolicy::tier_of(const std::string& key) const {
    std::lock_guard<std::mutex> g(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? -1 : it->second.tier;
}

void WaterfallPolicy::set_lru(const std::string& key, uint64_t last_access, uint64_t access_count) {
    std::lock_guard<std::mutex> g(mu_);
    Entry& e = entries_.at(key);
    TierState& ts = st_[e.tier];
    ts.lru.erase({e.last_access, e.access_count, key});
    clock_ = std::max(clock_, last_access);  // later entries stay newer
    e.last_access = last_access;
    e.access_count = access_count;
    ts.lru.insert({e.last_access, e.access_count, key});
}

void WaterfallPolicy::mark_down(int tier, bool readable) {
    std::lock_guard<std::mutex> g(mu_);
    down_[tier] = std::max<uint8_t>(down_[tier], readable ? kNoWrites : kGone);
    changed();  // a placement waiting on this tier asks again and passes it over
}

bool WaterfallPolicy::is_down(int tier) const {
    std::lock_guard<std::mutex> g(mu_);
    return down_[tier] != kUp;
}

std::vector<std::string> WaterfallPolicy::lru_order(int tier) const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::string> out;
    for (const auto& k : st_[tier].lru) out.push_back(std::get<2>(k));
    return out;
}

}  // namespace kvio::serving
