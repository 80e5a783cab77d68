// TEMPORARY stand-in for sim-cache's MultiTierCache (no I/O, one unlimited storage tier) so the orchestrator
// builds and its tests run before the real cache is merged. Deleted at the merge of sim-cache.
#include <map>
#include <mutex>

#include "workload/serving/cache.h"

namespace kvio::serving {

const char* tier_name(Tier t) { return t == Tier::Gpu ? "gpu" : t == Tier::Cpu ? "cpu" : "storage"; }

struct MultiTierCache::Impl {
    uint64_t bpt = 0, tp = 1;
    mutable std::mutex mu;
    std::map<std::string, uint64_t> entries;
    CacheStats st;
};

MultiTierCache::MultiTierCache(const SimConfig& c, uint64_t bpt, std::ostream*) : impl_(std::make_unique<Impl>()) {
    impl_->bpt = bpt;
    impl_->tp = uint64_t(c.tensor_parallel);
}
MultiTierCache::~MultiTierCache() = default;

uint64_t MultiTierCache::entry_bytes(int64_t tokens) const { return uint64_t(tokens) * impl_->bpt / impl_->tp; }

AllocResult MultiTierCache::allocate(const std::string& key, int64_t tokens, CachePhase phase) {
    std::lock_guard lk(impl_->mu);
    AllocResult r;
    r.ok = true;
    if (impl_->entries.count(key)) {
        r.existed = true;
        return r;
    }
    uint64_t b = entry_bytes(tokens);
    impl_->entries[key] = b;
    auto& s = impl_->st;
    if (phase == CachePhase::Prefill) ++s.prefill_writes;
    ++s.write_operations;
    s.total_write_bytes += b;
    s.tier_bytes_written[2] += b;
    s.write_lat[2].push_back(0);
    return r;
}

AccessResult MultiTierCache::access(const std::string& key, CachePhase phase, CacheType type) {
    std::lock_guard lk(impl_->mu);
    AccessResult r;
    auto& s = impl_->st;
    auto it = impl_->entries.find(key);
    if (it == impl_->entries.end()) {
        ++s.cache_misses;
        return r;
    }
    r.hit = r.ok = true;
    ++s.cache_hits;
    if (type == CacheType::System) ++s.system_prompt_hits;
    if (type == CacheType::MultiTurn) ++s.multi_turn_hits;
    if (type == CacheType::User) ++s.user_cache_hits;
    if (phase == CachePhase::Decode) ++s.decode_reads;
    ++s.read_operations;
    s.total_read_bytes += it->second;
    s.tier_bytes_read[2] += it->second;
    s.read_lat[2].push_back(0);
    return r;
}

bool MultiTierCache::contains(const std::string& key) const {
    std::lock_guard lk(impl_->mu);
    return impl_->entries.count(key) > 0;
}

std::vector<std::string> MultiTierCache::keys_with_prefix(const std::string& prefix) const {
    std::lock_guard lk(impl_->mu);
    std::vector<std::string> out;
    for (const auto& [k, v] : impl_->entries)
        if (k.rfind(prefix, 0) == 0) out.push_back(k);
    return out;
}

CacheStats MultiTierCache::stats() const {
    std::lock_guard lk(impl_->mu);
    CacheStats s = impl_->st;
    s.entries[2] = impl_->entries.size();
    return s;
}

void MultiTierCache::reset_stats() {
    std::lock_guard lk(impl_->mu);
    impl_->st = CacheStats{};
}

nlohmann::ordered_json MultiTierCache::cache_stats_json(double elapsed_s, const std::string&) const {
    CacheStats s = stats();
    double gib = double(1ull << 30);
    nlohmann::ordered_json j;
    j["cache_hit_rate"] = double(s.cache_hits) / double(std::max<uint64_t>(1, s.cache_hits + s.cache_misses));
    j["cache_hits"] = s.cache_hits;
    j["cache_misses"] = s.cache_misses;
    j["gpu_entries"] = 0;
    j["cpu_entries"] = 0;
    j["storage_entries"] = s.entries[2];
    j["total_read_bytes"] = s.total_read_bytes;
    j["total_write_bytes"] = s.total_write_bytes;
    j["total_read_gb"] = double(s.total_read_bytes) / gib;
    j["total_write_gb"] = double(s.total_write_bytes) / gib;
    j["read_write_ratio"] = double(s.total_read_bytes) / double(std::max<uint64_t>(1, s.total_write_bytes));
    j["read_iops"] = s.read_operations;
    j["write_iops"] = s.write_operations;
    (void)elapsed_s;
    return j;
}

nlohmann::ordered_json MultiTierCache::kvio_json() const { return {{"stub", true}}; }
std::string MultiTierCache::gpu_tier_description() const { return "absent (stub cache)"; }
std::string MultiTierCache::storage_description() const { return "stub (no I/O)"; }

}  // namespace kvio::serving
