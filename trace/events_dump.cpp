#include "trace/events_dump.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/events_bin.h"
#include "common/events_reader.h"
#include "common/output_file.h"
#include "trace/capture_records.h"
#include "trace/event_format.h"

namespace kvio::trace {

namespace {

/// Writes `n` bytes to `f`; throws naming `what` on failure.
void put(std::FILE* f, const char* p, size_t n, const std::string& what) {
    if (n && std::fwrite(p, 1, n, f) != n) throw Error(what + ": write failed: " + std::strerror(errno));
}

/// Throws when regular file `in` starts like JSON: it is kvio.events/1 already, which every command reads as it is.
/// Pipes and devices are not peeked at (the byte would be lost to the reader).
void refuse_jsonl(const std::string& in) {
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    std::FILE* f = std::fopen(in.c_str(), "rb");
    if (!f) return;  // the reader says why
    int c;
    while ((c = std::fgetc(f)) == ' ' || c == '\n' || c == '\r' || c == '\t') {}
    std::fclose(f);
    if (c != '{') return;
    // One whole document (a trace.json, a record manifest): named as what it is, not as a stream it is not.
    const std::string kind = whole_document_kind(in);
    if (kind.rfind("a kvio", 0) == 0)
        throw Error(in + " is " + kind + ", not a kvio.events.bin capture (what `kvio trace --events FILE " +
                    "--events-format bin` writes): there is nothing to dump");
    throw Error(in +
                " is a JSONL file (kvio.events/1, what `kvio dump` writes), not a kvio.events.bin capture: it needs "
                "no dump; validate, distill, replay and compare read it as it is");
}

}  // namespace

void dump_capture(const std::string& in, const std::string& out_arg) {
    const std::string out = out_arg == "-" ? "" : out_arg;
    refuse_jsonl(in);
    evbin::Reader r(in);  // opened before the output: a bad capture leaves no output file behind
    if (!out.empty()) {
        struct stat a {
        }, b{};
        if (::stat(in.c_str(), &a) == 0 && ::stat(out.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            throw Error(out + " is the capture itself: writing it would destroy what is being read");
    }
    // Written as OUT.tmp-PID and renamed when whole: a full disk leaves nothing under OUT (common/output_file.h).
    std::optional<PendingRename> pending;
    if (!out.empty()) pending.emplace(out);
    std::FILE* f = out.empty() ? stdout : std::fopen(pending->write_path().c_str(), "w");
    if (!f) throw Error(out + ": cannot write: " + std::strerror(errno));
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(out.empty() ? nullptr : f, std::fclose);
    const std::string what = out.empty() ? "stdout" : out;
    auto finish = [&] {  // flushes, closes and renames; throws naming the file and the errno
        if (std::fflush(f) != 0) throw Error(what + ": write failed: " + std::strerror(errno));
        if (closer && std::fclose(closer.release()) != 0) throw Error(what + ": write failed: " + std::strerror(errno));
        if (pending) pending->commit();
    };
    ::signal(SIGPIPE, SIG_IGN);  // a reader that went away: "write failed: Broken pipe", not a silent exit
    bool summary = false;
    uint64_t written = 0;  // records written (commands, syscalls, json)
    EventEncoder enc;
    auto spill = [&] {  // the encoded text out in pieces of about 1 MiB
        if (enc.size() >= (1u << 20)) {
            put(f, enc.data(), enc.size(), what);
            enc.clear();
        }
    };
    CaptureVisitor v;
    v.cmd = [&](const kvio_cmd_event& e, DevCache& devs, std::span<const kvio_file_part> files) {
        enc.cmd(e, devs, files);
        ++written;
        spill();
    };
    v.syscall = [&](const kvio_syscall_event& e) {
        enc.syscall(e);
        ++written;
        spill();
    };
    v.stages = [&](const kvio_stages_event& e, DevCache& devs) {
        enc.stages(e, devs);
        ++written;
        spill();
    };
    v.json = [&](std::string_view text, const nlohmann::json& j) {
        put(f, enc.data(), enc.size(), what);
        enc.clear();
        put(f, text.data(), text.size(), what);
        put(f, "\n", 1, what);
        summary = summary || j.value("type", "") == "summary";
        ++written;
    };
    try {
        visit_capture(r, in, v);
    } catch (const Error&) {
        // What was decoded before the damage is written out: dump is how a cut-off capture is salvaged.
        put(f, enc.data(), enc.size(), what);
        finish();
        throw;
    }
    put(f, enc.data(), enc.size(), what);
    finish();
    if (!summary)
        std::fprintf(stderr,
                     "kvio dump: warning: %s has no summary record: the capture was cut off (killed, crashed or "
                     "out of space); its %llu records are written, the commands after them are missing\n",
                     in.c_str(), (unsigned long long)written);
}

}  // namespace kvio::trace
