#include "workload/serving/results/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvio::serving {

void check_output_writable(const std::string& flag, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw Error("simulate: " + flag + " " + path + " is a directory; give a file name");
    std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    if (dir.empty()) dir = "/";
    if (::access(dir.c_str(), W_OK) != 0)
        throw Error("simulate: " + flag + " " + path + ": cannot write in " + dir + ": " + std::strerror(errno));
}

}  // namespace kvio::serving
