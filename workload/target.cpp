#include "workload/target.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "workload/fiemap.h"

namespace kvio::workload {
namespace fs = std::filesystem;

std::string target_kind_name(TargetKind k) {
    switch (k) {
        case TargetKind::BlockDevice:
            return "block";
        case TargetKind::NvmeChar:
            return "nvme-char";
        case TargetKind::RegularFile:
            return "file";
        case TargetKind::Directory:
            return "directory";
    }
    return "?";
}

std::string target_kind_phrase(TargetKind k) {
    switch (k) {
        case TargetKind::BlockDevice:
            return "a block device";
        case TargetKind::NvmeChar:
            return "an NVMe generic char device";
        case TargetKind::RegularFile:
            return "a regular file";
        case TargetKind::Directory:
            return "a directory";
    }
    return "of an unknown kind";
}

static std::string fs_name(long magic) {
    switch (magic) {
        case EXT4_SUPER_MAGIC:
            return "ext4";  // also ext2/ext3
        case XFS_SUPER_MAGIC:
            return "xfs";
        case BTRFS_SUPER_MAGIC:
            return "btrfs";
        case TMPFS_MAGIC:
            return "tmpfs";
        case 0x794c7630:
            return "overlayfs";
        case 0xf2f52010:
            return "f2fs";
        default: {
            char b[32];
            std::snprintf(b, sizeof b, "fs-0x%lx", magic);
            return b;
        }
    }
}

static void fill_limits(TargetInfo& t) {
    t.part_start_bytes = t.dev.start_sector * 512;
    t.lba_bytes = t.dev.logical_block_size ? t.dev.logical_block_size : 512;
    t.mdts_bytes = uint64_t(t.dev.max_hw_sectors_kb) * 1024;
}

TargetInfo inspect_target(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw Error("target " + path +
                    " does not exist (give a block device, /dev/ngXnY, a regular file or a directory)");
    TargetInfo t;
    t.path = path;
    if (S_ISBLK(st.st_mode)) {
        t.kind = TargetKind::BlockDevice;
        t.dev = block_dev_info(DevId{major(st.st_rdev), minor(st.st_rdev)});
        fill_limits(t);
        t.capacity_bytes = t.dev.size_bytes;
        return t;
    }
    if (S_ISCHR(st.st_mode)) {
        std::error_code ec;
        std::string name = fs::canonical(fs::path("/sys/dev/char") / (std::to_string(major(st.st_rdev)) + ":" +
                                                                      std::to_string(minor(st.st_rdev))),
                                         ec)
                               .filename()
                               .string();
        if (ec || name.rfind("ng", 0) != 0)
            throw Error("target " + path + " is a character device but not an NVMe generic namespace (/dev/ngXnY)");
        auto blk = find_block_dev("nvme" + name.substr(2));
        if (!blk) throw Error("target " + path + ": no block namespace nvme" + name.substr(2) + " for it in sysfs");
        t.kind = TargetKind::NvmeChar;
        t.dev = *blk;
        fill_limits(t);
        t.capacity_bytes = t.dev.size_bytes;
        return t;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        throw Error("target " + path + " is neither a block device, /dev/ngXnY, a regular file nor a directory");
    t.kind = S_ISREG(st.st_mode) ? TargetKind::RegularFile : TargetKind::Directory;
    t.dev = block_dev_info_for_path(path);
    fill_limits(t);
    // Queue limits live on the whole disk; block_dev_info reads them there already.
    struct statfs sfs {};
    if (::statfs(path.c_str(), &sfs) == 0) t.fs_type = fs_name(long(sfs.f_type));
    if (t.kind == TargetKind::RegularFile) {
        t.capacity_bytes = uint64_t(st.st_size);
    } else {
        struct statvfs sv {};
        if (::statvfs(path.c_str(), &sv) == 0) t.capacity_bytes = uint64_t(sv.f_bavail) * sv.f_frsize;
    }
    return t;
}

void check_device_safe(const TargetInfo& t, bool force) {
    if (t.kind == TargetKind::RegularFile || t.kind == TargetKind::Directory) {
        // Effective ids, as open() checks them: EROFS for a read-only mount, EPERM for an immutable file.
        if (::faccessat(AT_FDCWD, t.path.c_str(), W_OK, AT_EACCESS) != 0)
            throw Error("refusing " + t.path + ": it is " + target_kind_phrase(t.kind) +
                        " this process cannot write (" + std::strerror(errno) + ")");
        return;
    }
    std::string mnt = mount_point_of(t.dev.dev);
    if (!mnt.empty())
        throw Error("refusing " + t.path + ": " + t.dev.name + " is mounted on " + mnt +
                    " (unmount it first; --force does not override this)");
    std::string blk = "/dev/" + t.dev.name;
    int fd = ::open(blk.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
    if (fd < 0 && errno == EBUSY)
        throw Error("refusing " + t.path + ": " + blk +
                    " is in use (mounted, a device-mapper/md member or held open exclusively)");
    if (fd < 0) fd = ::open(blk.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && t.kind == TargetKind::BlockDevice)
        fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC);  // no /dev/NAME node
    if (fd < 0) throw Error("cannot open " + blk + ": " + std::strerror(errno));
    int ro = 0;
    if (::ioctl(fd, BLKROGET, &ro) != 0) {
        int e = errno;
        ::close(fd);
        throw Error("cannot tell whether " + blk + " is read-only (BLKROGET failed: " + std::strerror(e) + ")");
    }
    if (ro) {
        ::close(fd);
        throw Error("refusing " + t.path + ": " + blk +
                    " is read-only (losetup -r or blockdev --setro; `blockdev --setrw " + blk +
                    "` makes it writable); --force does not override this");
    }
    if (force) {  // nothing to check: no read, so a trace of a forced run has no commands of this check
        ::close(fd);
        return;
    }
    std::vector<char> buf(1 << 20);
    ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
    int err = errno;
    ::close(fd);
    if (n < 0) throw Error("cannot read the first MiB of " + blk + ": " + std::strerror(err));
    for (ssize_t i = 0; i < n; ++i)
        if (buf[size_t(i)] != 0)
            throw Error("refusing " + t.path + ": it holds data at byte " + std::to_string(i) +
                        " of its first MiB (a filesystem signature or partition table?); pass --force to overwrite it");
}

void check_offset_mappable(const TargetInfo& t) {
    if (t.kind != TargetKind::RegularFile && t.kind != TargetKind::Directory) return;
    if (t.fs_type == "btrfs")
        throw Error(
            "target " + t.path +
            " is on btrfs: FIEMAP reports btrfs logical addresses, not device offsets, so --semantic cannot map it");
    if (t.dev.whole_disk_name.rfind("dm-", 0) == 0 || t.dev.whole_disk_name.rfind("md", 0) == 0)
        throw Error(
            "target " + t.path + " is on " + t.dev.whole_disk_name +
            " (device-mapper/md): FIEMAP offsets are remapped below it, so --semantic cannot map them to a disk");
}

uint64_t default_max_io(const TargetInfo& t, bool passthrough) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    uint64_t by_req = uint64_t(passthrough ? t.dev.max_hw_sectors_kb : t.dev.max_sectors_kb) * 1024;
    uint64_t by_seg = uint64_t(t.dev.max_segments) * page;
    uint64_t cap = by_req && by_seg ? std::min(by_req, by_seg) : std::max(by_req, by_seg);
    if (cap == 0) cap = 128 * 1024;
    cap -= cap % t.lba_bytes;
    return std::max<uint64_t>(cap, t.lba_bytes);
}

std::vector<std::pair<uint64_t, uint64_t>> device_extents(const TargetInfo& t, int fd, uint64_t off, uint64_t len,
                                                          const std::string& what) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    if (t.kind == TargetKind::BlockDevice || t.kind == TargetKind::NvmeChar) {
        out.push_back({t.part_start_bytes + off, len});
        return out;
    }
    for (const auto& e : file_extents(fd, off, len, what)) out.push_back({t.part_start_bytes + e.physical, e.length});
    return out;
}

}  // namespace kvio::workload
