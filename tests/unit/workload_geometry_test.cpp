// Known-answer tests for model KV geometry, computed by hand from the published config.json values.
#include <gtest/gtest.h>

#include "common/error.h"
#include "workload/geometry.h"

using namespace kvio;
using namespace kvio::workload;

namespace {
Geometry geo(const std::string& name, uint32_t tp = 1, std::optional<KvDtype> dt = std::nullopt, uint32_t chunk = 256) {
    GeometryOptions o;
    o.tp = tp;
    o.kv_dtype = dt;
    o.chunk_tokens = chunk;
    return compute_geometry(builtin_model(name), o);
}
}  // namespace

// layers × 2 × kv_heads × head_dim × dtype_bytes, by hand:
TEST(Geometry, BuiltinBytesPerToken) {
    EXPECT_EQ(geo("llama3.2-1b").bytes_per_token, 16ull * 2 * 8 * 64 * 2);  // 32,768
    EXPECT_EQ(geo("llama3.2-1b").bytes_per_token, 32768u);
    // The MLPerf KV-cache benchmark's tiny-1b (kv_cache/models.py): 12 layers × 4 KV heads × 128 × 2 × fp16
    EXPECT_EQ(geo("tiny-1b").bytes_per_token, 24576u);
    EXPECT_EQ(geo("mistral-7b").bytes_per_token, 131072u);             // 32·2·8·128·2
    EXPECT_EQ(geo("llama2-7b").bytes_per_token, 524288u);              // 32·2·32·128·2 (fp16, MHA)
    EXPECT_EQ(geo("llama3.1-8b").bytes_per_token, 131072u);            // 32·2·8·128·2
    EXPECT_EQ(geo("llama3.1-70b-instruct").bytes_per_token, 327680u);  // 80·2·8·128·2
    EXPECT_EQ(geo("deepseek-v3").bytes_per_token, 70272u);             // 61·(512+64)·2
    EXPECT_EQ(geo("qwen3-32b").bytes_per_token, 262144u);              // 64·2·8·128·2 (head_dim 128, not 5120/64)
    EXPECT_EQ(geo("gpt-oss-20b").bytes_per_token, 49152u);             // 24·2·8·64·2 (head_dim 64, not 2880/64)
    EXPECT_EQ(geo("gpt-oss-120b").bytes_per_token, 73728u);            // 36·2·8·64·2
    EXPECT_EQ(builtin_model_names().size(), 10u);
}

TEST(Geometry, ChunkObjectBytes) {
    EXPECT_EQ(geo("llama3.1-8b").object_bytes, 32ull << 20);  // 131,072 × 256 = 32 MiB
    EXPECT_EQ(geo("llama3.1-8b", 1, std::nullopt, 16).object_bytes, 2ull << 20);
    EXPECT_EQ(geo("deepseek-v3").object_bytes, 70272ull * 256);
    EXPECT_EQ(geo("llama2-7b").object_bytes, 128ull << 20);
}

TEST(Geometry, KvDtypeOverride) {
    EXPECT_EQ(geo("llama3.1-8b", 1, KvDtype::Fp8).bytes_per_token, 65536u);
    EXPECT_EQ(geo("llama3.1-8b", 1, KvDtype::Fp32).bytes_per_token, 262144u);
    EXPECT_EQ(geo("llama2-7b").kv_dtype, KvDtype::Fp16);  // model default: torch_dtype float16
    EXPECT_EQ(geo("deepseek-v3", 1, KvDtype::Fp8).bytes_per_token, 61u * 576);
    EXPECT_THROW(parse_dtype("int4"), Error);
    EXPECT_EQ(parse_dtype("bfloat16"), KvDtype::Bf16);
    EXPECT_EQ(parse_dtype("float8_e4m3fn"), KvDtype::Fp8);
}

TEST(Geometry, TensorParallelSharding) {
    // 8 KV heads over 4 ranks: 2 heads each, 1/4 of the chunk per object.
    Geometry g = geo("llama3.1-8b", 4);
    EXPECT_EQ(g.kv_heads_per_rank, 2u);
    EXPECT_EQ(g.per_rank_bytes, (32ull << 20) / 4);
    EXPECT_EQ(g.objects_per_chunk, 4u);
    // 8 KV heads over 16 ranks: each head replicated on 2 ranks, each rank holds 1 head.
    g = geo("llama3.1-70b-instruct", 16);
    EXPECT_EQ(g.kv_heads_per_rank, 1u);
    EXPECT_EQ(g.per_rank_bytes, 80ull * 2 * 1 * 128 * 2 * 256);
    EXPECT_EQ(g.objects_per_chunk, 16u);
    // MLA: the latent is replicated on every rank, so each rank's object is the whole chunk.
    g = geo("deepseek-v3", 8);
    EXPECT_EQ(g.per_rank_bytes, 70272ull * 256);
    EXPECT_EQ(g.objects_per_chunk, 8u);
    // 8 KV heads over 3 ranks: no consistent sharding.
    EXPECT_THROW(geo("llama3.1-8b", 3), Error);
    EXPECT_THROW(geo("llama3.1-8b", 0), Error);
}

TEST(Geometry, UnknownModelListsKnownOnes) {
    try {
        builtin_model("llama-9000");
        FAIL() << "no throw";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("llama-9000"), std::string::npos) << m;
        EXPECT_NE(m.find("deepseek-v3"), std::string::npos) << m;
        EXPECT_NE(m.find("gpt-oss-120b"), std::string::npos) << m;
    }
}

TEST(HfConfig, FixturesParseToBuiltinNumbers) {
    ModelConfig m = model_from_hf_config("tests/fixtures/llama3.1-8b.config.json");
    EXPECT_EQ(m.num_layers, 32u);
    EXPECT_EQ(m.num_kv_heads, 8u);
    EXPECT_EQ(m.head_dim, 128u);
    EXPECT_EQ(m.dtype, KvDtype::Bf16);
    Geometry g = compute_geometry(m, {});
    EXPECT_EQ(g.bytes_per_token, 131072u);
    EXPECT_EQ(g.object_bytes, geo("llama3.1-8b").object_bytes);

    ModelConfig d = model_from_hf_config("tests/fixtures/deepseek-v3.config.json");
    EXPECT_EQ(d.attention, AttentionKind::Mla);
    EXPECT_EQ(compute_geometry(d, {}).bytes_per_token, 70272u);
}

TEST(HfConfig, MissingKeyIsNamed) {
    nlohmann::json c = {{"num_hidden_layers", 32}, {"hidden_size", 4096}};
    try {
        model_from_hf_json(c, "x/config.json");
        FAIL() << "no throw";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("x/config.json"), std::string::npos) << m;
        EXPECT_NE(m.find("num_attention_heads"), std::string::npos) << m;
        EXPECT_NE(m.find("missing"), std::string::npos) << m;
    }
    // MLA needs both keys.
    nlohmann::json mla = {
        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"hidden_size", 64}, {"kv_lora_rank", 16}};
    try {
        model_from_hf_json(mla, "m.json");
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("qk_rope_head_dim"), std::string::npos) << e.what();
    }
    // Absent num_key_value_heads means MHA; absent head_dim means hidden/heads.
    nlohmann::json mha = {
        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"hidden_size", 64}, {"torch_dtype", "float32"}};
    ModelConfig m = model_from_hf_json(mha, "mha.json");
    EXPECT_EQ(m.num_kv_heads, 4u);
    EXPECT_EQ(m.head_dim, 16u);
    EXPECT_EQ(compute_geometry(m, {}).bytes_per_token, 2ull * 2 * 4 * 16 * 4);
}

TEST(HfConfig, KvHeadsMustDivideAttentionHeads) {
    // More KV heads than attention heads (32 of 8) or a group that does not divide (3 of 8): refused, naming
    // the file and the field (both were accepted and gave 4x / 0.375x the real bytes per token).
    for (int kv : {32, 3}) {
        nlohmann::json c = {
            {"num_hidden_layers", 32}, {"num_attention_heads", 8}, {"num_key_value_heads", kv}, {"hidden_size", 4096}};
        try {
            model_from_hf_json(c, "cfg/config.json");
            FAIL() << "num_key_value_heads " << kv << " of 8 heads accepted";
        } catch (const Error& e) {
            std::string m = e.what();
            EXPECT_EQ(m.rfind("cfg/config.json: field 'num_key_value_heads': ", 0), 0u) << m;
            EXPECT_NE(m.find(std::to_string(kv) + " KV heads for 8 attention heads"), std::string::npos) << m;
        }
    }
    nlohmann::json mqa = {
        {"num_hidden_layers", 2}, {"num_attention_heads", 8}, {"num_key_value_heads", 1}, {"hidden_size", 64}};
    EXPECT_EQ(model_from_hf_json(mqa, "mqa.json").num_kv_heads, 1u);
}

TEST(Geometry, JsonRoundTrip) {
    Geometry g = geo("qwen3-32b", 2, KvDtype::Fp8, 128);
    auto j = geometry_to_json(g);
    EXPECT_EQ(j["bytes_per_token"], 131072u);
    EXPECT_EQ(j["per_rank_bytes"], 65536u * 128);
    Geometry back = geometry_from_json(j, "t");
    EXPECT_EQ(back.per_rank_bytes, g.per_rank_bytes);
    EXPECT_EQ(back.model.head_dim, 128u);
    auto d = geometry_from_json(geometry_to_json(geo("deepseek-v3", 4)), "t");
    EXPECT_EQ(d.bytes_per_token, 70272u);
}
