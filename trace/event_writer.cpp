#include "trace/event_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

namespace kvio::trace {

bool events_on_stdout(const std::string& path) {
    if (path == "-" || path == "/dev/stdout" || path == "/proc/self/fd/1") return true;
    struct stat a {
    }, b{};
    return ::stat(path.c_str(), &a) == 0 && ::fstat(1, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

EventWriter::EventWriter(const std::string& path, size_t chunk_bytes, EventsFormat format)
    : path_(path), chunk_(chunk_bytes), bin_(format == EventsFormat::Bin) {
    // Standard output is written where it points, as it was opened (no truncation of a `>>` file, no O_DIRECT
    // on a shared file description).
    const bool to_stdout = events_on_stdout(path);
    if (!to_stdout) pending_.emplace(path);
    fd_ = to_stdout ? ::fcntl(1, F_DUPFD_CLOEXEC, 3)
                    : ::open(pending_->write_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) throw Error(path + ": cannot write: " + std::strerror(errno));
    // O_DIRECT for regular files whose filesystem takes it (never pipes: O_DIRECT makes a pipe packet-mode).
    // Buffered writes of ~60 MB/s of JSONL cost the traced machine a page-cache page, a delalloc reservation
    // and a later writeback per 4 KiB (measured on ext4: 0.51 s of system time per 300 MB, 0.11 s direct).
    struct stat st {};
    int fl = ::fcntl(fd_, F_GETFL);
    void* p = nullptr;
    if (has_zst_suffix(path)) zstd_ = std::make_unique<ZstdCompressor>();  // compressed: ~10x fewer bytes, buffered
    if (!zstd_ && !to_stdout && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && fl >= 0 &&
        ::posix_memalign(&p, kDirectAlign, (chunk_ + kDirectAlign - 1) / kDirectAlign * kDirectAlign) == 0) {
        stage_.reset(static_cast<char*>(p));
        if (::fcntl(fd_, F_SETFL, fl | O_DIRECT) == 0)
            chunk_ = (chunk_ + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
        else
            stage_.reset();
    }
    enc_.reserve(chunk_ + 4096);  // one record past the threshold fits without growing
    if (bin_) benc_.reserve(chunk_ + 4096);
}

EventWriter::~EventWriter() {
    try {
        close();
    } catch (...) {}
}

void EventWriter::bin_device(uint32_t dev) {
    if (benc_.has_device(dev)) return;
    const auto& d = devs_.get(dev);
    benc_.device(evbin::make_device_record(dev, d.lba_bytes, d.majmin, d.disk));
}

void EventWriter::cmd(const kvio_cmd_event& e) {
    if (e.nparts) join_.take(e, files_);
    if (bin_) {
        bin_device(e.dev);
        if (e.nparts) benc_.files(files_);
        benc_.cmd(e);
    } else {
        enc_.cmd(e, devs_, e.nparts ? std::span<const kvio_file_part>(files_) : std::span<const kvio_file_part>());
    }
    ++written_;
    maybe_flush();
}

void EventWriter::stages(const kvio_stages_event& e) {
    if (bin_) {
        bin_device(e.dev);
        benc_.stages(e);
    } else {
        enc_.stages(e, devs_);
    }
    ++stages_written_;
    maybe_flush();
}

void EventWriter::syscall(const kvio_syscall_event& e) {
    if (bin_)
        benc_.syscall(e);
    else
        enc_.syscall(e);
    ++written_;
    maybe_flush();
}

void EventWriter::line(const nlohmann::json& j) {
    if (bin_)
        benc_.json(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    else
        enc_.line(j);
    maybe_flush();
}

void EventWriter::write_all(const char* p, size_t n) {
    while (n && !err_ && fd_ >= 0) {
        ssize_t r = ::write(fd_, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EINVAL && stage_ && buffered()) continue;  // O_DIRECT refused here: buffered from now on
            err_ = errno;
        } else if (r == 0) {
            err_ = EIO;  // no progress on a non-empty write: do not spin
        } else {
            p += r;
            n -= size_t(r);
        }
    }
}

bool EventWriter::buffered() {
    int fl = ::fcntl(fd_, F_GETFL);
    if (fl < 0 || !(fl & O_DIRECT)) return false;
    return ::fcntl(fd_, F_SETFL, fl & ~O_DIRECT) == 0;
}

void EventWriter::write_aligned_blocks() {
    size_t aligned = staged_ / kDirectAlign * kDirectAlign;
    if (!aligned) return;
    write_all(stage_.get(), aligned);
    std::memmove(stage_.get(), stage_.get() + aligned, staged_ - aligned);
    staged_ -= aligned;
}

void EventWriter::flush_compressed(ZstdCompressor::Mode mode) {
    zbuf_.clear();
    try {
        zstd_->compress(std::string_view(encoded_data(), encoded_size()), zbuf_, mode);
    } catch (const Error&) {
        if (!err_) err_ = ENOMEM;  // libzstd fails only without memory; close() reports it
    }
    clear_encoded();
    write_all(zbuf_.data(), zbuf_.size());
}

void EventWriter::flush(bool last) {
    if (zstd_) return flush_compressed(last ? ZstdCompressor::Mode::End : ZstdCompressor::Mode::Continue);
    const char* p = encoded_data();
    size_t n = encoded_size();
    if (!stage_) {
        write_all(p, n);
        clear_encoded();
        return;
    }
    // Direct I/O: whole aligned chunks from the staging buffer; the tail waits for more text, or, at close,
    // goes out as its aligned part and then (buffered) the rest.
    while (n) {
        size_t k = std::min(n, chunk_ - staged_);
        std::memcpy(stage_.get() + staged_, p, k);
        staged_ += k, p += k, n -= k;
        if (staged_ == chunk_) {
            write_all(stage_.get(), chunk_);
            staged_ = 0;
        }
    }
    clear_encoded();
    if (last && staged_) {
        write_aligned_blocks();
        if (staged_) {  // the partial last block
            buffered();
            write_all(stage_.get(), staged_);
            staged_ = 0;
        }
    }
}

void EventWriter::flush_idle(uint64_t now_ns) {
    if (now_ns - last_flush_ns_ < kIdleFlushNs) return;
    last_flush_ns_ = now_ns;
    if (zstd_) return flush_compressed(ZstdCompressor::Mode::Flush);
    if (encoded_size() == 0 && staged_ < kDirectAlign) return;
    flush(false);
    if (stage_) write_aligned_blocks();  // whole blocks now; the rest (< 4 KiB) waits
}

void EventWriter::close() {
    if (fd_ >= 0) {
        flush(true);
        if (::close(fd_) != 0 && !err_) err_ = errno;
        fd_ = -1;
        if (pending_ && err_) pending_->discard();
        if (pending_ && !err_) pending_->commit();  // throws "PATH: cannot write: REASON"
    }
    if (err_) throw Error(path_ + ": write failed: " + std::strerror(err_));
}

}  // namespace kvio::trace
