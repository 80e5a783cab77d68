#include "workload/geometry.h"

#include "common/error.h"
#include "common/jsonl.h"

namespace kvio::workload {

std::string attention_name(const ModelConfig& m) {
    if (m.attention == AttentionKind::Mla) return "mla";
    return m.num_kv_heads == m.num_attention_heads ? "mha" : "gqa";
}

Geometry compute_geometry(const ModelConfig& m, const GeometryOptions& opt) {
    if (opt.tp == 0) throw Error("--tp must be at least 1");
    if (opt.chunk_tokens == 0) throw Error("--chunk-tokens must be at least 1");
    Geometry g;
    g.model = m;
    g.kv_dtype = opt.kv_dtype.value_or(m.dtype);
    g.chunk_tokens = opt.chunk_tokens;
    g.tp = opt.tp;
    g.objects_per_chunk = opt.tp;
    const uint64_t eb = dtype_bytes(g.kv_dtype);
    if (m.attention == AttentionKind::Mla) {
        g.bytes_per_token = uint64_t(m.num_layers) * (m.kv_lora_rank + m.qk_rope_head_dim) * eb;
        g.kv_heads_per_rank = 0;
        g.per_rank_bytes_per_token = g.bytes_per_token;  // replicated on every rank
    } else {
        g.bytes_per_token = uint64_t(m.num_layers) * 2 * m.num_kv_heads * m.head_dim * eb;
        if (m.num_kv_heads % opt.tp == 0)
            g.kv_heads_per_rank = m.num_kv_heads / opt.tp;
        else if (m.num_kv_heads < opt.tp && opt.tp % m.num_kv_heads == 0)
            g.kv_heads_per_rank = 1;  // each KV head replicated on tp / kv_heads ranks
        else
            throw Error("--tp " + std::to_string(opt.tp) + " does not shard " + std::to_string(m.num_kv_heads) +
                        " KV heads (need kv_heads divisible by tp, or tp a multiple of kv_heads)");
        g.per_rank_bytes_per_token = uint64_t(m.num_layers) * 2 * g.kv_heads_per_rank * m.head_dim * eb;
    }
    g.object_bytes = g.bytes_per_token * g.chunk_tokens;
    g.per_rank_bytes = g.per_rank_bytes_per_token * g.chunk_tokens;
    return g;
}

nlohmann::json geometry_to_json(const Geometry& g) {
    const ModelConfig& m = g.model;
    nlohmann::json j = {
        {"model", m.name},
        {"source", m.source},
        {"attention", attention_name(m)},
        {"layers", m.num_layers},
        {"attention_heads", m.num_attention_heads},
        {"kv_heads", m.num_kv_heads},
        {"hidden_size", m.hidden_size},
        {"head_dim", m.head_dim},
        {"model_dtype", dtype_name(m.dtype)},
        {"kv_dtype", dtype_name(g.kv_dtype)},
        {"dtype_bytes", dtype_bytes(g.kv_dtype)},
        {"chunk_tokens", g.chunk_tokens},
        {"tp", g.tp},
        {"bytes_per_token", g.bytes_per_token},
        {"object_bytes", g.object_bytes},
        {"kv_heads_per_rank", g.kv_heads_per_rank},
        {"per_rank_bytes_per_token", g.per_rank_bytes_per_token},
        {"per_rank_bytes", g.per_rank_bytes},
        {"objects_per_chunk", g.objects_per_chunk},
    };
    if (m.attention == AttentionKind::Mla) {
        j["kv_lora_rank"] = m.kv_lora_rank;
        j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    }
    return j;
}

Geometry geometry_from_json(const nlohmann::json& j, const std::string& where) {
    JsonSource src{where, 0};
    if (!j.is_object()) throw Error(where + ": field 'geometry': expected an object");
    ModelConfig m;
    m.name = get_string(j, "model", src);
    m.source = get_string_or(j, "source", "", src);
    std::string att = get_string(j, "attention", src);
    m.num_layers = uint32_t(get_u64(j, "layers", src));
    m.num_attention_heads = uint32_t(get_u64(j, "attention_heads", src));
    m.num_kv_heads = uint32_t(get_u64(j, "kv_heads", src));
    m.hidden_size = uint32_t(get_u64(j, "hidden_size", src));
    m.head_dim = uint32_t(get_u64(j, "head_dim", src));
    m.dtype = parse_dtype(get_string(j, "model_dtype", src));
    if (att == "mla") {
        m.attention = AttentionKind::Mla;
        m.kv_lora_rank = uint32_t(get_u64(j, "kv_lora_rank", src));
        m.qk_rope_head_dim = uint32_t(get_u64(j, "qk_rope_head_dim", src));
    } else if (att != "gqa" && att != "mha") {
        src.fail("attention", "expected \"gqa\", \"mha\" or \"mla\"");
    }
    GeometryOptions o;
    o.kv_dtype = parse_dtype(get_string(j, "kv_dtype", src));
    o.chunk_tokens = uint32_t(get_u64(j, "chunk_tokens", src));
    o.tp = uint32_t(get_u64(j, "tp", src));
    Geometry g = compute_geometry(m, o);
    if (g.per_rank_bytes != get_u64(j, "per_rank_bytes", src))
        src.fail("per_rank_bytes",
                 "does not match the model shape (" + std::to_string(g.per_rank_bytes) + " computed)");
    return g;
}

}  // namespace kvio::workload
