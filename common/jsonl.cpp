#include "common/jsonl.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "common/events_bin.h"
#include "common/input_file.h"
#include "common/output_file.h"
#include "common/warn.h"

namespace kvio {

void JsonSource::fail(const std::string& field, const std::string& msg) const {
    throw Error(where() + ": field '" + field + "': " + msg);
}

std::string JsonSource::other_kind(const json& j) const {
    if (line > 1 || !expect) return "";
    const std::string kind = json_kind(j);
    return kind.empty() || kind.find(expect) != std::string::npos ? "" : ": the file holds " + kind;
}

std::string json_kind(const json& j) {
    if (!j.is_object()) return "";
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
    if (const std::string s = str("schema"); !s.empty())
        return s.find("semantic") != std::string::npos ? s + " ops (kvio gen --semantic)" : "a " + s + " document";
    if (j.contains("schema_version") && j.contains("device_geometry"))
        return "a kvio record manifest (kvio gen --record)";
    if (const std::string t = str("type");
        (t == "cmd" || t == "syscall" || t == "stages" || t == "summary" || t == "meta") &&
        (j.contains("dev") || j.contains("src")))
        return "kvio.events/1 records (kvio trace --events)";
    if (const std::string e = str("event_type"); !e.empty())
        return e == "kvio_meta" ? "an LMCache kvio semantic trace"
               : e == "nvme_cmd" || e == "nvme_cmp" || e == "cq_overflow" || e == "clock_anchor" || e == "drops"
                   ? "an NVMe io_uring_cmd monitor stream"
                   : "";
    if (j.contains("fio version")) return "fio JSON output";
    if (j.contains("requests_completed") && j.contains("summary")) return "kvio simulate / MLPerf KV-cache results";
    return "";
}

std::string torn_last_line_warning(const JsonSource& at) {
    return at.where() + ": the last line is cut off (the writer was killed?): dropped";
}

JsonlReader::JsonlReader(const std::string& path) : f_(open_input(path)), src_{path, 0} {}

JsonlReader::~JsonlReader() {
    std::fclose(f_);
    std::free(line_);
}

bool JsonlReader::next(json& out) {
    ssize_t n;
    while ((n = ::getline(&line_, &cap_, f_)) >= 0) {
        ++src_.line;
        std::string_view l(line_, size_t(n));
        const bool newline = !l.empty() && l.back() == '\n';
        if (newline) l.remove_suffix(1);
        if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        try {
            out = json::parse(l);
        } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
            if (src_.line == 1 && evbin::has_magic(line_, size_t(n)))  // a binary capture given for JSON lines
                throw Error(src_.file +
                            ": is a kvio.events.bin/1 capture (kvio trace --events-format bin), not JSON "
                            "lines");
            struct stat st {};
            if (src_.line == 1 && ::stat(src_.file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                st.st_size < (off_t(256) << 20)) {  // one pretty-printed document of a known kind: named
                json whole = json::parse(read_input(src_.file), nullptr, false);
                if (const std::string kind = json_kind(whole); !kind.empty())
                    throw Error(src_.file + ":1: is " + kind + " (one JSON document), not JSON lines");
            }
            if (!newline) {
                warn(torn_last_line_warning(src_));
                return false;
            }
            throw Error(src_.where() + ": not valid JSON (" + e.what() + ")");
        }
        if (!out.is_object()) throw Error(src_.where() + ": expected a JSON object");
        return true;
    }
    if (std::ferror(f_)) throw Error(src_.file + ": read error: " + std::strerror(errno));
    return false;
}

json read_json_file(const std::string& path) {
    const std::string text = read_input(path);
    try {
        return json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
        // A binary capture, or JSON lines of a known kind (an events or semantic stream): named, not "not valid JSON".
        if (evbin::has_magic(text.data(), text.size()))
            throw Error(path +
                        ": is a kvio.events.bin/1 capture (kvio trace --events-format bin), not one JSON document");
        const json first = json::parse(text.substr(0, text.find('\n')), nullptr, false);
        if (const std::string kind = json_kind(first); !kind.empty())
            throw Error(path + ":1: holds " + kind + " as JSON lines, not one JSON document");
        throw Error(path + ": not valid JSON (" + e.what() + ")");
    }
}

void write_text_file(const std::string& path, const std::string& text) {
    PendingRename pending(path);
    std::ofstream out(pending.write_path());
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
    out << text;
    out.flush();
    const int err = out ? 0 : (errno ? errno : EIO);
    out.close();
    if (err || !out) throw Error(path + ": write failed: " + std::strerror(err ? err : EIO));
    pending.commit();
}

void write_json_file(const std::string& path, const json& j) { write_text_file(path, j.dump(2) + "\n"); }

static const json& require(const json& obj, const char* field, const JsonSource& src) {
    auto it = obj.find(field);
    if (it == obj.end()) {
        // The first record (or the document) of another kvio or known format: say what the file is.
        src.fail(field, "missing" + src.other_kind(obj));
    }
    return *it;
}

uint64_t get_u64(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
    src.fail(field, "expected a non-negative integer, got " + v.dump());
}

int64_t get_i64(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number_integer()) return v.get<int64_t>();
    src.fail(field, "expected an integer, got " + v.dump());
}

double get_double(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number()) return v.get<double>();
    src.fail(field, "expected a number, got " + v.dump());
}

std::string get_string(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_string()) return v.get<std::string>();
    src.fail(field, "expected a string, got " + v.dump());
}

uint64_t get_u64_or(const json& obj, const char* field, uint64_t dflt, const JsonSource& src) {
    return obj.contains(field) ? get_u64(obj, field, src) : dflt;
}

std::string get_string_or(const json& obj, const char* field, const std::string& dflt, const JsonSource& src) {
    return obj.contains(field) ? get_string(obj, field, src) : dflt;
}

}  // namespace kvio
