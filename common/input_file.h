// Opening an input file the way every reader does, so a missing file, a directory or a permission problem reads
// the same from every command, and a zstd-compressed file (`x.jsonl.zst`, `zstd -c x | kvio ... /dev/stdin`)
// reads as its decompressed bytes in every reader.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>

namespace kvio {

/// Opens `path` for reading in binary mode (pipes and /dev/stdin too). A stream that starts with the zstd frame
/// magic (28 b5 2f fd) is decompressed as it is read (libzstd streaming; concatenated frames read as one), whatever
/// the file is called. A zstd stream cut off mid-frame (the writer was killed) yields what it holds and warns
/// "PATH: the zstd stream is cut off (the writer was killed?): read up to the cut"; a corrupt one warns
/// "PATH: not valid zstd: REASON" and the read fails (EBADMSG: readers say "PATH: read error: Bad message").
/// A stream peek_input() looked at is handed over here (opened once: a pipe cannot be reopened).
/// Throws kvio::Error "PATH: cannot open: REASON" (strerror), or "PATH: Is a directory" for a directory.
std::FILE* open_input(const std::string& path);

/// The whole content of `path` (through open_input). Throws as open_input, and "PATH: read error: REASON".
std::string read_input(const std::string& path);

/// The first (up to) `n` bytes of `path` as open_input() reads them (decompressed), without using them up: the
/// stream is kept and the next open_input(path) returns it from its first byte. For format detection in front of
/// a reader that opens the path itself, also on a pipe. Throws as open_input.
std::string peek_input(const std::string& path, size_t n);

}  // namespace kvio
