// System-prompt prefix sharing (benchmark prefix_cache.py:PrefixMatcher/PrefixCacheManager, docs/mlperf-benchmark.md,
// "Multi-turn, prefix and RAG reuse").
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workload/serving/pyrandom.h"

namespace kvio::serving {

/// One of the benchmark's three system prompts as a request sees it.
struct SystemPrompt {
    std::string text;
    int64_t tokens = 0;  ///< the prompt's word count (5, 9 or 6): subtracted from the request's context
    std::string key;     ///< "kv_system_<16 hex>"
};

/// The three prompts in the benchmark's order.
const SystemPrompt& system_prompt(size_t i);
constexpr size_t kSystemPromptCount = 3;

/// Cache key of a prompt: "kv_system_" + 16 hex digits of FNV-1a 64 over (text[:500] + "_" + words). The benchmark
/// takes SHA-256's first 16 hex digits of the same string; only the key's spelling differs (it is never shared
/// with another program).
std::string system_prompt_key(const std::string& text, int64_t words);

/// Per-run prefix statistics (summary.prefix_cache_stats) and the detection draw. Thread-safe.
class PrefixCacheManager {
public:
    PrefixCacheManager(double hit_probability, uint64_t bytes_per_token) : p_(hit_probability), bpt_(bytes_per_token) {}
    /// detect_system_prompt: with probability p (rng.random() < p) one prompt chosen uniformly (prefix_hits,
    /// system_prompt_reuse, bytes_saved += tokens × bytes_per_token), else none (prefix_misses).
    std::optional<SystemPrompt> detect(PyRandom& rng);
    /// {prefix_hits, prefix_misses, system_prompt_reuse, common_phrase_reuse, bytes_saved}.
    nlohmann::ordered_json stats_json() const;

private:
    double p_;
    uint64_t bpt_;
    mutable std::mutex mu_;
    uint64_t hits_ = 0, misses_ = 0, bytes_saved_ = 0;
};

}  // namespace kvio::serving
