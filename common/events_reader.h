// The one reader of kvio.events/1 (`kvio trace --events`, docs/formats.md): JSONL, one flat record a line,
// or the binary capture kvio.events.bin/1 (common/events_bin.h; recognised by its magic bytes), decoded to the
// same records. Validate, the distiller and replay all read through it. Parsing uses simdjson's On-Demand API over a large
// read buffer (lines are parsed in place, no DOM, no per-line allocation); builds without simdjson
// (the static binary, KVIO_NO_SIMDJSON) parse each line with nlohmann_json instead, with the same results.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/events_bin.h"
#include "common/jsonl.h"

namespace kvio {


/// The top-level keys of a kvio.events/1 record that readers interpret (bit positions in EventRecord::has).
/// Other keys (d2c_ns, qid, syscall fields, ...) are skipped unchecked.
enum class EventField : uint8_t {
    Type, Src, Dev, Disk, Op, Rwbs, Comm, Key,                             // strings
    Sector, Bytes, TsIssue, TsComplete, Qd, Pid, Tid, UserData, Slba, Nlb, // non-negative integers
    Events, Dropped, UnmatchedCompletes, NegativeDeltas,                   // summary counters
    Count_
};

/// The JSON key of `f` ("ts_issue", "unmatched_completes", ...).
const char* event_field_name(EventField f);

/// One record, flattened. String views point into the reader and are valid until its next next().
/// A field whose bit is not set in `has` was absent (its value is "" / 0).
struct EventRecord {
    uint32_t has = 0;
    std::string_view type, src, dev, disk, op, rwbs, comm, key;
    uint64_t sector = 0, bytes = 0, ts_issue = 0, ts_complete = 0, qd = 0, pid = 0, tid = 0, user_data = 0;
    uint64_t slba = 0, nlb = 0;
    uint64_t events = 0, dropped = 0, unmatched_completes = 0, negative_deltas = 0;

    bool has_field(EventField f) const { return has >> unsigned(f) & 1; }
};

/// Streams a kvio.events/1 file record by record with memory independent of its length (one read buffer
/// of 4 MiB, grown only for a longer line). Blank lines (spaces, tabs, CR) are skipped; CRLF line ends and
/// a last line without a newline are accepted.
class EventsReader {
public:
    /// Opens `path`. Throws kvio::Error "PATH: cannot open: REASON".
    explicit EventsReader(const std::string& path);
    ~EventsReader();
    EventsReader(const EventsReader&) = delete;
    EventsReader& operator=(const EventsReader&) = delete;

    /// Reads the next record into `r`; false at end of file. Throws kvio::Error naming FILE:LINE:
    ///   "FILE:LINE: not valid JSON (...)"                   malformed line
    ///   "FILE:LINE: expected a JSON object"                 the line is an array, string, ...
    ///   "FILE:LINE: field 'F': expected a string"           a string field of another type
    ///   "FILE:LINE: field 'F': expected a non-negative integer, got a string|a negative number|a fraction|..."
    /// It does not check which fields a record type requires: callers do, with require().
    bool next(EventRecord& r);

    /// Throws "FILE:LINE: field 'F': missing" when `r` lacks `f` (LINE: the record last returned).
    void require(const EventRecord& r, EventField f) const {
        if (!r.has_field(f)) src_.fail(event_field_name(f), "missing");
    }
    /// The file is a binary capture (kvio.events.bin/1), not JSONL.
    bool is_capture() const { return bin_ != nullptr; }
    /// FILE and the line of the record last returned, for the caller's own field errors.
    const JsonSource& source() const { return src_; }

    struct Parser;  ///< the JSON backend (simdjson or nlohmann), private to events_reader.cpp

private:
    bool read_line(const char*& b, const char*& e);
    bool next_bin(EventRecord& r);
    std::FILE* f_ = nullptr;
    JsonSource src_;
    char* buf_ = nullptr;     // cap_ bytes + padding the parser may read past a line's end
    size_t cap_ = 0, pos_ = 0, len_ = 0;
    bool eof_ = false;
    std::unique_ptr<Parser> parser_;
    // kvio.events.bin input: the record stream, its device table, and storage the string views point into.
    std::unique_ptr<evbin::Reader> bin_;
    std::unordered_map<uint32_t, evbin::DeviceFacts> bin_devs_;
    char rwbs_[8] = {}, comm_[16] = {};
    std::string json_;
};

}  // namespace kvio
