// Opening an input file the way every reader does, so a missing file, a directory or a permission problem reads
// the same from every command.
#pragma once
#include <cstdio>
#include <string>

namespace kvio {

/// Opens `path` for reading in binary mode (pipes and /dev/stdin too). Throws kvio::Error
/// "PATH: cannot open: REASON" (strerror), or "PATH: Is a directory" for a directory.
std::FILE* open_input(const std::string& path);

/// The whole content of `path` (through open_input). Throws as open_input, and "PATH: read error: REASON".
std::string read_input(const std::string& path);

}  // namespace kvio
