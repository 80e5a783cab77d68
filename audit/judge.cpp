// The audit's checks from counted figures (no I/O here): docs/audit.md, "Checks".
#include <algorithm>
#include <cstdio>
#include <string>

#include "audit/audit.h"
#include "common/histogram.h"

namespace kvio::audit {

namespace {

std::string pct(double share) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f %%", share * 100);
    return b;
}

std::string gib(uint64_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f GiB", double(bytes) / double(1ull << 30));
    return b;
}

Check reads_check(const FsFigures& f, const AuditOptions& o) {
    Check c{"reads"};
    c.figures = {{"app_read_bytes", f.app_read_bytes},
                 {"app_read_calls", f.app_read_calls},
                 {"app_read_direct_bytes", f.app_read_direct_bytes},
                 {"device_read_bytes", f.dev_read_bytes},
                 {"device_read_cmds", f.dev_read_cmds},
                 {"min_share", o.min_read_share}};
    if (f.app_read_bytes == 0) {
        c.line = f.tree_complete ? "reads: the application read nothing there"
                                 : "reads: no read by the command's processes was seen there (some of its processes "
                                   "may have gone unseen)";
        return c;
    }
    const double share = double(f.dev_read_bytes) / double(f.app_read_bytes);
    c.figures["device_share"] = share;
    c.verdict = share >= o.min_read_share ? Verdict::Pass : Verdict::Fail;
    c.line = "reads: " + pct(std::min(share, 1.0)) + " of the " + gib(f.app_read_bytes) +
             " the application read came from the device (" + gib(f.dev_read_bytes) + " in " +
             std::to_string(f.dev_read_cmds) + " commands; " + pct(o.min_read_share) + " of the bytes read needed)";
    if (c.verdict == Verdict::Fail) c.line += ": the rest was served from the page cache";
    return c;
}

Check writes_check(const FsFigures& f, const AuditOptions& o) {
    Check c{"writes"};
    c.figures = {{"app_write_bytes", f.app_write_bytes},
                 {"app_write_calls", f.app_write_calls},
                 {"app_write_direct_bytes", f.app_write_direct_bytes},
                 {"device_write_bytes", f.dev_write_bytes},
                 {"device_write_cmds", f.dev_write_cmds},
                 {"min_share", o.min_write_share}};
    if (f.app_write_bytes == 0) {
        c.line = f.tree_complete ? "writes: the application wrote nothing there"
                                 : "writes: no write by the command's processes was seen there (some of its "
                                   "processes may have gone unseen)";
        return c;
    }
    // Bytes no fsync covered need not be on the device (a write cut by the stop, a file deleted unsynced), unless
    // nothing was synced at all: then the fsync check fails, and every byte is required here too.
    const uint64_t unsynced = std::min(f.app_write_unsynced_bytes, f.app_write_bytes);
    const uint64_t required = unsynced < f.app_write_bytes ? f.app_write_bytes - unsynced : f.app_write_bytes;
    c.figures["app_write_unsynced_bytes"] = f.app_write_unsynced_bytes;
    c.figures["required_bytes"] = required;
    const double share = double(f.dev_write_bytes) / double(required);
    c.figures["device_share"] = share;
    c.verdict = share >= o.min_write_share ? Verdict::Pass : Verdict::Fail;
    // Every percentage names its base: of the bytes written, and (when some were not required) of the required.
    c.line = "writes: " + gib(f.app_write_bytes) + " written, " + gib(f.dev_write_bytes) + " reached the device in " +
             std::to_string(f.dev_write_cmds) + " commands (" +
             pct(double(f.dev_write_bytes) / double(f.app_write_bytes)) + " of the bytes written";
    if (required != f.app_write_bytes)
        c.line += "; " + pct(share) + " of the " + gib(required) + " required: " + gib(unsynced) +
                  " no fsync covered, cut at the stop or deleted unsynced, are not required";
    c.line += "; " + pct(o.min_write_share) + " of the required bytes needed)";
    if (c.verdict == Verdict::Fail) c.line += ": the rest stayed in the page cache";
    return c;
}

Check fsync_check(const FsFigures& f) {
    Check c{"fsync"};
    const uint64_t buffered = f.app_write_bytes - std::min(f.app_write_bytes, f.app_write_direct_bytes);
    c.figures = {{"calls", f.fsync_calls},
                 {"files_written", f.app_files_written},
                 {"files_unsynced", f.app_files_unsynced},
                 {"device_flushes", f.dev_flushes},
                 {"buffered_write_bytes", buffered},
                 {"volatile_write_cache", f.volatile_cache}};
    if (buffered == 0) {
        c.line = "fsync: no buffered writes to make durable";
        return c;
    }
    if (f.fsync_calls == 0) {
        c.verdict = Verdict::Fail;
        c.line = "fsync: 0 calls after " + gib(buffered) +
                 " of buffered writes: nothing was made durable (an interposed fsync, e.g. libeatmydata, calls "
                 "nothing)";
    } else if (2 * f.app_files_unsynced > f.app_files_written) {
        // kvio simulate and the Python benchmark fsync every entry they write (docs/audit.md): only the entries in
        // flight at the stop may end unsynced, never most of them. A shim that passes 1 call in 10 leaves 9 in 10.
        c.verdict = Verdict::Fail;
        c.line = "fsync: " + std::to_string(f.fsync_calls) + " calls, but " + std::to_string(f.app_files_unsynced) +
                 " of the " + std::to_string(f.app_files_written) +
                 " files written were not synced after their last write (an interposed fsync that skips calls "
                 "never reaches the kernel)";
    } else if (f.volatile_cache && f.dev_flushes == 0) {
        c.verdict = Verdict::Fail;
        c.line = "fsync: " + std::to_string(f.fsync_calls) + " calls, 0 device flushes";
    } else {
        c.verdict = Verdict::Pass;
        c.line = "fsync: " + std::to_string(f.fsync_calls) + " calls, " + std::to_string(f.dev_flushes) +
                 " device flushes" + (f.volatile_cache ? "" : " (the device has no volatile write cache)");
    }
    return c;
}

Check fadvise_check(const FsFigures& f, const AuditOptions& o) {
    Check c{"fadvise"};
    const uint64_t buffered = f.app_read_bytes - std::min(f.app_read_bytes, f.app_read_direct_bytes);
    const bool from_device =
        f.app_read_bytes && double(f.dev_read_bytes) >= o.min_read_share * double(f.app_read_bytes);
    c.figures = {{"calls", f.fadvise_calls}, {"buffered_read_bytes", buffered}};
    if (buffered == 0) {
        c.line = "fadvise: no buffered reads";
        return c;
    }
    if (f.fadvise_calls > 0) {
        c.verdict = from_device ? Verdict::Pass : Verdict::Fail;
        c.line = "fadvise: " + std::to_string(f.fadvise_calls) + " calls; " +
                 (from_device ? std::string("the reads after them reached the device")
                              : std::string("the pages did not leave the page cache: reads were served from memory"));
    } else {
        c.verdict = from_device ? Verdict::Note : Verdict::Fail;
        c.line = "fadvise: 0 calls before " + gib(buffered) + " of buffered reads" +
                 (from_device ? std::string(" (they reached the device anyway: a cold cache)")
                              : std::string(": nothing dropped the page cache (an interposed posix_fadvise calls "
                                            "nothing)"));
    }
    return c;
}

}  // namespace

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::Pass:
            return "PASS";
        case Verdict::Fail:
            return "FAIL";
        case Verdict::Na:
            return "n/a";
        case Verdict::Note:
            return "note";
    }
    return "?";
}

std::vector<Check> judge_fs(const FsFigures& f, const AuditOptions& o) {
    return {reads_check(f, o), writes_check(f, o), fsync_check(f), fadvise_check(f, o)};
}

Check judge_preloads(const std::vector<Preload>& preloads, const std::vector<std::string>& not_inspected,
                     bool every_exec_seen) {
    Check c{"preload"};
    c.figures = nlohmann::json::array();
    std::string failing, named;
    for (const auto& p : preloads) {
        c.figures.push_back(
            {{"path", p.path}, {"source", p.source}, {"interposes", p.interposes}, {"readable", p.readable}});
        std::string fns;
        for (const auto& s : p.interposes) fns += (fns.empty() ? "" : ", ") + s;
        if (!p.interposes.empty())
            failing += (failing.empty() ? "" : "; ") + p.path + " (" + p.source + ") interposes " + fns;
        else
            named += (named.empty() ? "" : "; ") + p.path + " (" + p.source + ")" + (p.readable ? "" : ", unreadable");
    }
    // The programs no sample inspected: named (the first 8), so "none seen" is never read as "none there".
    std::string unseen;
    for (size_t i = 0; i < not_inspected.size() && i < 8; ++i) unseen += (i ? ", " : "") + not_inspected[i];
    if (not_inspected.size() > 8) unseen += " and " + std::to_string(not_inspected.size() - 8) + " more";
    const std::string unseen_line =
        unseen.empty() ? ""
                       : std::to_string(not_inspected.size()) +
                             " program(s) the command ran ended before a sample could read their environment and "
                             "maps, what they preloaded is not known: " +
                             unseen;
    if (preloads.empty() && !unseen.empty()) {
        c.verdict = Verdict::Note;
        c.line = "preload: none seen in the programs inspected, but " + unseen_line;
    } else if (preloads.empty()) {
        c.line = every_exec_seen
                     ? "preload: no preloaded library in any program the command ran (each inspected after its "
                       "loader had mapped its libraries: its LD_PRELOAD and mapped objects)"
                     : "preload: no preloaded library seen in the traced processes (their LD_PRELOAD and mapped "
                       "objects, sampled every 100 ms: one that lived shorter is not seen)";
    } else if (!failing.empty()) {
        c.verdict = Verdict::Fail;
        c.line = "preload: " + failing;
    } else {
        c.verdict = Verdict::Note;
        c.line = "preload: " + named + ": defines no I/O function";
    }
    if (!preloads.empty() && !unseen.empty()) c.line += "; " + unseen_line;
    return c;
}

std::string format_result(const AuditResult& r) {
    std::string out;
    for (const auto& f : r.filesystems) {
        std::string dirs;
        for (const auto& d : f.dirs) dirs += (dirs.empty() ? "" : ", ") + d;
        out += "audit: " + dirs + " (filesystem " + f.fs_dev + " on " + f.disk + ")\n";
    }
    for (const auto& c : r.checks) {
        char v[8];
        std::snprintf(v, sizeof v, "%-4s", verdict_name(c.verdict));
        out += std::string("  ") + v + "  " + c.line + "\n";
    }
    if (r.command_status != 0)
        out += "audit: the command exited with status " + std::to_string(r.command_status) + "\n";
    if (!r.measured)
        out +=
            "audit: no I/O of the command's processes was seen in the audited directories (its process tree is "
            "sampled every 100 ms: a process that lived shorter is not seen): nothing was measured, nothing passes\n";
    out += std::string("audit: ") + (r.passed ? "PASS" : "FAIL") + "\n";
    return out;
}

}  // namespace kvio::audit
