// libFuzzer target: the LMCache kvio semantic trace (schema 2) through validate::read_semantic_lmcache, and the
// format detection in front of both semantic readers (validate::read_semantic_as).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "validate/formats.h"
#include "validate/semantic_lmcache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    try {
        kvio::validate::SemanticTrace t = kvio::validate::read_semantic_lmcache(path);
        volatile size_t n = t.skipped_deletes;
        for (const auto& op : t.ops) n = n + op.extents.size() + op.key.size() + op.ts;
    } catch (const kvio::Error&) {}
    try {
        kvio::validate::SemanticTrace t = kvio::validate::read_semantic_as(path, kvio::validate::SemanticFormat::Auto);
        volatile size_t n = t.ops.size();
        (void)n;
    } catch (const kvio::Error&) {}
    return 0;
}
