// The one reader of kvio.events/1 (`kvio trace --events`, docs/formats.md): JSONL, one flat record a line,
// or the binary capture kvio.events.bin/1 (common/events_bin.h; recognised by its magic bytes), decoded to the
// same records. Validate, the distiller and replay all read through it. Parsing uses simdjson's On-Demand API over a
// large read buffer (lines are parsed in place, no DOM, no per-line allocation); builds without simdjson (the static
// binary, KVIO_NO_SIMDJSON) parse each line with nlohmann_json instead, with the same results.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/events_bin.h"
#include "common/jsonl.h"

namespace kvio {

/// The top-level keys of a kvio.events/1 record that readers interpret (bit positions in EventRecord::has).
/// Other keys (d2c_ns, qid, lat_ns, ...) are skipped unchecked. Grouped by JSON type: strings, non-negative integers
/// (the summary counters last among them), integers, booleans.
enum class EventField : uint8_t {
    Type,
    Src,
    Dev,
    Disk,
    Op,
    Rwbs,
    Comm,
    Key,
    Name,
    FsDev,
    TraceId,  // strings
    Sector,
    Bytes,
    TsIssue,
    TsComplete,
    Qd,
    Pid,
    Tid,
    UserData,
    Slba,
    Nlb,
    TsEnter,
    TsExit,
    Offset,
    Count,
    Ino,
    Gen,
    FileSize,  // non-negative integers
    Events,
    Dropped,
    UnmatchedCompletes,
    NegativeDeltas,  // summary counters (non-negative integers)
    Fd,
    Ret,     // integers
    Direct,  // booleans
    Files,   // the one array: a cmd's file parts
    Count_
};

/// The JSON key of `f` ("ts_issue", "unmatched_completes", ...).
const char* event_field_name(EventField f);

/// The record types of kvio.events/1 (`type`).
enum class EventType : uint8_t { Cmd, Syscall, Summary, Stages };
/// Direction of a device command (`op`).
enum class IoOp : uint8_t { Read, Write, Flush, Discard, Other };
/// "read", "write", "flush", "discard", "other".
const char* io_op_name(IoOp op);

/// One file's bytes of a block command whose bytes are not all one file's (a cmd record's `files`, docs/formats.md):
/// `fs_dev` "MAJ:MIN" points into the reader like the record's strings.
struct EventFilePart {
    std::string_view fs_dev;
    uint64_t ino = 0, gen = 0, bytes = 0;
};

/// One record, flattened. String views point into the reader and are valid until its next next().
/// A field whose bit is not set in `has` was absent (its value is "" / 0).
struct EventRecord {
    // Set by EventsReader::next_checked (the format's rules passed), not by next():
    EventType kind = EventType::Cmd;
    IoOp io = IoOp::Other;  ///< cmd: `op`
    bool nvme = false;      ///< cmd: `src` "nvme"
    uint32_t kdev = 0;      ///< cmd: `dev` as a kernel dev_t (MAJOR << 20 | MINOR)
    uint64_t offset = 0;    ///< cmd: start byte on the whole disk: sector × 512 (block), slba × bytes/nlb (nvme)

    uint64_t has = 0;
    std::string_view type, src, dev, disk, op, rwbs, comm, key;
    uint64_t sector = 0, bytes = 0, ts_issue = 0, ts_complete = 0, qd = 0, pid = 0, tid = 0, user_data = 0;
    uint64_t slba = 0, nlb = 0;
    uint64_t events = 0, dropped = 0, unmatched_completes = 0, negative_deltas = 0;
    // syscall records (docs/formats.md): `name`, `fs_dev` ("MAJ:MIN"), `offset` (file_offset: the key's own value,
    // unlike the cmd's computed `offset` above), `count`, file identity and size, `fd`, `ret`, `direct`.
    std::string_view name, fs_dev;
    /// summary: the trace's identity (16 hex digits, also the kvio.trace/1 summary's `trace_id`); absent before it
    std::string_view trace_id;
    uint64_t ts_enter = 0, ts_exit = 0, file_offset = 0, count = 0, ino = 0, gen = 0, file_size = 0;
    int64_t fd = 0, ret = 0;
    bool direct = false;
    /// cmd `files` (--files --events: each file's bytes of a command not all one file's, each file once); empty when
    /// absent. Points into the reader, valid until its next next(). Readers that sum bytes per file take these in
    /// place of the record's own ino (its first file) when present.
    std::span<const EventFilePart> files;

    bool has_field(EventField f) const { return has >> unsigned(f) & 1; }
};

/// When the file at `path` is one whole JSON document (a pretty-printed summary or manifest given where a
/// kvio.events/1 stream belongs), what it is: "a kvio.trace/1 document", "a kvio record manifest (kvio gen --record)",
/// "a JSON document"; "" when it is not one (a JSONL stream, or larger than 256 MiB: not worth reading twice).
std::string whole_document_kind(const std::string& path);

/// What EventsReader::next_checked has returned so far: what a reader needs to tell a whole stream from a cut one.
struct EventsTally {
    uint64_t records = 0;           ///< records returned
    uint64_t last_line = 0;         ///< line (JSONL) or record number (binary capture) of the last one
    bool capture = false;           ///< the stream is a binary capture: last_line counts records
    bool summary = false;           ///< the closing summary record was read (the trace ended and flushed)
    uint64_t dropped = 0;           ///< its `dropped`: records the ring buffer had no room for
    uint64_t lost_completions = 0;  ///< read/write cmds without `ts_complete` (`complete_lost`): no file is known
    std::string trace_id;           ///< the summary's `trace_id`; "" without one (cut, or an older kvio's stream)
};

/// Refuses an events stream and a kvio.trace/1 summary given as one trace when both carry a `trace_id` and the two
/// differ: throws kvio::Error "EVENTS and SUMMARY are not the same trace: trace_id A in EVENTS, B in SUMMARY". A
/// missing id on either side (a cut stream, an older kvio's file) is not checked here.
void check_same_trace_id(const std::string& events_path, std::string_view events_id, const std::string& summary_path,
                         std::string_view summary_id);

/// The warnings a reader of a whole stream owes its user, from `t` (common/warn.h), and whether the stream is cut:
/// no closing summary (the trace was killed, or the file was cut: "PATH: no closing summary record after its last
/// complete record (line N): the stream is cut ..."), dropped records and lost completions (counted). `what` says
/// what they cost the reader ("loads and stores may be missing"). Returns true when the summary is missing.
bool warn_stream_end(const std::string& path, const EventsTally& t, const std::string& what);

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
    ///   "FILE:LINE: field 'F': expected an integer, got ..." / "expected true or false, got ..." (fd, ret / direct)
    /// It does not check which fields a record type requires: next_checked() does.
    /// A last line cut off by the end of the file (no newline, not valid JSON: the tracer was killed) is dropped
    /// with a warning (common/warn.h, jsonl.h torn_last_line_warning); the same line elsewhere is an error.
    bool next(EventRecord& r);

    /// next() and then the format's rules, the one set every command applies (docs/formats.md, "Reader rules"):
    ///   `type` present and "cmd", "syscall", "stages" (--breakdown; no field checked) or "summary";
    ///   a cmd has `src` ("block" | "nvme"), `dev` ("MAJ:MIN"), `op` (read|write|flush|discard|other), `bytes`
    ///   and `ts_issue`; a block cmd has `sector`, an nvme cmd `slba` and `nlb`; `ts_complete`, when present, is
    ///   not before `ts_issue`; a read or write lies on the disk (sector × 512, slba × LBA bytes fit in 64 bits)
    ///   and is at most 4 GiB (the kernel's 32-bit request length); an nvme read or write has nlb ≥ 1 and bytes
    ///   a multiple of nlb; `files` only on a block cmd, its parts' bytes not above the command's.
    /// Fills kind, io, nvme, kdev and offset. Throws "FILE:LINE: field 'F': missing" / "...: expected ..., got ...".
    bool next_checked(EventRecord& r);

    /// Throws "FILE:LINE: field 'F': missing" when `r` lacks `f` (LINE: the record last returned).
    void require(const EventRecord& r, EventField f) const {
        if (!r.has_field(f)) src_.fail(event_field_name(f), "missing");
    }
    /// What next_checked() has returned so far (counts, the summary, lost completions).
    const EventsTally& tally() const { return tally_; }
    /// The file is a binary capture (kvio.events.bin/1), not JSONL.
    bool is_capture() const { return bin_ != nullptr; }
    /// FILE and the line of the record last returned, for the caller's own field errors.
    const JsonSource& source() const { return src_; }

    struct Parser;  ///< the JSON backend (simdjson or nlohmann), private to events_reader.cpp

private:
    bool read_line(const char*& b, const char*& e);
    bool next_bin(EventRecord& r);
    void bin_parts(EventRecord& r);
    void check(EventRecord& r);
    EventsTally tally_;
    bool unterminated_ = false;  // the line read_line returned last had no newline (the file's last)
    std::string last_dev_;       // the last "MAJ:MIN" checked and its dev_t: a trace is about one or two devices
    uint32_t last_kdev_ = 0;
    bool have_dev_ = false;
    std::FILE* f_ = nullptr;
    JsonSource src_;
    char* buf_ = nullptr;  // cap_ bytes + padding the parser may read past a line's end
    size_t cap_ = 0, pos_ = 0, len_ = 0;
    bool eof_ = false;
    std::unique_ptr<Parser> parser_;
    // kvio.events.bin input: the record stream, its device table, and storage the string views point into.
    std::unique_ptr<evbin::Reader> bin_;
    char rwbs_[8] = {}, comm_[16] = {}, fs_dev_[24] = {};
    std::string json_;
    std::vector<EventFilePart> bin_files_;        // a capture's Files record as parts
    std::vector<std::array<char, 24>> bin_devs_;  // their fs_dev strings
};

}  // namespace kvio
