// libFuzzer target: a ShareGPT JSON dataset (kvio simulate --dataset-path) through serving::load_sharegpt, with
// a small --max-conversations so the early stop is exercised too, then every turn it kept.
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "workload/serving/arrivals/sharegpt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    for (int64_t max : {int64_t(3), int64_t(1) << 40}) {
        try {
            kvio::serving::ShareGptDataset ds = kvio::serving::load_sharegpt(path, max);
            volatile int64_t sink = 0;
            for (const auto& c : ds.conversations)
                for (const auto& t : c.turns)
                    sink = sink + t.context_tokens + t.generate_tokens + t.turn_number + int64_t(c.id.size());
        } catch (const kvio::Error&) {}
    }
    return 0;
}
