// Output files of `kvio simulate` (--output, --xlsx-output): refused before the run when they cannot be written,
// so a long run's results are not lost at its end.
#pragma once
#include <string>

namespace kvio::serving {

/// Throws kvio::Error "simulate: FLAG PATH is a directory; ..." or "simulate: FLAG PATH: cannot write in DIR:
/// REASON" when `path` is a directory or its directory is missing or not writable.
void check_output_writable(const std::string& flag, const std::string& path);

}  // namespace kvio::serving
