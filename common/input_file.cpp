#include "common/input_file.h"

#include <sys/stat.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.h"

namespace kvio {

std::FILE* open_input(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(::fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fclose(f);
        throw Error(path + ": " + std::strerror(EISDIR));
    }
    return f;
}

std::string read_input(const std::string& path) {
    std::FILE* f = open_input(path);
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    const bool bad = std::ferror(f);
    const int err = errno;
    std::fclose(f);
    if (bad) throw Error(path + ": read error: " + std::strerror(err));
    return is_zstd(s) ? zstd_decompress(s, path) : s;
}

bool is_zstd(std::string_view bytes) { return bytes.size() >= 4 && bytes.substr(0, 4) == "\x28\xB5\x2F\xFD"; }

std::string zstd_decompress(std::string_view in, const std::string& path) {
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dc(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dc) throw Error(path + ": zstd: out of memory");
    std::string out;
    std::vector<char> buf(ZSTD_DStreamOutSize());
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    size_t left = 0;
    bool full = false;  // a full output buffer may leave bytes in the decoder
    while (ib.pos < ib.size || full) {
        ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
        left = ZSTD_decompressStream(dc.get(), &ob, &ib);
        if (ZSTD_isError(left)) throw Error(path + ": zstd: " + ZSTD_getErrorName(left));
        out.append(buf.data(), ob.pos);
        full = ob.pos == ob.size;
    }
    if (left != 0) throw Error(path + ": zstd: the file ends inside a frame (cut off?)");
    return out;
}

}  // namespace kvio
