// Warnings of the libraries: something was dropped or could not be checked, the run goes on. The CLI prints each
// as `kvio: warning: MSG` on stderr; tests swap the sink to see them.
#pragma once
#include <functional>
#include <string>

namespace kvio {

/// Reports one warning (one sentence, no trailing newline) to the current sink.
void warn(const std::string& msg);

/// Replaces the sink (default: `kvio: warning: MSG\n` on stderr); returns the previous one. Not thread-safe.
std::function<void(const std::string&)> set_warning_sink(std::function<void(const std::string&)> sink);

}  // namespace kvio
