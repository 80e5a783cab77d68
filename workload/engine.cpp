#include "workload/engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvio::workload {

int Engine::open(const std::string& path, OpenFor mode, bool create) {
    int flags = O_CLOEXEC | (cfg_.buffered ? 0 : O_DIRECT);
    flags |= mode == OpenFor::Load ? O_RDONLY : mode == OpenFor::Store ? O_WRONLY : O_RDWR;
    if (create) flags |= O_CREAT | O_TRUNC;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0)
        throw Error("cannot open " + path + (cfg_.buffered ? "" : " with O_DIRECT") + ": " + std::strerror(errno));
    return fd;
}

void Engine::close(int fd) {
    if (fd >= 0) ::close(fd);
}

std::vector<std::string> engine_names() { return {"posix", "io_uring", "uring_cmd", "cufile"}; }

std::unique_ptr<Engine> make_engine(const EngineConfig& c) {
    if (c.qd == 0) throw Error("--qd must be at least 1");
    if (c.name == "posix") return make_posix_engine(c);
    if (c.name == "io_uring") return make_io_uring_engine(c);
    if (c.name == "uring_cmd") return make_uring_cmd_engine(c);
    if (c.name == "cufile") return make_cufile_engine(c);
    throw Error("unknown engine '" + c.name + "' (known: posix, io_uring, uring_cmd, cufile)");
}

}  // namespace kvio::workload
