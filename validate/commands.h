// A stream of device commands for the join, whatever file format they come from (kvio.events/1 and its binary
// capture: validate/events.h; the NVMe io_uring_cmd monitor JSONL: validate/commands_monitor.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "validate/types.h"

namespace kvio::validate {

class CommandReader {
public:
    virtual ~CommandReader() = default;
    /// The next device command; false at end of file. Throws kvio::Error "FILE:LINE: field 'F': ..." on a
    /// malformed record.
    virtual bool next(Command& c) = 0;
    /// Events the tracer lost (the summary's / the monitor's `dropped`); 0 when absent.
    virtual uint64_t summary_dropped() const = 0;
    /// Completions whose issue the tracer did not see; 0 when absent.
    virtual uint64_t summary_unmatched_completes() const { return 0; }
    /// The file ended with its loss record (kvio summary, monitor `drops`).
    virtual bool saw_summary() const = 0;
    /// Facts of the stream that make scores doubtful, one sentence each (monitor: cq overflows, failed commands).
    virtual std::vector<std::string> warnings() const { return {}; }
    /// What the file is: "kvio.events/1", "nvme-monitor".
    virtual const char* format() const = 0;
};

}  // namespace kvio::validate
