#include "userspace/event_writer.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"

namespace kvio::trace {

EventWriter::EventWriter(const std::string& path, size_t chunk_bytes) : path_(path), chunk_(chunk_bytes) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) throw Error(path + ": cannot write: " + std::strerror(errno));
    enc_.reserve(chunk_ + 4096);  // one record past the threshold fits without growing
}

EventWriter::~EventWriter() {
    try {
        close();
    } catch (...) {
    }
}

void EventWriter::cmd(const kvio_cmd_event& e) {
    enc_.cmd(e, devs_);
    ++written_;
    maybe_flush();
}

void EventWriter::syscall(const kvio_syscall_event& e) {
    enc_.syscall(e);
    ++written_;
    maybe_flush();
}

void EventWriter::line(const nlohmann::json& j) {
    enc_.line(j);
    maybe_flush();
}

void EventWriter::flush() {
    const char* p = enc_.data();
    size_t n = enc_.size();
    while (n && !err_ && fd_ >= 0) {
        ssize_t r = ::write(fd_, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            err_ = errno;
        } else if (r == 0) {
            err_ = EIO;  // no progress on a non-empty write: do not spin
        } else {
            p += r;
            n -= size_t(r);
        }
    }
    enc_.clear();
}

void EventWriter::close() {
    if (fd_ >= 0) {
        flush();
        if (::close(fd_) != 0 && !err_) err_ = errno;
        fd_ = -1;
    }
    if (err_) throw Error(path_ + ": write failed: " + std::strerror(err_));
}

}  // namespace kvio::trace
