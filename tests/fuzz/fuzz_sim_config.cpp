// libFuzzer target: a `kvio simulate --config` YAML file (the benchmark's config.yaml schema, docs/mlperf-benchmark.md,
// "config.yaml") through serving::load_yaml_config and the cross-field checks the simulation applies next
// (validate_config).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "workload/serving/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        kvio::serving::SimConfig c;
        kvio::serving::load_yaml_config(kvio::fuzz::input_file(data, size), c);
        std::vector<std::string> warnings;
        std::vector<std::string> errors = kvio::serving::validate_config(c, warnings);
        kvio::serving::resolve_model(c);
        volatile size_t n = c.yaml.raw.size() + errors.size() + warnings.size();
        (void)n;
    } catch (const kvio::Error&) {}
    return 0;
}
