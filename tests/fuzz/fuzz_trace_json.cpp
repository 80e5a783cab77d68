// libFuzzer target: the kvio.trace/1 summary (kvio trace --json), read by both of its readers: validate's
// max_sectors_kb_from_trace_json (device 7:0, the first loop device) and the distiller's profile_trace_json.
#include "common/error.h"
#include "distiller/profile.h"
#include "tests/fuzz/harness.h"
#include "validate/semantic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    try {
        (void)kvio::validate::max_sectors_kb_from_trace_json(path, 7u << 20);
    } catch (const kvio::Error&) {}
    try {
        (void)kvio::distiller::profile_trace_json(path, "");
    } catch (const kvio::Error&) {}
    return 0;
}
