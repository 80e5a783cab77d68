#include "distiller/file_level.h"

#include <algorithm>
#include <cstdio>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/syscall_trace.h"

namespace kvio::distiller {

namespace {

std::string pct(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f %%", 100.0 * x);
    return b;
}

std::string mib(uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f MiB", double(b) / 1048576.0);
    return s;
}

// The device of `devs` whose kernel dev_t is `fs_dev`; devs.size() when none.
size_t device_of(const std::vector<Profile>& devs, uint32_t fs_dev) {
    for (size_t i = 0; i < devs.size(); ++i)
        if (auto d = parse_dev_string(devs[i].dev); d && kernel_dev(*d) == fs_dev) return i;
    return devs.size();
}

// The busiest filesystem among the traced devices' (a trace also holds calls on other filesystems: the root disk's).
uint32_t busiest_traced_fs(const std::vector<SyscallRec>& recs, const std::vector<Profile>& devs) {
    std::vector<SyscallRec> on;
    for (const auto& r : recs)
        if (r.has_file && device_of(devs, r.fs_dev) < devs.size()) on.push_back(r);
    return busiest_fs_dev(on);
}

}  // namespace

nlohmann::json LevelChoice::to_json() const {
    nlohmann::json j = {{"level", level_name()},
                        {"reason", reason},
                        {"syscalls", syscalls},
                        {"device_bytes", device_bytes},
                        {"page_cache_share", page_cache_share}};
    if (!pattern.streams.empty())
        j["file"] = {{"fs_dev", dev_string(decode_kernel_dev(pattern.fs_dev))},
                     {"files", pattern.files.size()},
                     {"threads", pattern.streams.size()},
                     {"buffered_read_bytes", pattern.buffered_read_bytes},
                     {"buffered_write_bytes", pattern.buffered_write_bytes},
                     {"direct_read_bytes", pattern.direct_read_bytes},
                     {"direct_write_bytes", pattern.direct_write_bytes},
                     {"fsync", pattern.fsyncs},
                     {"fdatasync", pattern.fdatasyncs},
                     {"fadvise", pattern.dontneeds},
                     {"max_threads_in_calls", pattern.max_threads_in_calls},
                     {"calls_without_identity", pattern.no_identity_calls},
                     {"calls_on_other_filesystems", pattern.other_fs_calls}};
    return j;
}

std::vector<std::string> LevelChoice::header_lines(const Profile& dev) const {
    const FilePattern& p = pattern;
    std::vector<std::string> h;
    h.push_back("level: " + level_name() + ": " + reason);
    h.push_back("device " + dev.dev + " (" + dev.disk + ") saw read " + mib(dev.read.bytes) + " in " +
                std::to_string(dev.read.cmds) + " commands, write " + mib(dev.write.bytes) + " in " +
                std::to_string(dev.write.cmds) + "; the calls moved read " +
                mib(p.buffered_read_bytes + p.direct_read_bytes) + ", write " +
                mib(p.buffered_write_bytes + p.direct_write_bytes) + " (" + pct(page_cache_share) +
                " of the device's bytes not from direct calls: page cache and metadata)");
    return h;
}

LevelChoice choose_level(const DistillOptions& o, const std::vector<Profile>& devs) {
    LevelChoice c;
    if (o.level == DistillLevel::Device || o.events.empty()) {
        c.reason = o.level == DistillLevel::Device ? "--level device" : "histogram input: no syscall records";
        return c;
    }
    const std::vector<SyscallRec> recs = load_syscalls(o.events, SyscallFilter{o.pid, o.comm, 0}, o.stop);
    c.syscalls = recs.size();
    const bool any_identity = std::any_of(recs.begin(), recs.end(), [](const SyscallRec& r) { return r.has_file; });
    const uint32_t fs = busiest_traced_fs(recs, devs);
    if (fs) {
        c.dev_index = device_of(devs, fs);
        c.pattern = derive_file_pattern(recs, fs);
        const Profile& d = devs[c.dev_index];
        c.device_bytes = d.read.bytes + d.write.bytes;
        const uint64_t direct = c.pattern.direct_read_bytes + c.pattern.direct_write_bytes;
        c.page_cache_share =
            c.device_bytes ? double(c.device_bytes - std::min(direct, c.device_bytes)) / double(c.device_bytes) : 0;
    }
    std::string why_not;
    if (recs.empty())
        why_not = "the trace has no syscall records (trace with --syscalls)";
    else if (!any_identity)
        why_not = "its syscall records carry no file identity (ino, fs_dev): a kvio that did not record them";
    else if (!fs)
        why_not = "no read or write call with file identity on a traced device's filesystem";
    else if (!c.pattern.buffered_bytes() || c.page_cache_share <= 0.5)
        why_not = "the device's bytes are mostly from direct calls (" + pct(1 - c.page_cache_share) +
                  "): its commands are the application's own";
    if (o.level == DistillLevel::Auto) {
        c.file = why_not.empty();
        c.device = !c.file;
        c.reason = c.file ? "auto: " + pct(c.page_cache_share) +
                                " of the device's bytes came through the page cache (buffered calls: writeback, "
                                "readahead), which a direct-I/O job cannot make on another drive"
                          : "auto: " + why_not;
        return c;
    }
    if (c.pattern.streams.empty())
        throw Error("distill --level " + std::string(o.level == DistillLevel::File ? "file" : "both") + ": " +
                    (why_not.empty() ? "no file calls to replay" : why_not));
    c.file = true;
    c.device = o.level == DistillLevel::Both;
    c.reason = std::string("--level ") + (c.device ? "both" : "file");
    return c;
}

}  // namespace kvio::distiller
