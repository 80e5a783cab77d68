#include "workload/serving/prefix.h"

#include <array>
#include <cstdio>

namespace kvio::serving {

std::string system_prompt_key(const std::string& text, int64_t words) {
    std::string s = text.substr(0, 500) + "_" + std::to_string(words);
    uint64_t h = 14695981039346656037ull;
    for (unsigned char ch : s) {
        h ^= ch;
        h *= 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return "kv_system_" + std::string(hex);
}

const SystemPrompt& system_prompt(size_t i) {
    static const std::array<SystemPrompt, kSystemPromptCount> prompts = [] {
        std::array<SystemPrompt, kSystemPromptCount> p{{
            {"You are a helpful assistant.", 5, ""},
            {"You are an AI assistant helping with coding tasks.", 9, ""},
            {"You are a professional writing assistant.", 6, ""},
        }};
        for (auto& x : p) x.key = system_prompt_key(x.text, x.tokens);
        return p;
    }();
    return prompts.at(i);
}

std::optional<SystemPrompt> PrefixCacheManager::detect(PyRandom& rng) {
    if (rng.random() < p_) {
        const SystemPrompt& sp = system_prompt(rng.choice_index(kSystemPromptCount));
        std::lock_guard lk(mu_);
        ++hits_;
        bytes_saved_ += uint64_t(sp.tokens) * bpt_;
        return sp;
    }
    std::lock_guard lk(mu_);
    ++misses_;
    return std::nullopt;
}

nlohmann::ordered_json PrefixCacheManager::stats_json() const {
    std::lock_guard lk(mu_);
    return {{"prefix_hits", hits_},
            {"prefix_misses", misses_},
            {"system_prompt_reuse", hits_},
            {"common_phrase_reuse", 0},
            {"bytes_saved", bytes_saved_}};
}

}  // namespace kvio::serving
