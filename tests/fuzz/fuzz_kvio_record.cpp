// libFuzzer target: the reference tooling's kvio_record.json through workload::record_from_kvio_record_json (and
// read_record_any, replay's entry), then plan_ops, which replay runs on what the reader accepted.
#include "common/error.h"
#include "common/jsonl.h"
#include "tests/fuzz/harness.h"
#include "workload/record_foreign.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    try {
        const kvio::json j = kvio::read_json_file(path);
        for (int any = 0; any < 2; ++any) {
            try {
                kvio::workload::Record r = any ? kvio::workload::read_record_any(j, path)
                                               : kvio::workload::record_from_kvio_record_json(j, path);
                volatile size_t n = 0;
                for (const auto& op : kvio::workload::plan_ops(r)) n = n + op.offset + op.io_bytes + op.key.size();
            } catch (const kvio::Error&) {}
        }
    } catch (const kvio::Error&) {}
    return 0;
}
