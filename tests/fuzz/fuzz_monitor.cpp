// libFuzzer target: the NVMe io_uring_cmd monitor JSONL through validate::MonitorReader (all three variants), and
// the commands format detection in front of it and kvio.events/1 (validate::open_commands).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "validate/commands_monitor.h"
#include "validate/formats.h"

namespace {
void drain(kvio::validate::CommandReader& r) {
    kvio::validate::Command c;
    volatile uint64_t sink = 0;
    while (r.next(c)) sink = sink + c.offset + c.bytes + c.key.size() + c.user_data + c.dev;
    for (const auto& w : r.warnings()) sink = sink + w.size();
    sink = sink + r.summary_dropped();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = kvio::fuzz::input_file(data, size);
    try {
        kvio::validate::MonitorReader r(path);
        drain(r);
    } catch (const kvio::Error&) {}
    try {
        auto r = kvio::validate::open_commands(path, kvio::validate::CommandsFormat::Auto);
        drain(*r);
    } catch (const kvio::Error&) {}
    return 0;
}
