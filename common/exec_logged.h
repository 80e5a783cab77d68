// The last step of starting a helper process: in a freshly forked child, send stdout and stderr to a log file,
// stdin from /dev/null, and exec. Shared by `kvio run` (its stages) and `kvio simulate` (its tracer).
#pragma once
#include <string>
#include <vector>

namespace kvio {

/// Call only in a forked child. `out_fd` (if >= 0) becomes stdout and stderr, /dev/null stdin, then execvp(argv[0],
/// argv). Never returns: when exec fails it prints "<who>: cannot run ARGV0: ERROR" and exits with status 127.
[[noreturn]] void exec_with_output(const std::vector<std::string>& argv, int out_fd, const char* who);

/// Call only in a forked child. Opens `log` (appended when `append`, else truncated; mode 0644) as stdout and
/// stderr, /dev/null as stdin, then execvp(argv[0], argv). Never returns: when exec fails it prints
/// "<who>: cannot run ARGV0: ERROR" to the log and exits with status 127.
[[noreturn]] void exec_logged(const std::vector<std::string>& argv, const std::string& log, bool append,
                              const char* who);

}  // namespace kvio
