// CLI options shared by `kvio geometry` and `kvio gen`: which model, KV dtype, chunk and TP.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "workload/geometry.h"

namespace kvio::cli {

struct ModelOptions {
    std::string model;
    std::string hf_config;
    std::string kv_dtype;
    uint32_t chunk_tokens = 256;
    uint32_t tp = 1;
};

/// Adds --model, --hf-config, --kv-dtype, --chunk-tokens, --tp to `sub`.
void add_model_options(CLI::App* sub, ModelOptions& o);
/// Resolves the options to a geometry; throws kvio::Error on a bad model name or config.
workload::Geometry resolve_geometry(const ModelOptions& o);

}  // namespace kvio::cli
