// Block device identity and queue limits, read from sysfs (/sys/dev/block, /sys/block/X/queue).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace kvio {

/// A device number as user space writes it: "MAJ:MIN".
struct DevId {
    uint32_t major = 0;
    uint32_t minor = 0;
    bool operator==(const DevId&) const = default;
    auto operator<=>(const DevId&) const = default;
};

/// Kernel-internal dev_t as BPF sees it: MAJOR << 20 | MINOR (include/linux/kdev_t.h, MINORBITS 20).
constexpr uint32_t kernel_dev(DevId d) { return (d.major << 20) | (d.minor & 0xfffff); }
/// Inverse of kernel_dev().
constexpr DevId decode_kernel_dev(uint32_t dev) { return DevId{dev >> 20, dev & 0xfffff}; }
/// "MAJ:MIN".
std::string dev_string(DevId d);
/// Parses "MAJ:MIN"; nullopt when malformed.
std::optional<DevId> parse_dev_string(const std::string& s);

/// What sysfs says about one block device. Sizes in bytes unless the name says otherwise.
struct BlockDevInfo {
    DevId dev;
    std::string name;  ///< kernel name, e.g. "loop3", "nvme0n1p1"
    bool is_partition = false;
    DevId whole_disk;  ///< == dev for a whole disk
    std::string whole_disk_name;
    uint64_t start_sector = 0;  ///< partition start on the whole disk, 512-byte sectors
    uint64_t size_bytes = 0;
    uint32_t logical_block_size = 512;
    uint32_t physical_block_size = 512;
    uint32_t max_sectors_kb = 0;     ///< current per-request limit (KiB), the kernel splits above it
    uint32_t max_hw_sectors_kb = 0;  ///< hardware limit (KiB); MDTS for NVMe
    uint32_t max_segments = 0;
    uint32_t max_segment_size = 0;  ///< bytes
    uint32_t nr_requests = 0;       ///< scheduler/tag depth of the queue
};

/// The largest transfer one block command can carry, KiB: a request's data length is a 32-bit byte count in the
/// kernel (docs/formats.md, "Device limits"), so 4 GiB − 1 byte, of which the whole KiB: 4194303 KiB.
constexpr uint32_t kMaxCommandKb = 4194303;

/// Fills the queue limits of `info` (logical/physical block size, max_sectors_kb, max_hw_sectors_kb, max_segments,
/// max_segment_size, nr_requests) from a sysfs queue directory (/sys/block/DISK/queue), each transfer limit
/// clamped to kMaxCommandKb: virtio-blk reports max_hw_sectors_kb 2147483647 ("no limit"), which no command and
/// no kvio file can carry. The one place kvio reads device limits; a missing file leaves the field's default.
void read_queue_limits(const std::string& queue_dir, BlockDevInfo& info);

/// The I/O counters of /sys/dev/block/MAJ:MIN/stat (the kernel's Documentation/block/stat.rst; docs/replay.md,
/// "Commands the device saw"): requests completed and bios merged into a request, per direction, since boot.
struct DiskStat {
    uint64_t read_ios = 0, read_merges = 0, write_ios = 0, write_merges = 0;
};
/// Reads the counters of `dev`; nullopt when the device has no stat file.
std::optional<DiskStat> read_disk_stat(DevId dev);

/// Reads /sys/dev/block/MAJ:MIN. Throws kvio::Error when the device does not exist.
BlockDevInfo block_dev_info(DevId dev);
/// Looks a device up by kernel name ("vda", "loop3") or "MAJ:MIN". nullopt when absent.
std::optional<BlockDevInfo> find_block_dev(const std::string& name_or_majmin);
/// For a block device node: that device. For a regular file or directory: the block device
/// holding its filesystem (st_dev). Throws kvio::Error naming the path on failure.
BlockDevInfo block_dev_info_for_path(const std::string& path);
/// True when the path is a block device node.
bool is_block_device(const std::string& path);
/// The mount point where the device (or one of its partitions) is mounted, per /proc/self/mountinfo; empty if none.
std::string mount_point_of(DevId dev);

}  // namespace kvio
