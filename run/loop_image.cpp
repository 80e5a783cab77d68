#include "run/loop_image.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "run/stage_process.h"

namespace kvio::run {

namespace fs = std::filesystem;

namespace {
std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}
}  // namespace

void detach_image(const std::string& image) {
    for (int attempt = 0; attempt < 50; ++attempt) {
        std::string list = trimmed(run_helper({"losetup", "-j", image}).second);
        if (list.empty()) return;
        std::istringstream ls(list);
        std::string line;
        while (std::getline(ls, line)) {
            auto colon = line.find(':');
            if (colon != std::string::npos) run_helper({"losetup", "-d", line.substr(0, colon)});
        }
        usleep(100000);
    }
}

void unmount_dir(const std::string& dir) noexcept {
    try {
        // A stage killed a moment ago may still hold a file open: retry while busy, then detach it lazily so the
        // loop device can go.
        bool mounted = true;
        for (int attempt = 0; mounted && attempt < 50; ++attempt) {
            if (::umount2(dir.c_str(), 0) == 0 || errno == EINVAL || errno == ENOENT)
                mounted = false;
            else
                usleep(100000);
        }
        if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
        std::error_code ec;
        fs::remove(dir, ec);
    } catch (...) {}
}

LoopImage::LoopImage(const std::string& image, uint64_t bytes, bool keep) : image_(image), keep_(keep) {
    try {
        attach(bytes);
    } catch (...) {
        cleanup();
        throw;
    }
}

LoopImage::~LoopImage() { cleanup(); }

void LoopImage::attach(uint64_t bytes) {
    {
        int fd = open(image_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw Error("cannot create " + image_ + ": " + std::strerror(errno));
        created_ = true;
        int rc = ftruncate(fd, off_t(bytes));
        close(fd);
        if (rc != 0) throw Error("cannot size " + image_ + ": " + std::strerror(errno));
    }
    auto [st, out] = run_helper({"losetup", "--find", "--show", "--direct-io=on", image_});
    dev_ = trimmed(out);
    if (st != 0 || dev_.rfind("/dev/loop", 0) != 0) {
        // losetup may have attached and failed after: detach whatever holds the image_.
        detach_image(image_);
        throw Error("losetup --direct-io=on " + image_ + " failed (exit status " + std::to_string(st) + "): " + dev_);
    }
    name_ = dev_.substr(5);
}

void LoopImage::cleanup() noexcept {
    try {
        detach_image(image_);
        std::error_code ec;
        if (created_ && !keep_) fs::remove(image_, ec);
    } catch (...) {}
}

Ext4Mount::Ext4Mount(const std::string& dev, const std::string& dir) : dir_(dir) {
    auto [st, out] =
        run_helper({"mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard", dev});
    if (st != 0) throw Error("mkfs.ext4 " + dev + " failed (exit status " + std::to_string(st) + "): " + trimmed(out));
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("cannot create mount point " + dir_ + ": " + ec.message());
    std::tie(st, out) = run_helper({"mount", "-t", "ext4", dev, dir_});
    if (st != 0) {
        fs::remove(dir_, ec);
        throw Error("mount " + dev + " " + dir_ + " failed (exit status " + std::to_string(st) + "): " + trimmed(out));
    }
    mounted_ = true;
}

Ext4Mount::~Ext4Mount() {
    if (mounted_) unmount_dir(dir_);
}

}  // namespace kvio::run
