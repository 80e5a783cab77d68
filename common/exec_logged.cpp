#include "common/exec_logged.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kvio {

void exec_with_output(const std::vector<std::string>& argv, int out_fd, const char* who) {
    if (out_fd >= 0) {
        dup2(out_fd, 1);
        dup2(out_fd, 2);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "%s: cannot run %s: %s\n", who, args[0], std::strerror(errno));
    _exit(127);
}

void exec_logged(const std::vector<std::string>& argv, const std::string& log, bool append, const char* who) {
    exec_with_output(argv, open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644),
                     who);
}

}  // namespace kvio
