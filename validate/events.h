// Device commands of a kvio.events/1 file (kvio trace --events) for the join, one at a time, so memory
// does not grow with the number of commands. Parsing is common/events_reader.h (the one reader of the format).
#pragma once
#include <cstdint>
#include <string>

#include "common/events_reader.h"
#include "validate/commands.h"
#include "validate/types.h"

namespace kvio::validate {

class EventsReader : public CommandReader {
public:
    /// Opens `path`. Throws kvio::Error when it cannot be read.
    explicit EventsReader(const std::string& path) : rd_(path) {}

    /// Reads the next `"type":"cmd"` record into `c`; false at end of file. Syscall and summary records are
    /// skipped (the summary's `dropped` is kept). Throws kvio::Error "FILE:LINE: field 'F': ..." on a record
    /// that breaks the format's rules (kvio::EventsReader::next_checked, the same for every command).
    bool next(Command& c) override;

    const JsonSource& source() const { return rd_.source(); }
    /// `dropped` of the trailing summary record (events the tracer lost); 0 when absent.
    uint64_t summary_dropped() const override { return dropped_; }
    /// `unmatched_completes` of the summary: completions whose issue the tracer did not see (commands missing
    /// from the file); 0 when absent.
    uint64_t summary_unmatched_completes() const override { return unmatched_; }
    bool saw_summary() const override { return saw_summary_; }
    const char* format() const override { return "kvio.events/1"; }
    /// Records skipped because their type is not "cmd" (syscall, summary).
    uint64_t other_records() const { return other_; }

private:
    kvio::EventsReader rd_;
    EventRecord rec_;
    uint64_t dropped_ = 0, unmatched_ = 0, other_ = 0;
    bool saw_summary_ = false;
};

}  // namespace kvio::validate
