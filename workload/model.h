// Model KV-cache geometry inputs: the attention shape of a transformer, from a built-in table
// (published Hugging Face config.json values) or from a config.json file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::workload {

/// Element type of the KV cache. Bytes per element: fp32 4, fp16/bf16 2, fp8 1.
enum class KvDtype { Fp32, Fp16, Bf16, Fp8 };

/// Bytes per element of `d`.
uint32_t dtype_bytes(KvDtype d);
/// "fp32" | "fp16" | "bf16" | "fp8".
std::string dtype_name(KvDtype d);
/// Parses "fp32|fp16|bf16|fp8" and the torch_dtype spellings ("float32", "float16", "bfloat16",
/// "float8_e4m3fn", ...). Throws kvio::Error naming the accepted spellings.
KvDtype parse_dtype(const std::string& s);

/// Attention kind: MHA/GQA caches K and V per KV head; MLA (DeepSeek-V2/V3) caches one
/// compressed latent (kv_lora_rank) plus the decoupled RoPE key (qk_rope_head_dim) per layer.
enum class AttentionKind { Gqa, Mla };

/// The attention shape of one model, as in its config.json.
struct ModelConfig {
    std::string name;         ///< built-in name or "hf:<path>"
    std::string source;       ///< where the numbers come from (HF repo or file)
    uint32_t num_layers = 0;  ///< num_hidden_layers
    uint32_t num_attention_heads = 0;
    uint32_t num_kv_heads = 0;  ///< num_key_value_heads (== num_attention_heads for MHA)
    uint32_t hidden_size = 0;
    uint32_t head_dim = 0;  ///< explicit head_dim, else hidden_size / num_attention_heads
    AttentionKind attention = AttentionKind::Gqa;
    uint32_t kv_lora_rank = 0;      ///< MLA only
    uint32_t qk_rope_head_dim = 0;  ///< MLA only
    KvDtype dtype = KvDtype::Bf16;  ///< torch_dtype
};

/// Names of the built-in models, in table order.
std::vector<std::string> builtin_model_names();
/// A built-in model by name. Throws kvio::Error listing the known names when `name` is unknown.
ModelConfig builtin_model(const std::string& name);
/// Builds a ModelConfig from a parsed Hugging Face config.json. `where` names the file for errors.
/// Required: num_hidden_layers, num_attention_heads, hidden_size; num_key_value_heads defaults to
/// num_attention_heads (MHA); kv_lora_rank + qk_rope_head_dim select MLA; torch_dtype defaults to bf16.
/// Throws kvio::Error "FILE: field 'KEY': missing" naming the missing or malformed key.
ModelConfig model_from_hf_json(const nlohmann::json& cfg, const std::string& where);
/// Reads and parses a config.json file (see model_from_hf_json).
ModelConfig model_from_hf_config(const std::string& path);

}  // namespace kvio::workload
