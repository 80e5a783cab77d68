// uring_cmd engine: NVMe passthrough on the generic char device /dev/ngXnY (IORING_OP_URING_CMD with
// cmd_op NVME_URING_CMD_IO, rings set up with SQE128 + CQE32 as drivers/nvme/host/ioctl.c requires).
// Each transfer is one NVMe Read (0x02) / Write (0x01): cdw10/11 = SLBA, cdw12[15:0] = NLB - 1
// (0-based, NVMe base spec "Command Dword 12"). The kernel does not split passthrough commands, so the
// executor caps every transfer at MDTS (max_hw_sectors_kb) before it gets here.
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "common/error.h"
#include "workload/engine.h"
#include "workload/uring_reap.h"

namespace kvio::workload {
namespace {

constexpr uint8_t kNvmeCmdWrite = 0x01;
constexpr uint8_t kNvmeCmdRead = 0x02;

/// True when `path` is an NVMe generic char device (/sys/dev/char/MAJ:MIN names "ngXnY").
bool is_nvme_generic(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return false;
    std::error_code ec;
    auto p = std::filesystem::canonical(
        "/sys/dev/char/" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)), ec);
    return !ec && p.filename().string().rfind("ng", 0) == 0;
}

class UringCmdEngine final : public Engine {
public:
    explicit UringCmdEngine(const EngineConfig& c) : Engine(c) {
        if (c.buffered) throw Error("engine uring_cmd is NVMe passthrough: --buffered does not apply");
        int r = io_uring_queue_init(std::max<uint32_t>(c.qd, 1), &ring_, IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
        if (r < 0)
            throw Error(std::string("io_uring_queue_init(SQE128|CQE32) failed: ") + std::strerror(-r) +
                        " (kernel without big SQE support, 5.19+ needed)");
    }
    ~UringCmdEngine() override { io_uring_queue_exit(&ring_); }
    std::string name() const override { return "uring_cmd"; }

    int open(const std::string& path, OpenFor mode, bool create) override {
        (void)mode;
        if (create || !is_nvme_generic(path))
            throw Error("engine uring_cmd needs an NVMe generic char device /dev/ngXnY as --target; " + path +
                        " is not one (use --engine posix or io_uring for block devices and files)");
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
        int ns = ::ioctl(fd, NVME_IOCTL_ID);
        if (ns <= 0) {
            int e = errno;
            ::close(fd);
            throw Error("NVME_IOCTL_ID on " + path + " failed: " + std::strerror(e));
        }
        nsid_ = uint32_t(ns);
        return fd;
    }

    void queue(const IoUnit& u) override {
        const uint32_t lba = cfg_.lba_bytes;
        if (u.offset % lba || u.len % lba || u.len == 0)
            throw Error("uring_cmd: transfer at " + std::to_string(u.offset) + " of " + std::to_string(u.len) +
                        " bytes is not a whole number of " + std::to_string(lba) + "-byte LBAs");
        const uint64_t nlb = u.len / lba;
        if (nlb > 0x10000)
            throw Error("uring_cmd: transfer of " + std::to_string(nlb) + " LBAs exceeds NVMe's 16-bit NLB");
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) {
            commit();
            sqe = io_uring_get_sqe(&ring_);
            if (!sqe) throw Error("uring_cmd: submission queue full");
        }
        std::memset(sqe, 0, 128);  // an SQE128 entry: 64-byte SQE + 80 bytes of command (sqe->cmd) overlap
        sqe->opcode = IORING_OP_URING_CMD;
        sqe->fd = u.fd;
        sqe->cmd_op = NVME_URING_CMD_IO;
        sqe->user_data = u.user_data;
        nvme_uring_cmd cmd{};
        const uint64_t slba = u.offset / lba;
        cmd.opcode = u.write ? kNvmeCmdWrite : kNvmeCmdRead;
        cmd.nsid = nsid_;
        cmd.addr = reinterpret_cast<uint64_t>(u.buf);
        cmd.data_len = u.len;
        cmd.cdw10 = uint32_t(slba & 0xffffffffu);
        cmd.cdw11 = uint32_t(slba >> 32);
        cmd.cdw12 = uint32_t(nlb - 1);  // NLB is 0-based
        static_assert(sizeof(nvme_uring_cmd) <= 80, "nvme_uring_cmd must fit the SQE128 command area");
        std::memcpy(sqe->cmd, &cmd, sizeof cmd);
        lens_[u.user_data] = u.len;
    }

    void commit() override {
        int r = io_uring_submit(&ring_);
        if (r < 0) throw Error(std::string("io_uring_submit (uring_cmd) failed: ") + std::strerror(-r));
    }

    size_t reap(size_t min, std::vector<IoCompletion>& out) override {
        return reap_cqes(ring_, min, out, [this](const io_uring_cqe& cqe) {
            IoCompletion c{io_uring_cqe_get_data64(&cqe), 0, 0};
            // res: 0 success, > 0 NVMe status (SCT/SC), < 0 -errno. big_cqe[0] holds result DW0.
            if (cqe.res > 0) {
                c.res = -EIO;
                c.nvme_status = uint32_t(cqe.res);
            } else if (cqe.res == 0) {
                c.res = int64_t(lens_[c.user_data]);  // success moves the whole transfer
            } else {
                c.res = cqe.res;
            }
            lens_.erase(c.user_data);
            return c;
        });
    }

private:
    io_uring ring_{};
    uint32_t nsid_ = 0;
    std::unordered_map<uint64_t, uint32_t> lens_;  ///< user_data -> bytes of in-flight commands
};

}  // namespace

std::unique_ptr<Engine> make_uring_cmd_engine(const EngineConfig& c) { return std::make_unique<UringCmdEngine>(c); }

}  // namespace kvio::workload
