// libFuzzer target: kvio.semantic/1 (kvio gen --semantic) through validate::read_semantic.
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "validate/semantic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        kvio::validate::SemanticTrace t = kvio::validate::read_semantic(kvio::fuzz::input_file(data, size));
        volatile size_t n = 0;
        for (const auto& op : t.ops) n = n + op.extents.size() + op.key.size();
    } catch (const kvio::Error&) {}
    return 0;
}
