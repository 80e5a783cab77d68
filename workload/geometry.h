// KV-cache object geometry: bytes per token, per chunk (object) and per tensor-parallel rank.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workload/model.h"

namespace kvio::workload {

/// How a model's KV cache becomes storage objects.
struct GeometryOptions {
    std::optional<KvDtype> kv_dtype;  ///< default: the model's torch_dtype
    uint32_t chunk_tokens = 256;      ///< tokens per KV chunk (LMCache's chunk_size default)
    uint32_t tp = 1;                  ///< tensor-parallel ranks
};

/// Sizes in bytes.
struct Geometry {
    ModelConfig model;
    KvDtype kv_dtype = KvDtype::Bf16;
    uint32_t chunk_tokens = 256;
    uint32_t tp = 1;
    /// Per token, all ranks together. GQA/MHA: layers × 2 (K and V) × kv_heads × head_dim × dtype_bytes.
    /// MLA: layers × (kv_lora_rank + qk_rope_head_dim) × dtype_bytes (one latent, no ×2, no head axis;
    /// DeepSeek-V2 paper section 2.1, vLLM's MLA cache spec).
    uint64_t bytes_per_token = 0;
    uint64_t object_bytes = 0;  ///< bytes_per_token × chunk_tokens: one chunk with tp = 1
    /// KV heads each rank holds. kv_heads % tp == 0: kv_heads / tp; kv_heads < tp: 1 (each head
    /// replicated on tp / kv_heads ranks, as vLLM does); MLA: the latent is replicated on every rank.
    uint32_t kv_heads_per_rank = 0;
    uint64_t per_rank_bytes_per_token = 0;
    uint64_t per_rank_bytes = 0;     ///< one rank's object: per_rank_bytes_per_token × chunk_tokens
    uint32_t objects_per_chunk = 1;  ///< == tp: one chunk becomes tp objects of per_rank_bytes
};

/// Computes the geometry. Throws kvio::Error when tp or chunk_tokens is 0, or kv_heads is neither
/// divisible by tp nor smaller than it (no consistent sharding).
Geometry compute_geometry(const ModelConfig& m, const GeometryOptions& opt);

/// "gqa" | "mha" | "mla" (mha when kv_heads == attention heads).
std::string attention_name(const ModelConfig& m);

/// {"model","source","attention","layers","kv_heads","head_dim","kv_lora_rank"?,"qk_rope_head_dim"?,
///  "kv_dtype","dtype_bytes","chunk_tokens","tp","bytes_per_token","object_bytes","kv_heads_per_rank",
///  "per_rank_bytes","objects_per_chunk"}
nlohmann::json geometry_to_json(const Geometry& g);
/// Inverse of geometry_to_json (for record manifests); `where` names the source for errors.
Geometry geometry_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace kvio::workload
