// ShareGPT datasets for `kvio simulate --dataset-path` (docs/mlperf-benchmark.md, "Trace replay and special modes"): a
// JSON list of conversations, each an object with `conversations` (a list of {"from": ..., "value": ...}) and an
// optional `id`. Token counts use the benchmark's no-tokenizer rule: max(1, characters // 4) (characters = Unicode code
// points, as Python's len()).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::serving {

/// One human → gpt exchange: the human message is the request's context, the reply its generation.
struct ShareGptTurn {
    int turn_number = 1;          ///< i / 2 + 1 for the pair (turns[i], turns[i + 1]), i even
    int64_t context_tokens = 0;   ///< of the human message only (not the history), capped
    int64_t generate_tokens = 0;  ///< of the gpt reply, capped
};

struct ShareGptConversation {
    std::string id;  ///< `id`, or "conv_<index>" without one
    std::vector<ShareGptTurn> turns;
};

/// Token caps and the characters-per-token divisor (the benchmark's loader hard-codes 16384 / 2048 / 4; its
/// config.yaml `sharegpt.*` keys are read by nobody).
struct ShareGptLimits {
    int64_t max_context_tokens = 16384;
    int64_t max_generation_tokens = 2048;
    int64_t chars_per_token = 4;
};

struct ShareGptDataset {
    std::vector<ShareGptConversation> conversations;  ///< those with at least one human → gpt pair
    uint64_t elements_read = 0;                       ///< list elements read (at most max_conversations)
    uint64_t without_pairs = 0;                       ///< elements read that had no human → gpt pair (not replayed)
    uint64_t pairs_skipped = 0;                       ///< (turns[i], turns[i + 1]) pairs that were not human then gpt
    uint64_t turns = 0;                               ///< pairs kept
};

/// Streams `path` (nlohmann_json SAX: constant memory, stops after `max_conversations` list elements). Strict:
/// throws kvio::Error "FILE:LINE: ..." for invalid JSON, a top level that is not a list, an element that is not an
/// object or lacks `conversations`, a turn that is not an object or whose `from` / `value` is missing or not a
/// string, an `id` that is not a string or integer ("FILE:LINE: conversation 3: field 'value': expected a string").
ShareGptDataset load_sharegpt(const std::string& path, int64_t max_conversations, const ShareGptLimits& limits = {});

/// max(1, code points of `text` // chars_per_token): the benchmark's estimate without tiktoken.
int64_t estimate_tokens(const std::string& text, int64_t chars_per_token = 4);

}  // namespace kvio::serving
