#include "workload/model.h"

#include "common/error.h"
#include "common/jsonl.h"

namespace kvio::workload {

uint32_t dtype_bytes(KvDtype d) {
    switch (d) {
        case KvDtype::Fp32:
            return 4;
        case KvDtype::Fp16:
        case KvDtype::Bf16:
            return 2;
        case KvDtype::Fp8:
            return 1;
    }
    return 2;
}

std::string dtype_name(KvDtype d) {
    switch (d) {
        case KvDtype::Fp32:
            return "fp32";
        case KvDtype::Fp16:
            return "fp16";
        case KvDtype::Bf16:
            return "bf16";
        case KvDtype::Fp8:
            return "fp8";
    }
    return "?";
}

KvDtype parse_dtype(const std::string& s) {
    if (s == "fp32" || s == "float32" || s == "float") return KvDtype::Fp32;
    if (s == "fp16" || s == "float16" || s == "half") return KvDtype::Fp16;
    if (s == "bf16" || s == "bfloat16") return KvDtype::Bf16;
    if (s == "fp8" || s.rfind("float8", 0) == 0) return KvDtype::Fp8;
    throw Error("unknown KV dtype '" + s + "' (known: fp32, fp16, bf16, fp8)");
}

namespace {

ModelConfig gqa(const char* name, const char* source, uint32_t layers, uint32_t heads, uint32_t kv_heads,
                uint32_t hidden, uint32_t head_dim, KvDtype dt) {
    ModelConfig m;
    m.name = name;
    m.source = source;
    m.num_layers = layers;
    m.num_attention_heads = heads;
    m.num_kv_heads = kv_heads;
    m.hidden_size = hidden;
    m.head_dim = head_dim ? head_dim : hidden / heads;
    m.dtype = dt;
    return m;
}

// Values copied from each model's published config.json on huggingface.co (the `source` field).
// head_dim 0 = not in the config: hidden_size / num_attention_heads.
const std::vector<ModelConfig>& table() {
    static const std::vector<ModelConfig> t = [] {
        std::vector<ModelConfig> v;
        // MLPerf Storage KV Cache Benchmark v3.0 (kv_cache/models.py) "tiny-1b": 12 layers, 8 heads, 4 KV heads,
        // hidden 1024 -> head_dim 128, float16: 24,576 B/token. Not a published model; the name means this there.
        v.push_back(gqa("tiny-1b", "MLPerf Storage KV Cache Benchmark v3.0, kv_cache/models.py", 12, 8, 4, 1024, 128,
                        KvDtype::Fp16));
        // meta-llama/Llama-3.2-1B: 16 layers, 32 heads, 8 KV heads, hidden 2048, head_dim 64 (explicit), bfloat16
        v.push_back(gqa("llama3.2-1b", "huggingface.co/meta-llama/Llama-3.2-1B/config.json", 16, 32, 8, 2048, 64,
                        KvDtype::Bf16));
        // mistralai/Mistral-7B-v0.1: 32 layers, 32 heads, 8 KV heads, hidden 4096, bfloat16
        v.push_back(gqa("mistral-7b", "huggingface.co/mistralai/Mistral-7B-v0.1/config.json", 32, 32, 8, 4096, 0,
                        KvDtype::Bf16));
        // meta-llama/Llama-2-7b-hf: 32 layers, 32 heads, 32 KV heads (MHA), hidden 4096, float16
        v.push_back(gqa("llama2-7b", "huggingface.co/meta-llama/Llama-2-7b-hf/config.json", 32, 32, 32, 4096, 0,
                        KvDtype::Fp16));
        // meta-llama/Llama-3.1-8B: 32 layers, 32 heads, 8 KV heads, hidden 4096, bfloat16
        v.push_back(gqa("llama3.1-8b", "huggingface.co/meta-llama/Llama-3.1-8B/config.json", 32, 32, 8, 4096, 0,
                        KvDtype::Bf16));
        // meta-llama/Llama-3.1-70B-Instruct: 80 layers, 64 heads, 8 KV heads, hidden 8192, bfloat16
        v.push_back(gqa("llama3.1-70b-instruct", "huggingface.co/meta-llama/Llama-3.1-70B-Instruct/config.json", 80, 64,
                        8, 8192, 0, KvDtype::Bf16));
        // deepseek-ai/DeepSeek-V3: 61 layers, 128 heads, 128 KV heads, hidden 7168, MLA with
        // kv_lora_rank 512, qk_rope_head_dim 64, bfloat16 -> the cache holds 512 + 64 values per layer and token.
        {
            ModelConfig m = gqa("deepseek-v3", "huggingface.co/deepseek-ai/DeepSeek-V3/config.json", 61, 128, 128, 7168,
                                0, KvDtype::Bf16);
            m.attention = AttentionKind::Mla;
            m.kv_lora_rank = 512;
            m.qk_rope_head_dim = 64;
            v.push_back(m);
        }
        // Qwen/Qwen3-32B: 64 layers, 64 heads, 8 KV heads, hidden 5120, head_dim 128 (explicit; 5120/64 would be 80),
        // bfloat16
        v.push_back(gqa("qwen3-32b", "huggingface.co/Qwen/Qwen3-32B/config.json", 64, 64, 8, 5120, 128, KvDtype::Bf16));
        // openai/gpt-oss-20b: 24 layers, 64 heads, 8 KV heads, hidden 2880, head_dim 64 (explicit; 2880/64 would be
        // 45), bfloat16
        v.push_back(
            gqa("gpt-oss-20b", "huggingface.co/openai/gpt-oss-20b/config.json", 24, 64, 8, 2880, 64, KvDtype::Bf16));
        // openai/gpt-oss-120b: 36 layers, 64 heads, 8 KV heads, hidden 2880, head_dim 64 (explicit), bfloat16
        v.push_back(
            gqa("gpt-oss-120b", "huggingface.co/openai/gpt-oss-120b/config.json", 36, 64, 8, 2880, 64, KvDtype::Bf16));
        return v;
    }();
    return t;
}

uint32_t req_u32(const nlohmann::json& cfg, const char* key, const JsonSource& src) {
    uint64_t v = get_u64(cfg, key, src);
    if (v == 0 || v > UINT32_MAX) src.fail(key, "expected a positive 32-bit integer");
    return uint32_t(v);
}

}  // namespace

std::vector<std::string> builtin_model_names() {
    std::vector<std::string> out;
    for (const auto& m : table()) out.push_back(m.name);
    return out;
}

ModelConfig builtin_model(const std::string& name) {
    for (const auto& m : table())
        if (m.name == name) return m;
    std::string known;
    for (const auto& n : builtin_model_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown model '" + name + "' (known models: " + known + "; or use --hf-config config.json)");
}

ModelConfig model_from_hf_json(const nlohmann::json& cfg, const std::string& where) {
    JsonSource src{where, 0};
    if (!cfg.is_object()) throw Error(where + ": expected a JSON object (a Hugging Face config.json)");
    // A file kvio wrote (a trace summary, simulate results) given for a model config: named, not "field missing".
    if (const std::string other = JsonSource{where, 0, "Hugging Face"}.other_kind(cfg); !other.empty())
        throw Error(where + ": expected a Hugging Face config.json" + other);
    // Multimodal configs nest the language model under text_config (e.g. Llama 4, Qwen-VL).
    if (!cfg.contains("num_hidden_layers") && cfg.contains("text_config") && cfg["text_config"].is_object())
        return model_from_hf_json(cfg["text_config"], where + " (text_config)");
    ModelConfig m;
    m.name = "hf:" + where;
    m.source = where;
    m.num_layers = req_u32(cfg, "num_hidden_layers", src);
    m.num_attention_heads = req_u32(cfg, "num_attention_heads", src);
    m.hidden_size = req_u32(cfg, "hidden_size", src);
    m.num_kv_heads = cfg.contains("num_key_value_heads") && !cfg["num_key_value_heads"].is_null()
                         ? req_u32(cfg, "num_key_value_heads", src)
                         : m.num_attention_heads;
    // GQA/MQA share each KV head among a group of query heads: the attention heads come in whole groups.
    if (m.num_kv_heads > m.num_attention_heads || m.num_attention_heads % m.num_kv_heads)
        src.fail("num_key_value_heads",
                 std::to_string(m.num_kv_heads) + " KV heads for " + std::to_string(m.num_attention_heads) +
                     " attention heads: num_attention_heads must be a multiple of num_key_value_heads");
    if (cfg.contains("head_dim") && !cfg["head_dim"].is_null()) {
        m.head_dim = req_u32(cfg, "head_dim", src);
    } else {
        if (m.hidden_size % m.num_attention_heads)
            src.fail("head_dim", "missing, and hidden_size " + std::to_string(m.hidden_size) +
                                     " is not divisible by num_attention_heads " +
                                     std::to_string(m.num_attention_heads));
        m.head_dim = m.hidden_size / m.num_attention_heads;
    }
    bool has_lora = cfg.contains("kv_lora_rank") && !cfg["kv_lora_rank"].is_null();
    bool has_rope = cfg.contains("qk_rope_head_dim") && !cfg["qk_rope_head_dim"].is_null();
    if (has_lora != has_rope)
        src.fail(has_lora ? "qk_rope_head_dim" : "kv_lora_rank",
                 "missing (an MLA config needs both kv_lora_rank and qk_rope_head_dim)");
    if (has_lora) {
        m.attention = AttentionKind::Mla;
        m.kv_lora_rank = req_u32(cfg, "kv_lora_rank", src);
        m.qk_rope_head_dim = req_u32(cfg, "qk_rope_head_dim", src);
    }
    std::string dt = get_string_or(cfg, "torch_dtype", get_string_or(cfg, "dtype", "bfloat16", src), src);
    try {
        m.dtype = parse_dtype(dt);
    } catch (const Error& e) {
        src.fail("torch_dtype", e.what());
    }
    return m;
}

ModelConfig model_from_hf_config(const std::string& path) { return model_from_hf_json(read_json_file(path), path); }

}  // namespace kvio::workload
