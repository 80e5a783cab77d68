#include "common/input_file.h"

#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "common/warn.h"

namespace kvio {

namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};  // ZSTD_MAGICNUMBER, little-endian

// The bytes of a stream: first `prefix` (already read from `raw` by detection), then the rest of `raw`,
// decompressed when `ds` is set. Behind a FILE* from fopencookie, so readers see an ordinary stream.
struct Source {
    std::string path;
    std::FILE* raw = nullptr;
    std::string prefix;
    size_t ppos = 0;
    ZSTD_DStream* ds = nullptr;
    std::vector<char> in;
    ZSTD_inBuffer ib{nullptr, 0, 0};
    size_t last = 0;        // ZSTD_decompressStream's last answer: 0 at a frame end
    bool out_full = false;  // the last call filled the output: libzstd may hold more
    bool raw_eof = false, failed = false;

    ~Source() {
        if (raw) std::fclose(raw);
        ZSTD_freeDStream(ds);
    }

    // Raw bytes: the prefix first. -1 with errno on a read error.
    ssize_t read_raw(char* buf, size_t size) {
        if (ppos < prefix.size()) {
            size_t k = std::min(size, prefix.size() - ppos);
            std::memcpy(buf, prefix.data() + ppos, k);
            ppos += k;
            return ssize_t(k);
        }
        size_t n = std::fread(buf, 1, size, raw);
        if (n == 0 && std::ferror(raw)) return -1;
        return ssize_t(n);
    }

    ssize_t read(char* buf, size_t size) {
        if (!ds) return read_raw(buf, size);
        if (failed) {
            errno = EBADMSG;
            return -1;
        }
        ZSTD_outBuffer ob{buf, size, 0};
        while (ob.pos == 0) {
            if (ib.pos == ib.size && !out_full) {
                if (raw_eof) break;
                ssize_t n = read_raw(in.data(), in.size());
                if (n < 0) return -1;
                if (n == 0) {
                    raw_eof = true;
                    break;
                }
                ib = {in.data(), size_t(n), 0};
            }
            const size_t r = ZSTD_decompressStream(ds, &ob, &ib);
            if (ZSTD_isError(r)) {
                warn(path + ": not valid zstd: " + ZSTD_getErrorName(r));
                failed = true;
                errno = EBADMSG;
                return -1;
            }
            last = r;
            out_full = ob.pos == ob.size;
        }
        if (ob.pos == 0 && raw_eof && last != 0) {
            warn(path + ": the zstd stream is cut off (the writer was killed?): read up to the cut");
            last = 0;
        }
        return ssize_t(ob.pos);
    }
};

ssize_t cookie_read(void* c, char* buf, size_t size) { return static_cast<Source*>(c)->read(buf, size); }
int cookie_close(void* c) {
    delete static_cast<Source*>(c);
    return 0;
}

std::FILE* wrap(Source* s) {
    cookie_io_functions_t io{cookie_read, nullptr, nullptr, cookie_close};
    std::FILE* f = ::fopencookie(s, "rb", io);
    if (!f) {
        const int e = errno;
        std::string path = s->path;
        delete s;
        throw Error(path + ": cannot open: " + std::strerror(e));
    }
    return f;
}

bool regular(std::FILE* f) {
    struct stat st {};
    return ::fileno(f) >= 0 && ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode);
}

std::FILE* open_raw(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(::fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fclose(f);
        throw Error(path + ": " + std::strerror(EISDIR));
    }
    return f;
}

// Streams peek_input() looked at, waiting for their open_input().
std::mutex peeked_mu;
std::map<std::string, std::FILE*> peeked;

}  // namespace

std::FILE* open_input(const std::string& path) {
    {
        std::lock_guard<std::mutex> g(peeked_mu);
        auto it = peeked.find(path);
        if (it != peeked.end()) {
            std::FILE* f = it->second;
            peeked.erase(it);
            return f;
        }
    }
    std::FILE* f = open_raw(path);
    unsigned char head[sizeof kZstdMagic];
    const size_t n = std::fread(head, 1, sizeof head, f);
    const bool zstd = n == sizeof head && std::memcmp(head, kZstdMagic, sizeof head) == 0;
    // A plain file that can seek back is returned as it is: no copy on the readers' hot path.
    // (A pipe is never asked to seek: a failed fseek may drop what stdio buffered.)
    if (!zstd && regular(f) && std::fseek(f, 0, SEEK_SET) == 0) return f;
    auto* s = new Source;
    s->path = path;
    s->raw = f;
    s->prefix.assign(reinterpret_cast<const char*>(head), n);
    if (zstd) {
        s->ds = ZSTD_createDStream();
        if (!s->ds) {
            delete s;
            throw std::bad_alloc();
        }
        ZSTD_initDStream(s->ds);
        s->in.resize(ZSTD_DStreamInSize());
    }
    return wrap(s);
}

std::string read_input(const std::string& path) {
    std::FILE* f = open_input(path);
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    const bool bad = std::ferror(f);
    const int err = errno;
    std::fclose(f);
    if (bad) throw Error(path + ": read error: " + std::strerror(err));
    return s;
}

std::string peek_input(const std::string& path, size_t n) {
    std::FILE* f = open_input(path);
    std::string head(n, '\0');
    size_t got = 0, k;
    while (got < n && (k = std::fread(head.data() + got, 1, n - got, f)) > 0) got += k;
    head.resize(got);
    if (regular(f) && std::fseek(f, 0, SEEK_SET) == 0) {  // a plain file: the reader opens it again
        std::fclose(f);
        return head;
    }
    std::clearerr(f);  // a read error shows again to the reader that opens it
    auto* s = new Source;
    s->path = path;
    s->raw = f;
    s->prefix = head;
    std::FILE* w = wrap(s);
    std::lock_guard<std::mutex> g(peeked_mu);
    auto [it, fresh] = peeked.emplace(path, w);
    if (!fresh) {  // peeked twice: the older stream was never opened
        std::fclose(it->second);
        it->second = w;
    }
    return head;
}

}  // namespace kvio
