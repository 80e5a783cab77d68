#include "workload/serving/rag.h"

#include <algorithm>
#include <cstdio>

namespace kvio::serving {

bool rag_large_model(const workload::ModelConfig& m) { return m.hidden_size >= 8192 || m.num_layers >= 64; }

int64_t rag_chunk_tokens(const YamlSettings& y, uint64_t bytes_per_token) {
    int64_t by_bytes = bytes_per_token ? int64_t(y.rag_max_chunk_bytes / bytes_per_token) : y.rag_chunk_size_tokens;
    return std::max<int64_t>(1, std::min<int64_t>(y.rag_chunk_size_tokens, by_bytes));
}

RagDocument make_rag_document(const std::string& doc_id, int64_t tokens, int64_t chunk_tokens) {
    RagDocument d;
    d.doc_id = doc_id;
    d.tokens = tokens;
    for (int64_t off = 0, i = 0; off < tokens; off += chunk_tokens, ++i)
        d.chunks.push_back({"rag_" + doc_id + "_chunk_" + std::to_string(i), std::min(chunk_tokens, tokens - off)});
    return d;
}

std::vector<size_t> pick_rag_chunks(PyRandom& rng, size_t n, int top_k, const std::string& distribution) {
    size_t k = std::min(n, size_t(std::max(0, top_k)));
    std::vector<size_t> idx(n);
    std::vector<double> w(n);
    for (size_t i = 0; i < n; ++i) {
        idx[i] = i;
        w[i] = distribution == "zipfian" ? 1.0 / double(i + 1) : 1.0;
    }
    std::vector<size_t> out;
    while (out.size() < k) {
        double total = 0;
        for (double x : w) total += x;
        double r = rng.random() * total;
        size_t j = 0;
        while (j + 1 < w.size() && r >= w[j]) r -= w[j++];
        out.push_back(idx[j]);
        idx.erase(idx.begin() + long(j));
        w.erase(w.begin() + long(j));
    }
    return out;
}

void RagDocumentManager::ingest(MultiTierCache& cache, PyRandom& rng, int64_t num_docs, const std::atomic<bool>& stop) {
    int64_t lo = large_ ? y_.rag_large_model_doc_tokens_min : y_.rag_small_model_doc_tokens_min;
    int64_t hi = large_ ? y_.rag_large_model_doc_tokens_max : y_.rag_small_model_doc_tokens_max;
    for (int64_t i = 0; i < num_docs && !stop; ++i) {
        char id[32];
        std::snprintf(id, sizeof id, "doc_%04lld", static_cast<long long>(i));
        RagDocument d = make_rag_document(id, rng.randint(lo, hi), chunk_tokens_);
        uint64_t failed = 0;
        for (const auto& ch : d.chunks)
            if (!cache.allocate(ch.key, ch.tokens, CachePhase::Prefill).ok) ++failed;
        std::lock_guard lk(mu_);
        chunks_ += d.chunks.size();
        failures_ += failed;
        docs_.push_back(std::move(d));
    }
}

bool RagDocumentManager::pick(PyRandom& rng, RagDocument& doc, std::vector<size_t>& chunks) const {
    {
        std::lock_guard lk(mu_);
        if (docs_.empty()) return false;
        doc = docs_[rng.choice_index(docs_.size())];
    }
    chunks = pick_rag_chunks(rng, doc.chunks.size(), y_.rag_top_k_chunks, y_.rag_retrieval_distribution);
    return true;
}

size_t RagDocumentManager::document_count() const {
    std::lock_guard lk(mu_);
    return docs_.size();
}

nlohmann::ordered_json RagDocumentManager::stats_json() const {
    std::lock_guard lk(mu_);
    return {{"documents", docs_.size()},
            {"chunks", chunks_},
            {"chunk_tokens", chunk_tokens_},
            {"chunk_write_failures", failures_}};
}

}  // namespace kvio::serving
