#include "validate/files.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/events_reader.h"
#include "common/jsonl.h"
#include "common/trace_id.h"
#include "common/warn.h"

namespace kvio::validate {

double FileIo::page_cache_read_share() const {
    if (sys_read_bytes == 0) return -1;
    double s = 1.0 - double(read_bytes) / double(sys_read_bytes);
    return std::clamp(s, 0.0, 1.0);
}

namespace {

/// Adds one read/write command (`rd`: a read) that moved `bytes` of file `f` to it: the command's bytes, or its part
/// of them when the command holds several files (the record's `files`), as the files table counts it.
void add_cmd(FileIo& f, bool rd, uint64_t bytes) {
    (rd ? f.read_cmds : f.write_cmds)++;
    (rd ? f.read_bytes : f.write_bytes) += bytes;
    const bool first = f.read_cmds + f.write_cmds == 1;
    f.min_cmd_bytes = first ? bytes : std::min(f.min_cmd_bytes, bytes);
    f.max_cmd_bytes = std::max(f.max_cmd_bytes, bytes);
}

/// The FileIo of `id` in `by`, created with its id.
FileIo& file_of(std::map<FileId, FileIo>& by, FileId id) {
    FileIo& f = by[id];
    f.id = std::move(id);
    return f;
}

/// Adds one syscall record of `r` (read/write family, by name) to `f`.
void add_syscall(FileIo& f, const EventRecord& r) {
    f.has_syscalls = true;
    f.file_size = std::max(f.file_size, r.file_size);
    if (r.ret <= 0) return;
    const bool rd = r.name.find("read") != std::string_view::npos;
    const bool wr = r.name.find("write") != std::string_view::npos;
    if (rd) f.sys_read_bytes += uint64_t(r.ret);
    if (wr) f.sys_write_bytes += uint64_t(r.ret);
}

}  // namespace

FilesJoin join_files(const std::string& events_path, const std::set<FileId>* named, bool require_files) {
    kvio::EventsReader rd(events_path);
    EventRecord r;
    std::map<FileId, FileIo> by;
    FilesJoin out;
    while (rd.next_checked(r)) {
        const bool file = r.has_field(EventField::Ino) && r.has_field(EventField::FsDev);
        if (r.kind == EventType::Cmd) {
            if (r.io != IoOp::Read && r.io != IoOp::Write) continue;
            out.cmds++;
            if (!file) {
                out.unattributed_cmds++;
                continue;
            }
        } else if (r.kind != EventType::Syscall || !file) {
            continue;
        }
        if (r.kind == EventType::Syscall) {
            add_syscall(file_of(by, FileId{std::string(r.fs_dev), r.ino, r.gen}), r);
        } else if (!r.files.empty()) {  // a command of several files: each its own bytes
            bool unnamed = false;
            for (const EventFilePart& p : r.files) {
                FileId id{std::string(p.fs_dev), p.ino, p.gen};
                unnamed = unnamed || (named && !named->count(id));
                add_cmd(file_of(by, std::move(id)), r.io == IoOp::Read, p.bytes);
            }
            out.cmds_of_unnamed += unnamed;
        } else {
            FileId id{std::string(r.fs_dev), r.ino, r.gen};
            out.cmds_of_unnamed += named && !named->count(id);
            add_cmd(file_of(by, std::move(id)), r.io == IoOp::Read, r.bytes);
        }
    }
    out.tally = rd.tally();
    if (out.cmds > 0 && out.unattributed_cmds == out.cmds) {
        const std::string what = events_path + ": none of its " + std::to_string(out.cmds) +
                                 " read/write device commands carries a file (ino)";
        if (require_files) throw Error(what + ": trace with --files");
        warn(what + ": only metadata or journal I/O reached the device" +
             (out.tally.lost_completions
                  ? ", or the commands' completions were lost (" + std::to_string(out.tally.lost_completions) + ")"
                  : std::string()) +
             ", or the trace ran without --files");
    }
    for (auto& [id, f] : by)
        if (f.read_cmds + f.write_cmds > 0) out.files.push_back(std::move(f));
    return out;
}

size_t name_files_from_trace_json(FilesJoin& j, const std::string& trace_json_path, const std::string& events_path) {
    const nlohmann::json t = read_json_file(trace_json_path);
    const JsonSource src{trace_json_path, 0};
    if (!t.is_object()) throw Error(trace_json_path + ": expected a JSON object");
    const std::string schema = get_string(t, "schema", src);
    if (schema != "kvio.trace/1") src.fail("schema", "expected \"kvio.trace/1\", got \"" + schema + "\"");
    check_same_trace(events_path, j.tally.trace_id, trace_json_path, t);
    auto rows = t.find("files");
    if (rows == t.end() || !rows->is_array())
        src.fail("files", "missing or not an array (trace with --files and --json)");
    std::map<FileId, std::string> paths;
    for (const auto& r : *rows) {
        if (!r.is_object()) src.fail("files", "expected objects");
        if (!r.contains("ino")) continue;  // a --group-by row of several files
        paths[FileId{get_string(r, "fs_dev", src), get_u64(r, "ino", src), get_u64(r, "gen", src)}] =
            get_string(r, "path", src);
    }
    size_t named = 0;
    for (FileIo& f : j.files) {
        auto it = paths.find(f.id);
        if (it == paths.end()) continue;
        f.path = it->second;
        named++;
    }
    return named;
}

void print_files_report(std::ostream& os, const FilesJoin& j) {
    char line[320];
    os << "file (fs_dev:ino:gen)      rd_cmds   rd_bytes  wr_cmds   wr_bytes  cmd_min  cmd_max  sys_rd_bytes"
          "  file_size  cache_rd  path\n";
    for (const FileIo& f : j.files) {
        std::string id = f.id.fs_dev + ":" + std::to_string(f.id.ino) + ":" + std::to_string(f.id.gen);
        double s = f.page_cache_read_share();
        std::string share = s < 0 ? "-" : std::to_string(s).substr(0, 5);
        std::snprintf(line, sizeof line, "%-26s %7llu %10llu %8llu %10llu %8llu %8llu %13llu %10llu  %-8s", id.c_str(),
                      (unsigned long long)f.read_cmds, (unsigned long long)f.read_bytes,
                      (unsigned long long)f.write_cmds, (unsigned long long)f.write_bytes,
                      (unsigned long long)f.min_cmd_bytes, (unsigned long long)f.max_cmd_bytes,
                      (unsigned long long)f.sys_read_bytes, (unsigned long long)f.file_size, share.c_str());
        os << line << "  " << (f.path.empty() ? "-" : f.path) << "\n";  // a path may be longer than `line`
    }
    os << j.files.size() << " files; " << j.unattributed_cmds << " of " << j.cmds
       << " read/write commands carry no file (metadata, journal)\n";
}

nlohmann::json files_report_json(const FilesJoin& j) {
    nlohmann::json files = nlohmann::json::array();
    for (const FileIo& f : j.files) {
        double s = f.page_cache_read_share();
        files.push_back({{"fs_dev", f.id.fs_dev},
                         {"ino", f.id.ino},
                         {"gen", f.id.gen},
                         {"read_cmds", f.read_cmds},
                         {"write_cmds", f.write_cmds},
                         {"read_bytes", f.read_bytes},
                         {"write_bytes", f.write_bytes},
                         {"min_cmd_bytes", f.min_cmd_bytes},
                         {"max_cmd_bytes", f.max_cmd_bytes},
                         {"file_size", f.file_size},
                         {"sys_read_bytes", f.sys_read_bytes},
                         {"sys_write_bytes", f.sys_write_bytes},
                         {"page_cache_read_share", s < 0 ? nlohmann::json(nullptr) : nlohmann::json(s)},
                         {"path", f.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.path)}});
    }
    return {{"schema", "kvio.validate.files/1"},
            {"cmds", j.cmds},
            {"unattributed_cmds", j.unattributed_cmds},
            {"files", files}};
}

}  // namespace kvio::validate
