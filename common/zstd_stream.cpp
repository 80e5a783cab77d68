#include "common/zstd_stream.h"

#include <zstd.h>

#include <new>

#include "common/error.h"

namespace kvio {

bool has_zst_suffix(const std::string& path) {
    return path.size() > 4 && path.compare(path.size() - 4, 4, ".zst") == 0;
}

ZstdCompressor::ZstdCompressor() : cctx_(ZSTD_createCCtx()) {
    if (!cctx_) throw std::bad_alloc();
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);  // a reader sees a corrupted frame, not changed records
}

ZstdCompressor::~ZstdCompressor() { ZSTD_freeCCtx(cctx_); }

void ZstdCompressor::compress(std::string_view in, std::string& out, Mode mode) {
    const ZSTD_EndDirective end = mode == Mode::End ? ZSTD_e_end : mode == Mode::Flush ? ZSTD_e_flush : ZSTD_e_continue;
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    const size_t step = ZSTD_CStreamOutSize();
    for (;;) {
        const size_t at = out.size();
        out.resize(at + step);
        ZSTD_outBuffer ob{out.data() + at, step, 0};
        const size_t left = ZSTD_compressStream2(cctx_, &ob, &ib, end);
        out.resize(at + ob.pos);
        if (ZSTD_isError(left)) throw Error(std::string("zstd: ") + ZSTD_getErrorName(left));
        // Continue: done once the input is consumed; Flush/End: once libzstd has nothing left to write.
        if (mode == Mode::Continue ? ib.pos == ib.size : left == 0) return;
    }
}

}  // namespace kvio
