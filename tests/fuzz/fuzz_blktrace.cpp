// libFuzzer target: a blktrace per-CPU file (kvio import blktrace) through importer::import_blktrace, the
// kvio.events/1 it writes discarded.
#include <ostream>
#include <streambuf>

#include "common/error.h"
#include "importer/blktrace.h"
#include "tests/fuzz/harness.h"

namespace {
struct NullBuf : std::streambuf {
    int overflow(int c) override { return c; }
    std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    NullBuf buf;
    std::ostream out(&buf);
    try {
        kvio::importer::import_blktrace(kvio::fuzz::input_file(data, size), out);
    } catch (const kvio::Error&) {
    }
    return 0;
}
