// SHA-256 (FIPS 180-4) of bytes or of a file, as lowercase hex: the provenance of a binary (docs/mlperf-benchmark.md,
// "Running a CLOSED submission with kvio").
#pragma once
#include <string>
#include <string_view>

namespace kvio {

/// SHA-256 of `bytes`: 64 lowercase hex digits ("e3b0c442...b855" for the empty string).
std::string sha256_hex(std::string_view bytes);

/// SHA-256 of the whole file at `path`, read in 1 MiB pieces. Throws kvio::Error "PATH: cannot read: REASON".
std::string sha256_file_hex(const std::string& path);

}  // namespace kvio
