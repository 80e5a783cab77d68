// A main() for a fuzz target outside libFuzzer: feeds every file named on the command line (directories: every
// file in them, in name order) to LLVMFuzzerTestOneInput once. `make test` runs each target over its committed
// corpus with it, so an input that crashed once stays fixed. Exit 0 when every input ran; 1 when an input threw
// or no input was found.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        std::error_code ec;
        if (fs::is_directory(argv[i], ec)) {
            for (const auto& e : fs::directory_iterator(argv[i]))
                if (e.is_regular_file()) inputs.push_back(e.path());
        } else {
            inputs.emplace_back(argv[i]);
        }
    }
    std::sort(inputs.begin(), inputs.end());
    if (inputs.empty()) {
        std::fprintf(stderr, "%s: no inputs (give corpus files or directories)\n", argv[0]);
        return 1;
    }
    size_t bad = 0;
    for (const auto& p : inputs) {
        std::ifstream in(p, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "%s: cannot open\n", p.c_str());
            ++bad;
            continue;
        }
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        try {
            LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: uncaught exception: %s\n", p.c_str(), e.what());
            ++bad;
        }
    }
    std::printf("%s: %zu inputs, %zu failed\n", fs::path(argv[0]).filename().c_str(), inputs.size(), bad);
    return bad ? 1 : 0;
}
