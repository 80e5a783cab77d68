#include "common/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvio {

std::FILE* open_input(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(::fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fclose(f);
        throw Error(path + ": " + std::strerror(EISDIR));
    }
    return f;
}

std::string read_input(const std::string& path) {
    std::FILE* f = open_input(path);
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    const bool bad = std::ferror(f);
    const int err = errno;
    std::fclose(f);
    if (bad) throw Error(path + ": read error: " + std::strerror(err));
    return s;
}

}  // namespace kvio
