// libFuzzer target: the record manifest (kvio gen --record), read by both of its readers: replay's
// workload::record_from_json and validate's merge_record_manifest (which takes device_geometry only).
#include "common/error.h"
#include "common/jsonl.h"
#include "tests/fuzz/harness.h"
#include "validate/semantic.h"
#include "workload/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    try {
        kvio::workload::Record r = kvio::workload::record_from_json(kvio::read_json_file(path), path);
        volatile size_t n = r.objects.size();
        for (const auto& o : r.objects) n = n + o.ops.size() + o.key.size();
    } catch (const kvio::Error&) {}
    try {
        kvio::validate::SemanticMeta meta;
        kvio::validate::merge_record_manifest(meta, path);
    } catch (const kvio::Error&) {}
    return 0;
}
