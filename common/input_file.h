// Opening an input file the way every reader does, so a missing file, a directory or a permission problem reads
// the same from every command.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace kvio {

/// Opens `path` for reading in binary mode (pipes and /dev/stdin too). Throws kvio::Error
/// "PATH: cannot open: REASON" (strerror), or "PATH: Is a directory" for a directory.
std::FILE* open_input(const std::string& path);

/// The whole content of `path` (through open_input), decompressed when it is zstd (is_zstd). Throws as
/// open_input, and "PATH: read error: REASON", "PATH: zstd: REASON".
std::string read_input(const std::string& path);

/// True when `bytes` starts with the zstd frame magic (28 B5 2F FD).
bool is_zstd(std::string_view bytes);
/// Decompresses every zstd frame of `in` (frames may be concatenated). Throws kvio::Error "PATH: zstd: ..." on a
/// corrupt or cut-off frame.
std::string zstd_decompress(std::string_view in, const std::string& path);

}  // namespace kvio
