// libFuzzer target: a fio iolog v2/v3 (kvio import fio-iolog) through importer::import_fio_iolog with a given
// device (so no file of the log has to exist), the kvio.events/1 it writes discarded.
#include "common/error.h"
#include "importer/fio_iolog.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::ostream& out = kvio::fuzz::null_stream();
    try {
        kvio::importer::IologImportOptions o;
        o.dev = "259:3";
        kvio::importer::import_fio_iolog(kvio::fuzz::input_file(data, size), o, out);
    } catch (const kvio::Error&) {}
    return 0;
}
