// Retrieval-augmented generation (benchmark rag.py:RAGDocumentManager and benchmark.py:_ingest_rag_documents,
// docs/mlperf-benchmark.md, "Multi-turn, prefix and RAG reuse"): documents split into chunks written to the cache,
// top-k chunk picks with Zipf weights.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/cache.h"
#include "workload/serving/config.h"
#include "workload/serving/pyrandom.h"

namespace kvio::serving {

struct RagChunk {
    std::string key;  ///< "rag_<doc_id>_chunk_<i>"
    int64_t tokens = 0;
};

struct RagDocument {
    std::string doc_id;  ///< "doc_%04d"
    int64_t tokens = 0;
    std::vector<RagChunk> chunks;
};

/// Document sizes of the benchmark: a "large" model (hidden_dim >= 8192 or num_layers >= 64) gets
/// randint(rag.large_model_doc_tokens_min, _max) = [1024, 4096] tokens per document, others [4000, 12000].
bool rag_large_model(const workload::ModelConfig& m);

/// Chunk size in tokens: min(rag.chunk_size_tokens, rag.max_chunk_bytes / bytes_per_token), at least 1.
int64_t rag_chunk_tokens(const YamlSettings& y, uint64_t bytes_per_token);

/// Splits a document of `tokens` tokens into chunks of `chunk_tokens` (the last one holds the remainder).
RagDocument make_rag_document(const std::string& doc_id, int64_t tokens, int64_t chunk_tokens);

/// Indices of min(top_k, n) distinct chunks of an n-chunk document, drawn without replacement with weights
/// 1/(i+1) ("zipfian") or equal weights ("uniform", "random"). The benchmark draws with numpy.random.choice; kvio
/// draws the same distribution from `rng` (sequential weighted picks, each removing the chosen index).
std::vector<size_t> pick_rag_chunks(PyRandom& rng, size_t n, int top_k, const std::string& distribution);

/// The ingested documents. ingest() runs on its own thread while users run (as in the benchmark); readers see
/// a document once all of its chunks were written.
class RagDocumentManager {
public:
    RagDocumentManager(const YamlSettings& y, uint64_t bytes_per_token, bool large_model)
        : y_(y), chunk_tokens_(rag_chunk_tokens(y, bytes_per_token)), large_(large_model) {}
    /// Writes `num_docs` documents, each chunk an allocate(key, tokens, Prefill) (counted as a prefill write).
    /// Returns early when `stop` becomes true.
    void ingest(MultiTierCache& cache, PyRandom& rng, int64_t num_docs, const std::atomic<bool>& stop);
    /// A uniformly chosen document and its top-k chunks; false when none is ingested yet.
    bool pick(PyRandom& rng, RagDocument& doc, std::vector<size_t>& chunks) const;
    size_t document_count() const;
    /// {documents, chunks, chunk_tokens, chunk_write_failures}.
    nlohmann::ordered_json stats_json() const;

private:
    YamlSettings y_;
    int64_t chunk_tokens_;
    bool large_;
    mutable std::mutex mu_;
    std::vector<RagDocument> docs_;
    uint64_t chunks_ = 0, failures_ = 0;
};

}  // namespace kvio::serving
