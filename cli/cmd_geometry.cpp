// `kvio geometry`: the KV-cache object sizes a model produces (bytes per token, chunk, rank).
#include <cstdio>
#include <iostream>
#include <memory>

#include "common/histogram.h"
#include "cli/commands.h"
#include "cli/model_options.h"

namespace kvio::cli {

void add_geometry_command(CLI::App& app) {
    struct Opts {
        ModelOptions model;
        bool json = false;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "geometry", "Print a model's KV-cache geometry: bytes per token, per chunk object and per TP rank");
    add_model_options(sub, o->model);
    sub->add_flag("--json", o->json, "Print one JSON object instead of text");
    sub->callback([o] {
        workload::Geometry g = resolve_geometry(o->model);
        if (o->json) {
            std::cout << workload::geometry_to_json(g).dump() << "\n";
            return;
        }
        const auto& m = g.model;
        std::printf("model            %s\n", m.name.c_str());
        std::printf("source           %s\n", m.source.c_str());
        std::printf("attention        %s\n", workload::attention_name(m).c_str());
        std::printf("layers           %u\n", m.num_layers);
        if (m.attention == workload::AttentionKind::Mla) {
            std::printf("kv_lora_rank     %u\n", m.kv_lora_rank);
            std::printf("qk_rope_head_dim %u\n", m.qk_rope_head_dim);
        } else {
            std::printf("kv heads         %u (of %u attention heads)\n", m.num_kv_heads, m.num_attention_heads);
            std::printf("head_dim         %u\n", m.head_dim);
        }
        std::printf("kv dtype         %s (%u B)\n", workload::dtype_name(g.kv_dtype).c_str(),
                    workload::dtype_bytes(g.kv_dtype));
        std::printf("bytes/token      %llu\n", (unsigned long long)g.bytes_per_token);
        std::printf("chunk            %u tokens = %llu bytes (%s)\n", g.chunk_tokens,
                    (unsigned long long)g.object_bytes, human_bytes(g.object_bytes).c_str());
        std::printf("tp               %u -> %u objects per chunk of %llu bytes (%s)", g.tp, g.objects_per_chunk,
                    (unsigned long long)g.per_rank_bytes, human_bytes(g.per_rank_bytes).c_str());
        if (m.attention == workload::AttentionKind::Mla && g.tp > 1)
            std::printf(", latent replicated on every rank");
        else if (m.attention != workload::AttentionKind::Mla)
            std::printf(", %u KV heads per rank", g.kv_heads_per_rank);
        std::printf("\n");
    });
}

}  // namespace kvio::cli
