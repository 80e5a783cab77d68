// libFuzzer target: kvio.events/1 JSONL through kvio::EventsReader (common/events_reader.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    kvio::fuzz::drain_events(kvio::fuzz::input_file(data, size));
    return 0;
}
