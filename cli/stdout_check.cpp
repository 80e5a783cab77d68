#include "cli/stdout_check.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace kvio::cli {

int stdout_checked(int status) {
    std::cout.flush();
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = errno;
    if (flushed && !std::ferror(stdout) && !std::cout.fail()) return status;
    std::fprintf(stderr, "kvio: cannot write to standard output%s%s\n", err ? ": " : "", err ? std::strerror(err) : "");
    return status == 0 ? 1 : status;
}

}  // namespace kvio::cli
