// Where a file's bytes sit on its block device: FIEMAP (Documentation/filesystems/fiemap.rst).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::workload {

/// One mapped piece of a file range. Bytes.
struct FileExtent {
    uint64_t logical = 0;   ///< offset in the file
    uint64_t physical = 0;  ///< offset on the filesystem's block device (partition-relative)
    uint64_t length = 0;
    uint32_t flags = 0;  ///< FIEMAP_EXTENT_* of the extent
};

/// Maps file bytes [off, off+len) of open file `fd` with FIEMAP_FLAG_SYNC (flushes delayed allocation
/// first), paginated until the extent flagged FIEMAP_EXTENT_LAST or the range end. Extents are clipped
/// to the range. Throws kvio::Error (naming `what`) when FIEMAP fails, when part of the range is a
/// hole, or when an extent has no stable device address (FIEMAP_EXTENT_UNKNOWN/ENCODED/NOT_ALIGNED/
/// DATA_INLINE).
std::vector<FileExtent> file_extents(int fd, uint64_t off, uint64_t len, const std::string& what);

}  // namespace kvio::workload
