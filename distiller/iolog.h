// Exact replay log in fio's iolog version 3 format.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "common/event_trace.h"

namespace kvio::distiller {

/// Writes `cmds` (any order; written in ts_issue order) as a fio iolog v3 for `filename`:
///   fio version 3 iolog
///   T FILE add / T FILE open
///   T FILE read|write|trim OFFSET LENGTH      (OFFSET = sector × 512, LENGTH = bytes)
///   T FILE close
/// T is in microseconds since the first command's issue, plus 1: fio 3.33 reads v3 timestamps as µs
/// (iolog.c: iolog_delay() sleeps usec; log_io_u() writes utime_since_now()) and skips the delay that
/// follows a timestamp of 0 (delay_since_ttime() returns 0 while the last timestamp is 0).
/// Flush and other commands are not written (fio's sync action would fsync the target, not replay a
/// flush); discard becomes trim. Returns the number of I/O lines written. Throws kvio::Error when
/// `filename` is empty or contains whitespace (the iolog is whitespace-separated).
size_t write_iolog(std::ostream& os, const std::vector<Cmd>& cmds, const std::string& filename);

}  // namespace kvio::distiller
