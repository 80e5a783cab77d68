#include "workload/fiemap.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace kvio::workload {

std::vector<FileExtent> file_extents(int fd, uint64_t off, uint64_t len, const std::string& what) {
    constexpr uint32_t kBatch = 64;
    std::vector<unsigned char> mem(sizeof(struct fiemap) + kBatch * sizeof(struct fiemap_extent));
    auto* fm = reinterpret_cast<struct fiemap*>(mem.data());
    std::vector<FileExtent> out;
    const uint64_t end = off + len;
    uint64_t pos = off;
    bool last = false;
    while (pos < end && !last) {
        std::memset(mem.data(), 0, mem.size());
        fm->fm_start = pos;
        fm->fm_length = end - pos;
        fm->fm_flags = FIEMAP_FLAG_SYNC;
        fm->fm_extent_count = kBatch;
        if (ioctl(fd, FS_IOC_FIEMAP, fm) != 0)
            throw Error(what + ": FIEMAP failed: " + std::strerror(errno) + " (the filesystem cannot report extents)");
        if (fm->fm_mapped_extents == 0) break;
        for (uint32_t i = 0; i < fm->fm_mapped_extents; ++i) {
            const auto& e = fm->fm_extents[i];
            if (e.fe_flags &
                (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE))
                throw Error(what + ": extent at file offset " + std::to_string(e.fe_logical) +
                            " has no stable device address (FIEMAP flags " + std::to_string(e.fe_flags) + ")");
            uint64_t lo = std::max<uint64_t>(e.fe_logical, pos);
            uint64_t hi = std::min<uint64_t>(e.fe_logical + e.fe_length, end);
            if (hi > lo) {
                uint64_t physical = e.fe_physical + (lo - e.fe_logical);
                if (!out.empty() && out.back().logical + out.back().length == lo &&
                    out.back().physical + out.back().length == physical && out.back().flags == e.fe_flags)
                    out.back().length += hi - lo;
                else
                    out.push_back({lo, physical, hi - lo, e.fe_flags});
            }
            pos = std::max<uint64_t>(pos, e.fe_logical + e.fe_length);
            if (e.fe_flags & FIEMAP_EXTENT_LAST) last = true;
        }
    }
    uint64_t covered = 0;
    for (const auto& e : out) covered += e.length;
    if (covered != len)
        throw Error(what + ": FIEMAP maps " + std::to_string(covered) + " of " + std::to_string(len) +
                    " bytes at offset " + std::to_string(off) + " (a hole or unallocated range)");
    return out;
}

}  // namespace kvio::workload
