// zstd streaming compression for kvio's writers (`kvio trace --events X.zst`, `kvio gen --semantic X.zst`):
// libzstd's ZSTD_compressStream2, so a file is one frame whose every flushed part can be decoded while it grows.
// Reading .zst input is common/input_file.h's job (every reader).
#pragma once
#include <string>
#include <string_view>

struct ZSTD_CCtx_s;

namespace kvio {

/// True when `path` ends in ".zst": the writers compress such a file.
bool has_zst_suffix(const std::string& path);

/// One zstd frame, compressed a piece at a time (level 3, the zstd command's default, with the frame's content
/// checksum, so a corrupted file fails to decode instead of yielding changed records).
class ZstdCompressor {
public:
    ZstdCompressor();
    ~ZstdCompressor();
    ZstdCompressor(const ZstdCompressor&) = delete;
    ZstdCompressor& operator=(const ZstdCompressor&) = delete;

    enum class Mode { Continue, Flush, End };
    /// Compresses `in` and appends the compressed bytes to `out`. Continue: libzstd may keep some input
    /// buffered; Flush: `out` then holds everything given so far (a reader decodes every byte of it); End: also
    /// the frame end (a finished, valid .zst; nothing may follow). Throws kvio::Error "zstd: REASON".
    void compress(std::string_view in, std::string& out, Mode mode);

private:
    ZSTD_CCtx_s* cctx_ = nullptr;
};

}  // namespace kvio
