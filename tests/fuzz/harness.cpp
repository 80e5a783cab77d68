#include "tests/fuzz/harness.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <streambuf>

#include "common/error.h"
#include "common/events_reader.h"

namespace kvio::fuzz {

const std::string& input_file(const uint8_t* data, size_t size) {
    static const int fd = ::memfd_create("kvio-fuzz-input", 0);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = ::pwrite(fd, data + off, size - off, off_t(off));
        if (n <= 0) std::abort();
        off += size_t(n);
    }
    return path;
}

namespace {
// Sums the bytes of a view so that every byte it points to is read.
uint64_t touch(std::string_view s) {
    uint64_t h = s.size();
    for (char c : s) h = h * 31 + uint8_t(c);
    return h;
}
}  // namespace

void drain_events(const std::string& path) {
    try {
        EventsReader rd(path);
        EventRecord r;
        volatile uint64_t sink = 0;
        while (rd.next(r)) {
            for (auto s : {r.type, r.src, r.dev, r.disk, r.op, r.rwbs, r.comm, r.key}) sink = sink + touch(s);
            sink = sink + r.sector + r.bytes + r.ts_issue + r.ts_complete + r.qd + r.user_data + r.slba + r.nlb;
            if (r.has_field(EventField::Type)) (void)rd.source().where();
        }
    } catch (const Error&) {}
}

std::ostream& null_stream() {
    struct NullBuf : std::streambuf {
        int overflow(int c) override { return c; }
        std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
    };
    static NullBuf buf;
    static std::ostream out(&buf);
    return out;
}

}  // namespace kvio::fuzz
