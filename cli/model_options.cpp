#include "cli/model_options.h"

#include "common/error.h"
#include "cli/commands.h"

namespace kvio::cli {

void add_model_options(CLI::App* sub, ModelOptions& o) {
    std::string names;
    for (const auto& n : workload::builtin_model_names()) names += (names.empty() ? "" : ", ") + n;
    auto* m = sub->add_option("--model", o.model, "Built-in model: " + names);
    auto* h = sub->add_option("--hf-config", o.hf_config,
                              "A Hugging Face config.json to read the model shape from instead of --model");
    m->excludes(h);
    sub->add_option("--kv-dtype", o.kv_dtype,
                    "KV cache element type: fp32, fp16, bf16, fp8 (default: the model's torch_dtype)");
    sub->add_option("--chunk-tokens", o.chunk_tokens, "Tokens per KV chunk (one object per chunk and rank)")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--tp", o.tp, "Tensor-parallel ranks: one chunk becomes TP objects holding each rank's KV heads")
        ->capture_default_str()
        ->check(positive_integer());
}

workload::Geometry resolve_geometry(const ModelOptions& o) {
    if (o.model.empty() && o.hf_config.empty()) throw UsageError("give --model NAME or --hf-config config.json");
    // A bad name on the command line is a usage error; the same readers' errors about a config file are not.
    auto usage = [](const std::string& opt, auto parse) {
        try {
            return parse();
        } catch (const UsageError&) {
            throw;
        } catch (const Error& e) {
            throw UsageError(opt + ": " + e.what());
        }
    };
    workload::ModelConfig m = o.hf_config.empty() ? usage("--model", [&] { return workload::builtin_model(o.model); })
                                                  : workload::model_from_hf_config(o.hf_config);
    workload::GeometryOptions g;
    if (!o.kv_dtype.empty()) g.kv_dtype = usage("--kv-dtype", [&] { return workload::parse_dtype(o.kv_dtype); });
    g.chunk_tokens = o.chunk_tokens;
    g.tp = o.tp;
    return workload::compute_geometry(m, g);
}

}  // namespace kvio::cli
