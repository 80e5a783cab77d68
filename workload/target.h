// The target of `kvio gen`: a block device, an NVMe generic char device (/dev/ngXnY), a regular file
// or a directory; what it is, where its bytes land, its limits, and the safety checks before writing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/devinfo.h"

namespace kvio::workload {

enum class TargetKind { BlockDevice, NvmeChar, RegularFile, Directory };

/// "block" | "nvme-char" | "file" | "directory".
std::string target_kind_name(TargetKind k);
/// The kind as a sentence takes it: "a block device", "an NVMe generic char device", "a regular file", "a directory".
std::string target_kind_phrase(TargetKind k);

/// What kvio knows about a target path. Sizes in bytes.
struct TargetInfo {
    std::string path;
    TargetKind kind = TargetKind::BlockDevice;
    /// The block device the bytes reach: the target itself (block), nvmeXnY (for ngXnY), or the device
    /// holding the file/directory's filesystem.
    BlockDevInfo dev;
    uint64_t part_start_bytes = 0;  ///< dev.start_sector × 512: added to offsets to get whole-disk offsets
    uint64_t capacity_bytes = 0;    ///< block: device size; file: file size; directory: free space
    uint32_t lba_bytes = 512;       ///< logical_block_size of the whole disk
    uint64_t mdts_bytes = 0;        ///< max_hw_sectors_kb × 1024 (NVMe: MDTS)
    std::string fs_type;            ///< file/directory: "ext4", "xfs", "btrfs", ... (from statfs magic)
};

/// Inspects `path`. Throws kvio::Error when it does not exist or is not one of the four kinds.
TargetInfo inspect_target(const std::string& path);

/// Refuses to write a target that cannot or must not be written. Block and NVMe targets: read-only
/// (BLKROGET, e.g. `losetup -r` or `blockdev --setro`), mounted (per /proc/self/mountinfo, or O_EXCL open
/// fails with EBUSY), or non-zero bytes in its first MiB (a filesystem signature or partition table) unless
/// `force`. Files and directories: not writable by this process (read-only filesystem, immutable file,
/// permissions). `force` overrides only the first-MiB check. Throws kvio::Error.
void check_device_safe(const TargetInfo& t, bool force);

/// Refuses file/directory targets whose FIEMAP offsets are not device offsets: btrfs (logical
/// addresses across devices) and device-mapper / md devices (remapped below the filesystem).
void check_offset_mappable(const TargetInfo& t);

/// The per-I/O transfer cap that keeps command sizes independent of memory layout:
/// min(max_sectors_kb × 1024, max_segments × PAGE_SIZE) on the block path; for NVMe passthrough
/// (uring_cmd) min(max_hw_sectors_kb × 1024, max_segments × PAGE_SIZE), since the kernel does not
/// split passthrough commands. Rounded down to lba_bytes. See shared/README.md for the measured splits.
uint64_t default_max_io(const TargetInfo& t, bool passthrough);

/// Byte offsets on the whole-disk device for target bytes [off, off+len) of open `fd`:
/// block/NVMe targets: one extent at part_start + off; files: FIEMAP extents + part_start.
/// Each entry is {dev_off, length}.
std::vector<std::pair<uint64_t, uint64_t>> device_extents(const TargetInfo& t, int fd, uint64_t off, uint64_t len,
                                                          const std::string& what);

}  // namespace kvio::workload
