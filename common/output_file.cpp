#include "common/output_file.h"

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <streambuf>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/temp_name.h"
#include "common/warn.h"
#include "common/zstd_stream.h"

namespace kvio {

/// The buffer behind the stream: full, it goes to the file as it is or through the compressor.
class OutputFile::Buf : public std::streambuf {
public:
    Buf(std::FILE* f, bool zstd) : f_(f), buf_(256 << 10) {
        if (zstd) z_ = std::make_unique<ZstdCompressor>();
        setp(buf_.data(), buf_.data() + buf_.size());
    }
    ~Buf() override {
        if (f_) std::fclose(f_);
    }
    /// Writes the buffer; `end`: also the frame end, then closes. Returns errno of the first failure, 0 when none.
    int drain(bool end) {
        write({pbase(), size_t(pptr() - pbase())}, end);
        setp(buf_.data(), buf_.data() + buf_.size());
        if (end && f_) {
            if (std::fclose(f_) != 0 && !err_) err_ = errno ? errno : EIO;
            f_ = nullptr;
        }
        return err_;
    }

protected:
    int_type overflow(int_type c) override {
        drain(false);
        if (err_) return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
        return traits_type::not_eof(c);
    }
    int sync() override { return drain(false) ? -1 : 0; }

private:
    void write(std::string_view text, bool end) {
        if (err_ || !f_) return;
        if (z_) {
            zbuf_.clear();
            z_->compress(text, zbuf_, end ? ZstdCompressor::Mode::End : ZstdCompressor::Mode::Continue);
            text = zbuf_;
        }
        if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f_) != text.size()) err_ = errno ? errno : EIO;
    }
    std::FILE* f_;
    std::vector<char> buf_;
    std::unique_ptr<ZstdCompressor> z_;
    std::string zbuf_;
    int err_ = 0;
};

size_t remove_stale_temporaries(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path p(path);
    const std::string base = p.filename().string();
    std::error_code ec;
    fs::directory_iterator it(p.parent_path().empty() ? fs::path(".") : p.parent_path(), ec);
    size_t removed = 0;
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const pid_t pid = temporary_writer(it->path().filename().string(), base);
        if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours
        const std::string digits = std::to_string(pid);
        std::error_code rm;
        if (!it->is_regular_file(rm) || !fs::remove(it->path(), rm)) continue;
        warn("removed " + it->path().string() + ", the partial output of a kvio that was killed (process " + digits +
             " is gone)");
        ++removed;
    }
    return removed;
}

PendingRename::PendingRename(std::string path) : path_(std::move(path)) {
    struct stat st {};
    const bool in_place = ::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);  // a device, a pipe, a link
    tmp_ = in_place ? path_ : temporary_name(path_, ::getpid());
    done_ = in_place;
    if (!in_place) remove_stale_temporaries(path_);
}

PendingRename::~PendingRename() { discard(); }

void PendingRename::discard() {
    if (!done_) ::unlink(tmp_.c_str());
    done_ = true;
}

void PendingRename::commit() {
    if (done_) return;
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const int e = errno;
        discard();
        throw Error(path_ + ": cannot write: " + std::strerror(e));
    }
    done_ = true;
}

void check_writable(const std::string& path) {
    struct stat st {};
    const bool existed = ::lstat(path.c_str(), &st) == 0;
    std::FILE* f = std::fopen(path.c_str(), "ab");
    if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
    std::fclose(f);
    if (!existed) ::unlink(path.c_str());
}

OutputFile::OutputFile(const std::string& path) : path_(path), pending_(path) {
    std::FILE* f = std::fopen(pending_.write_path().c_str(), "wb");
    if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
    buf_ = std::make_unique<Buf>(f, has_zst_suffix(path));
    os_ = std::make_unique<std::ostream>(buf_.get());
}

OutputFile::~OutputFile() = default;

std::ostream& OutputFile::stream() { return *os_; }

void OutputFile::close() {
    if (int e = buf_->drain(true)) {
        pending_.discard();
        throw Error(path_ + ": write failed: " + std::strerror(e));
    }
    pending_.commit();
}

}  // namespace kvio
