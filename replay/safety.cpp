#include "replay/safety.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace kvio::replay {

std::vector<std::pair<uint64_t, uint64_t>> merge_ranges(std::vector<std::pair<uint64_t, uint64_t>> r) {
    std::sort(r.begin(), r.end());
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& [off, len] : r) {
        if (len == 0) continue;
        if (!out.empty() && off <= out.back().first + out.back().second) {
            uint64_t end = std::max(out.back().first + out.back().second, off + len);
            out.back().second = end - out.back().first;
        } else {
            out.push_back({off, len});
        }
    }
    return out;
}

CheckComm::CheckComm() {
    ::prctl(PR_GET_NAME, saved_);
    ::prctl(PR_SET_NAME, kCheckComm);
}
CheckComm::~CheckComm() { ::prctl(PR_SET_NAME, saved_); }

uint64_t check_zero(const std::string& path, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                    const std::string& skip_if_prefix, uint64_t max_bytes) {
    CheckComm comm;
    // Buffered reads: a block device's page cache is coherent with O_DIRECT writes (they invalidate it).
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + path + " to check it: " + std::strerror(errno));
    struct stat st {};
    ::fstat(fd, &st);
    uint64_t size = UINT64_MAX;
    if (S_ISREG(st.st_mode)) size = uint64_t(st.st_size);
    std::vector<char> buf(1 << 20);
    uint64_t checked = 0;
    auto fail = [&](const std::string& m) {
        ::close(fd);
        throw Error(m);
    };
    for (const auto& [off, len] : ranges) {
        if (checked >= max_bytes) break;
        uint64_t end = std::min(off + len, size);
        bool first = true;
        for (uint64_t pos = off; pos < end && checked < max_bytes;) {
            size_t want = size_t(std::min<uint64_t>(buf.size(), end - pos));
            ssize_t n = ::pread(fd, buf.data(), want, off_t(pos));
            if (n < 0) fail("cannot read " + path + " at byte " + std::to_string(pos) + ": " + std::strerror(errno));
            if (n == 0) break;
            if (first && !skip_if_prefix.empty() && size_t(n) >= skip_if_prefix.size() &&
                std::memcmp(buf.data(), skip_if_prefix.data(), skip_if_prefix.size()) == 0)
                break;
            first = false;
            for (ssize_t i = 0; i < n; ++i)
                if (buf[size_t(i)] != 0)
                    fail("refusing " + path + ": it holds data at byte " + std::to_string(pos + uint64_t(i)) +
                         " where the replay would write; pass --force to overwrite it");
            pos += uint64_t(n);
            checked += uint64_t(n);
        }
    }
    ::close(fd);
    return checked;
}

}  // namespace kvio::replay
