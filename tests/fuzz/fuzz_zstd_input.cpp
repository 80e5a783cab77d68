// libFuzzer target: common/input_file's zstd decompression (every reader's .zst input) and the peek that format
// detection uses in front of a reader: the bytes peeked and then read are the bytes read directly.
#include <cstdlib>

#include "common/error.h"
#include "common/input_file.h"
#include "common/warn.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static bool quiet = (kvio::set_warning_sink([](const std::string&) {}), true);
    (void)quiet;
    const std::string& path = kvio::fuzz::input_file(data, size);
    std::string direct;
    bool ok = true;
    try {
        direct = kvio::read_input(path);
    } catch (const kvio::Error&) {
        ok = false;
    }
    try {
        const std::string head = kvio::peek_input(path, 100);
        const std::string again = kvio::read_input(path);
        if (ok && (again != direct || head != direct.substr(0, head.size())))
            std::abort();  // the peek changed the stream
    } catch (const kvio::Error&) {}
    return 0;
}
