// Reading JSON and JSON-lines files with errors that name file, line and field.
#pragma once
#include <cstdint>
#include <cstdio>
#include <fstream>  // for includers that write with std::ofstream
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace kvio {

using json = nlohmann::json;

/// Where a JSON value came from, for error messages: "FILE:LINE".
struct JsonSource {
    std::string file;
    size_t line = 0;  ///< 1-based; 0 for a whole-file JSON document
    /// What the reader expects, as a part of json_kind()'s text ("kvio.semantic/1", "record manifest"); when set and
    /// the first record (or the document) lacks a field because it is of another known kind, the error names that
    /// kind. nullptr: never named.
    const char* expect = nullptr;
    std::string where() const { return line ? file + ":" + std::to_string(line) : file; }
    /// Throws kvio::Error "FILE:LINE: field 'F': MSG".
    [[noreturn]] void fail(const std::string& field, const std::string& msg) const;
    /// ": the file holds KIND" when `j` is the first record (or the document) and of a known kind (json_kind)
    /// other than `expect`; "" otherwise. For a reader's own refusals of a first record.
    std::string other_kind(const nlohmann::json& j) const;
};

/// The message for a last line cut off mid-record (no newline, not valid JSON: the writer was killed or ran out
/// of space): "FILE:LINE: the last line is cut off (the writer was killed?): dropped". Every JSONL reader warns
/// with it and drops that line; the same line in the middle of a file is an error.
std::string torn_last_line_warning(const JsonSource& at);

/// Streams a JSONL file one object per line; blank lines are skipped; a torn last line is dropped with a
/// warning (torn_last_line_warning). Throws kvio::Error on unreadable files (common/input_file.h) and on lines
/// that are not JSON objects: "FILE:LINE: not valid JSON (...)", "FILE:LINE: expected a JSON object".
class JsonlReader {
public:
    explicit JsonlReader(const std::string& path);
    ~JsonlReader();
    JsonlReader(const JsonlReader&) = delete;
    JsonlReader& operator=(const JsonlReader&) = delete;
    /// Reads the next object into `out`; false at end of file.
    bool next(json& out);
    const JsonSource& source() const { return src_; }
    /// What this stream should hold (JsonSource::expect): a first record of another known kind is named.
    void expect(const char* kind) { src_.expect = kind; }

private:
    std::FILE* f_ = nullptr;
    JsonSource src_;
    char* line_ = nullptr;
    size_t cap_ = 0;
};

/// Reads a whole JSON document. Throws kvio::Error naming the file on failure (as common/input_file.h opens it,
/// "FILE: not valid JSON (...)").
json read_json_file(const std::string& path);
/// Writes `text` to `path` whole or not at all: a regular file is written as PATH.tmp-PID beside it and renamed over
/// PATH when complete (a full disk leaves the old file, or none, never a cut one); a device, pipe or link is written
/// in place. Throws kvio::Error "PATH: cannot write: REASON" or "PATH: write failed: REASON".
void write_text_file(const std::string& path, const std::string& text);

/// What a JSON object (a document, or the first record of JSON lines) is, when it is a format kvio knows: "a
/// kvio.trace/1 document", "kvio.semantic/1 ops (kvio gen --semantic)", "kvio.events/1 records (kvio trace
/// --events)", "a kvio record manifest (kvio gen --record)", "fio JSON output", ... ("" otherwise). Readers use
/// it to name a valid file of the wrong kind instead of calling it invalid.
std::string json_kind(const json& j);
/// Writes `j` (pretty, 2-space indent) to `path` through write_text_file.
void write_json_file(const std::string& path, const json& j);

/// Required field accessors: throw "FILE:LINE: field 'NAME': missing" / "expected ...".
uint64_t get_u64(const json& obj, const char* field, const JsonSource& src);
int64_t get_i64(const json& obj, const char* field, const JsonSource& src);
double get_double(const json& obj, const char* field, const JsonSource& src);
std::string get_string(const json& obj, const char* field, const JsonSource& src);
/// Optional variants: return `dflt` when the field is absent, throw when present with the wrong type.
uint64_t get_u64_or(const json& obj, const char* field, uint64_t dflt, const JsonSource& src);
std::string get_string_or(const json& obj, const char* field, const std::string& dflt, const JsonSource& src);

}  // namespace kvio
