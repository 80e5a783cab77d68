// libFuzzer target: a blktrace per-CPU file (kvio import blktrace) through importer::import_blktrace, the
// kvio.events/1 it writes discarded.
#include "common/error.h"
#include "importer/blktrace.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::ostream& out = kvio::fuzz::null_stream();
    try {
        kvio::importer::import_blktrace(kvio::fuzz::input_file(data, size), out);
    } catch (const kvio::Error&) {}
    return 0;
}
