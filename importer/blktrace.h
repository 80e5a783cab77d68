// `kvio import blktrace`: blktrace's per-CPU binary files (`blktrace -d DEV -o NAME` writes NAME.blktrace.<cpu>) read
// directly and turned into kvio.events/1 device commands, one per completed request, as `kvio trace` writes them.
// Record layout: struct blk_io_trace of <linux/blktrace_api.h> (48 bytes, host byte order, magic 0x65617400 | version
// 7) followed by pdu_len bytes of payload.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace kvio::importer {

/// One blk_io_trace record as read (payload kept for notify records only).
struct BlkRecord {
    uint32_t sequence = 0;
    uint64_t time = 0;    ///< ns, the kernel's ktime_get() (CLOCK_MONOTONIC) at the event
    uint64_t sector = 0;  ///< 512-byte units
    uint32_t bytes = 0;
    uint32_t action = 0;  ///< low 16 bits the action (__BLK_TA_*), high 16 the category mask (BLK_TC_*)
    uint32_t pid = 0;     ///< the task's pid (a thread id)
    uint32_t device = 0;  ///< kernel dev_t (MAJOR << 20 | MINOR)
    uint32_t cpu = 0;
    uint16_t error = 0;
    std::string pdu;  ///< notify payload (a process name, a message)
};

/// Parses one per-CPU file's bytes. A byte-swapped file (written on the other endianness) is read swapped.
/// Throws kvio::Error "FILE: record N at byte B: field 'magic'|'version'|'pdu_len': ..." on a bad record; a record
/// cut off at the end of the file is dropped and counted in `truncated` (blktrace killed mid-write).
std::vector<BlkRecord> parse_blktrace(std::string_view bytes, const std::string& path, uint64_t& truncated);

/// The per-CPU files of `dir_or_prefix`: a directory → every NAME.blktrace.N in it (one NAME); a prefix P →
/// P.blktrace.0, P.blktrace.1, ...; an existing file → that file alone. Throws kvio::Error when none is found or a
/// directory holds the files of several devices.
std::vector<std::string> blktrace_files(const std::string& dir_or_prefix);

struct BlktraceImport {
    std::vector<std::string> files;
    uint64_t records = 0;              ///< blk_io_trace records read
    uint64_t cmds = 0;                 ///< cmd records written (completed, plus complete_lost)
    uint64_t lost_completes = 0;       ///< issued, never completed in the capture: written with complete_lost
    uint64_t unmatched_completes = 0;  ///< completions whose issue the capture does not hold (in flight at its start)
    uint64_t truncated = 0;            ///< records cut off at a file end
    uint64_t requeued = 0;  ///< issues taken back by a requeue (the command is written once, at its last issue)
};

/// Reads every file of `dir_or_prefix`, merges the CPUs by time and writes kvio.events/1 to `out`: per request
/// (D issue .. C final completion, matched by device and sector; a partial completion moves the sector on) one
/// `cmd` record with src "block", dev (the record's device, "MAJ:MIN"), disk (the files' NAME), op and rwbs from the
/// category bits (blkparse's letters; a flush request "F" as the kernel prints it), sector, bytes, ts_issue,
/// ts_complete, d2c_ns, ts_insert/q2d_ns when an I event preceded the issue, qd (requests in flight on the device at
/// the issue, this one included), tid = pid of the G (get request) event at that sector or else the Q event, comm
/// from blktrace's process notes, pid 0 (blktrace records thread ids only), error when non-zero; records in
/// completion order, then a summary record. Throws kvio::Error on malformed files.
BlktraceImport import_blktrace(const std::string& dir_or_prefix, std::ostream& out);

}  // namespace kvio::importer
