// The embedded devices of `kvio run`: a sparse image file attached as a loop device with direct I/O, and (for the
// simulate workload) an ext4 filesystem made and mounted on one.
#pragma once
#include <cstdint>
#include <string>

namespace kvio::run {

/// Detaches every loop device whose backing file is `image` (`losetup -j`; a device still open is detached by the
/// kernel at its last close), retrying for up to 5 s while one is busy. Throws kvio::Error when losetup cannot run.
void detach_image(const std::string& image);

/// Unmounts `dir` (retried for up to 5 s while busy, then detached lazily: MNT_DETACH) and removes the directory
/// when it is empty. A `dir` that is not mounted is only removed. Never throws.
void unmount_dir(const std::string& dir) noexcept;

/// A sparse image file attached as a loop device with direct I/O; detached (and removed unless kept) at destruction.
/// losetup's answers come through a pipe, never a file: on a full filesystem the detach still finds the device.
/// Throws kvio::Error when the image cannot be created or sized or losetup fails (everything created is undone).
class LoopImage {
public:
    LoopImage(const std::string& image, uint64_t bytes, bool keep);
    ~LoopImage();
    LoopImage(const LoopImage&) = delete;
    LoopImage& operator=(const LoopImage&) = delete;
    const std::string& dev() const { return dev_; }    ///< /dev/loopN
    const std::string& name() const { return name_; }  ///< loopN

private:
    void attach(uint64_t bytes);
    void cleanup() noexcept;
    std::string image_, dev_, name_;
    bool keep_ = false, created_ = false;
};

/// ext4 made on `dev` (mkfs.ext4 with the inode tables and journal initialised now, no discard: no lazy-init
/// writes from a kernel thread later in the trace) and mounted at `dir` (created); unmounted at destruction
/// (retried while busy) and `dir` removed. Throws kvio::Error naming mkfs or mount and their output.
class Ext4Mount {
public:
    Ext4Mount(const std::string& dev, const std::string& dir);
    ~Ext4Mount();
    Ext4Mount(const Ext4Mount&) = delete;
    Ext4Mount& operator=(const Ext4Mount&) = delete;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
    bool mounted_ = false;
};

}  // namespace kvio::run
