#include "validate/objects.h"

#include <cstdio>
#include <numeric>
#include <set>

#include "common/error.h"
#include "common/events_reader.h"
#include "common/jsonl.h"
#include "common/trace_id.h"
#include "validate/files.h"
#include "validate/semantic.h"

namespace kvio::validate {

ObjectsReport join_objects(const std::string& semantic_path, const std::string& events_path,
                           const GeometryOverrides& ov, bool accept_partial) {
    const SemanticTrace t = read_semantic(semantic_path);
    ObjectsReport r;
    r.rules = resolve_rules(t.meta, ov);
    std::set<FileId> named;
    for (const ObjectOp& op : t.ops)
        if (op.has_file) named.insert(FileId{op.fs_dev, op.ino, op.gen});
    const FilesJoin fj = join_files(events_path, &named, false);
    r.events = fj.tally;
    if (!ov.trace_json.empty())  // the summary given for the device's limits: it must be this trace's
        check_same_trace(events_path, fj.tally.trace_id, ov.trace_json, read_json_file(ov.trace_json));
    if (warn_stream_end(events_path, fj.tally, "its files' measured bytes and commands may be short") &&
        !accept_partial)
        throw Error(events_path + ": no closing summary: the stream is cut; score it anyway with --partial");
    std::map<FileId, std::pair<bool, bool>> kinds;  // per file: stored, loaded
    r.cmds = fj.cmds;
    r.unattributed_cmds = fj.unattributed_cmds;
    std::map<FileId, const FileIo*> by;
    for (const FileIo& f : fj.files) by[f.id] = &f;
    std::vector<uint64_t> sizes;
    for (const ObjectOp& op : t.ops) {
        if (!op.has_file)
            throw Error(semantic_path + ":" + std::to_string(op.line) +
                        ": field 'ino': missing: --objects needs ops that name their file (kvio import vllm-fs or "
                        "lmcache-disk)");
        ObjectRow row{op.kind, op.object_id, op.key, op.path, op.fs_dev, op.ino, op.gen};
        project(op, r.rules, sizes);
        row.projected_cmds = sizes.size();
        row.projected_bytes = std::accumulate(sizes.begin(), sizes.end(), uint64_t(0));
        const FileId id{op.fs_dev, op.ino, op.gen};
        (op.kind == OpKind::Load ? kinds[id].second : kinds[id].first) = true;
        if (auto it = by.find(id); it != by.end()) {
            const bool load = op.kind == OpKind::Load;
            row.measured_bytes = load ? it->second->read_bytes : it->second->write_bytes;
            row.measured_cmds = load ? it->second->read_cmds : it->second->write_cmds;
        }
        r.bytes_exact += row.bytes_match();
        r.cmds_exact += row.cmds_match();
        r.projected_bytes += row.projected_bytes;
        r.measured_bytes += row.measured_bytes;
        r.rows.push_back(std::move(row));
    }
    r.other_file_cmds = fj.cmds_of_unnamed;  // each command once, however many other files it held
    for (const auto& [id, k] : kinds) {
        r.stored_not_loaded += k.first && !k.second;
        r.loaded_not_stored += k.second && !k.first;
    }
    return r;
}

double objects_bytes_exact_pct(const ObjectsReport& r) {
    return r.rows.empty() ? 0.0 : 100.0 * double(r.bytes_exact) / double(r.rows.size());
}

void print_objects_report(std::ostream& os, const ObjectsReport& r) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-5s %8s %-18s %14s %14s %7s %7s %-5s %s\n", "OP", "OBJECT", "KEY", "PROJ_BYTES",
                  "MEAS_BYTES", "P_CMDS", "M_CMDS", "MATCH", "PATH");
    os << buf;
    for (const ObjectRow& w : r.rows) {
        const std::string key = w.key.size() > 18 ? w.key.substr(0, 17) + "~" : w.key;
        std::snprintf(buf, sizeof buf, "%-5s %8llu %-18s %14llu %14llu %7llu %7llu %-5s %s\n", op_kind_name(w.kind),
                      (unsigned long long)w.object_id, key.c_str(), (unsigned long long)w.projected_bytes,
                      (unsigned long long)w.measured_bytes, (unsigned long long)w.projected_cmds,
                      (unsigned long long)w.measured_cmds, w.bytes_match() ? "bytes" : "NO",
                      w.path.empty() ? "-" : w.path.c_str());
        os << buf;
    }
    std::snprintf(buf, sizeof buf,
                  "objects: bytes exact %llu/%zu, commands exact %llu/%zu; projected %llu B, measured %llu B "
                  "(kernel limit %llu B from %s); %llu of %llu commands without a file, %llu of other files\n",
                  (unsigned long long)r.bytes_exact, r.rows.size(), (unsigned long long)r.cmds_exact, r.rows.size(),
                  (unsigned long long)r.projected_bytes, (unsigned long long)r.measured_bytes,
                  (unsigned long long)r.rules.kernel_limit, r.rules.kernel_limit_source.c_str(),
                  (unsigned long long)r.unattributed_cmds, (unsigned long long)r.cmds,
                  (unsigned long long)r.other_file_cmds);
    os << buf;
    os << "files: " << r.stored_not_loaded << " stored and never loaded, " << r.loaded_not_stored
       << " loaded and never stored; events: "
       << (r.events.summary ? "closing summary read" : "CUT (no closing summary)") << ", " << r.events.dropped
       << " records dropped, " << r.events.lost_completions << " commands without their completion\n";
}

nlohmann::json objects_report_json(const ObjectsReport& r) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ObjectRow& w : r.rows)
        rows.push_back({{"op", op_kind_name(w.kind)},
                        {"object_id", w.object_id},
                        {"key", w.key},
                        {"path", w.path},
                        {"fs_dev", w.fs_dev},
                        {"ino", w.ino},
                        {"gen", w.gen},
                        {"projected_bytes", w.projected_bytes},
                        {"measured_bytes", w.measured_bytes},
                        {"projected_cmds", w.projected_cmds},
                        {"measured_cmds", w.measured_cmds},
                        {"bytes_match", w.bytes_match()},
                        {"cmds_match", w.cmds_match()}});
    return {{"schema", "kvio.validate.objects/1"},
            {"ops", r.rows.size()},
            {"bytes_exact", r.bytes_exact},
            {"cmds_exact", r.cmds_exact},
            {"projected_bytes", r.projected_bytes},
            {"measured_bytes", r.measured_bytes},
            {"cmds", r.cmds},
            {"unattributed_cmds", r.unattributed_cmds},
            {"other_file_cmds", r.other_file_cmds},
            {"kernel_limit_bytes", r.rules.kernel_limit},
            {"stored_not_loaded", r.stored_not_loaded},
            {"loaded_not_stored", r.loaded_not_stored},
            {"events_summary", r.events.summary},
            {"dropped", r.events.dropped},
            {"lost_completions", r.events.lost_completions},
            {"objects", rows}};
}

}  // namespace kvio::validate
