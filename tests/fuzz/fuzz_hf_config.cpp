// libFuzzer target: a Hugging Face config.json (kvio --hf-config) through workload::model_from_hf_config, and
// the geometry kvio computes from it with the default options (what `kvio geometry --hf-config` does next).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "workload/geometry.h"
#include "workload/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        kvio::workload::ModelConfig m = kvio::workload::model_from_hf_config(kvio::fuzz::input_file(data, size));
        kvio::workload::Geometry g = kvio::workload::compute_geometry(m, {});
        volatile uint64_t n = g.per_rank_bytes;
        (void)n;
    } catch (const kvio::Error&) {}
    return 0;
}
