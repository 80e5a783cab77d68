// What every command printed to standard output must have reached it: one check, in main, for all commands.
#pragma once

namespace kvio::cli {

/// The exit status of a run whose command returned `status`: `status`, or 1 when what it printed to standard output
/// could not all be written (a full disk, /dev/full, a pipe closed with SIGPIPE ignored). std::cout and stdout are
/// flushed and their error states checked; a failure says so in one line on stderr ("kvio: cannot write to standard
/// output", with ": REASON" when the failed write was the final flush's). A non-zero `status` is kept.
int stdout_checked(int status);

}  // namespace kvio::cli
