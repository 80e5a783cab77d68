// libFuzzer target: the binary capture kvio.events.bin/1, read by both of its readers: kvio::EventsReader
// (validate, distill, replay) and `kvio dump`'s converter back to kvio.events/1 (trace/events_dump.h).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "trace/events_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    kvio::fuzz::drain_events(path);
    try {
        kvio::trace::dump_capture(path, "/dev/null");
    } catch (const kvio::Error&) {}
    return 0;
}
