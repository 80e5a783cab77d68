#include "workload/created_target.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvio::workload {

CreatedTarget::CreatedTarget(const std::string& path, bool directory) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 || errno != ENOENT) return;      // exists (inspect_target judges it)
    if (path.rfind("/dev/", 0) == 0 && path.rfind("/dev/shm/", 0) != 0)  // /dev/shm: a tmpfs for users
        throw Error("target " + path + " does not exist (a missing device is not created as a file under /dev)");
    int rc =
        directory ? ::mkdir(path.c_str(), 0755) : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (rc < 0)
        throw Error("target " + path + " does not exist and cannot be created as " +
                    (directory ? "a directory" : "a regular file") + ": " + std::strerror(errno));
    if (!directory) ::close(rc);
    path_ = path;
    directory_ = directory;
}

CreatedTarget::~CreatedTarget() {
    if (!path_.empty()) directory_ ? ::rmdir(path_.c_str()) : ::unlink(path_.c_str());
}

}  // namespace kvio::workload
