// Streaming reader of kvio.events/1 (kvio trace --events): yields device commands one at a time,
// so memory does not grow with the number of commands.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/jsonl.h"
#include "validate/types.h"

namespace kvio::validate {

class EventsReader {
public:
    /// Opens `path`. Throws kvio::Error when it cannot be read.
    explicit EventsReader(const std::string& path);
    ~EventsReader();
    EventsReader(const EventsReader&) = delete;
    EventsReader& operator=(const EventsReader&) = delete;

    /// Reads the next `"type":"cmd"` record into `c`; false at end of file. Syscall, summary and
    /// unknown record types are skipped (the summary's `dropped` is kept). Throws kvio::Error
    /// "FILE:LINE: field 'F': ..." on a malformed line or a missing/mistyped required field.
    bool next(Command& c);

    const JsonSource& source() const { return src_; }
    /// `dropped` of the trailing summary record (events the tracer lost); 0 when absent.
    uint64_t summary_dropped() const { return dropped_; }
    /// `unmatched_completes` of the summary: completions whose issue the tracer did not see (commands missing
    /// from the file); 0 when absent.
    uint64_t summary_unmatched_completes() const { return unmatched_; }
    bool saw_summary() const { return saw_summary_; }
    /// Records skipped because their type is not "cmd".
    uint64_t other_records() const { return other_; }

private:
    bool read_line(const char*& b, const char*& e);
    std::FILE* f_ = nullptr;
    JsonSource src_;
    std::vector<char> buf_;
    size_t pos_ = 0, len_ = 0;
    bool eof_ = false;
    uint64_t dropped_ = 0, unmatched_ = 0, other_ = 0;
    bool saw_summary_ = false;
};

}  // namespace kvio::validate
