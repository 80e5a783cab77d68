#include "userspace/events_dump.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/events_bin.h"
#include "userspace/event_format.h"

namespace kvio::trace {

namespace {

/// Writes `n` bytes to `f`; throws naming `what` on failure.
void put(std::FILE* f, const char* p, size_t n, const std::string& what) {
    if (n && std::fwrite(p, 1, n, f) != n) throw Error(what + ": write failed: " + std::strerror(errno));
}

}  // namespace

void dump_capture(const std::string& in, const std::string& out) {
    evbin::Reader r(in);
    std::FILE* f = out.empty() ? stdout : std::fopen(out.c_str(), "w");
    if (!f) throw Error(out + ": cannot write: " + std::strerror(errno));
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(out.empty() ? nullptr : f, std::fclose);
    const std::string what = out.empty() ? "stdout" : out;
    DevCache devs;  // filled from the capture's device records only: never this machine's sysfs
    EventEncoder enc;
    evbin::Kind kind;
    std::string_view p;
    while (r.next(kind, p)) {
        switch (kind) {
        case evbin::Kind::Device: {
            evbin::DeviceRecord d;
            std::memcpy(&d, p.data(), sizeof d);
            devs.put(d.dev, {std::string(d.majmin, strnlen(d.majmin, sizeof d.majmin)),
                             std::string(d.disk, strnlen(d.disk, sizeof d.disk)), d.lba_bytes ? d.lba_bytes : 512});
            break;
        }
        case evbin::Kind::Cmd: {
            kvio_cmd_event e;
            std::memcpy(&e, p.data(), sizeof e);
            enc.cmd(e, devs);
            break;
        }
        case evbin::Kind::Syscall: {
            kvio_syscall_event e;
            std::memcpy(&e, p.data(), sizeof e);
            enc.syscall(e);
            break;
        }
        case evbin::Kind::Json:
            put(f, enc.data(), enc.size(), what);
            enc.clear();
            put(f, p.data(), p.size(), what);
            put(f, "\n", 1, what);
            break;
        }
        if (enc.size() >= (1u << 20)) {
            put(f, enc.data(), enc.size(), what);
            enc.clear();
        }
    }
    put(f, enc.data(), enc.size(), what);
    if (std::fflush(f) != 0) throw Error(what + ": write failed: " + std::strerror(errno));
    if (closer && std::fclose(closer.release()) != 0) throw Error(what + ": write failed: " + std::strerror(errno));
}


}  // namespace kvio::trace
