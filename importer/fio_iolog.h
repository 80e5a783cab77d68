// `kvio import fio-iolog`: a fio I/O log (`write_iolog`, version 2 or 3; fio's HOWTO "Trace file format") turned into
// kvio.events/1 device commands, so distill, compare and replay read it like a `kvio trace` capture.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace kvio::importer {

/// One I/O line of an iolog.
struct IologIo {
    uint64_t line = 0;
    uint32_t file = 0;  ///< index into Iolog::files
    enum class Kind : uint8_t { Read, Write, Trim, Sync } kind = Kind::Read;
    uint64_t offset = 0;  ///< bytes
    uint64_t length = 0;  ///< bytes
    /// µs on the log's clock: v3 the line's timestamp, v2 the sum of the `wait`s before it, plus the segment's start
    uint64_t ts_us = 0;
};

struct Iolog {
    int version = 0;                 ///< 2 or 3 (every segment's)
    uint32_t segments = 1;           ///< fio runs appended to one log: a header line starts each
    std::vector<std::string> files;  ///< in order of `add`
    std::vector<IologIo> ios;
};

/// Parses `text`. Rules (fio's): first line `fio version 2 iolog` or `fio version 3 iolog`; v3 lines start with a
/// timestamp (µs since the run's start: fio 3.33 writes utime_since_now()); then `FILE add|open|close` or
/// `FILE read|write|trim|sync|datasync OFFSET LENGTH` (v2 also `FILE wait USEC 0`), whitespace-separated; a file is
/// added before it is opened and opened before I/O; read/write/trim lengths are > 0 and offset + length fits in
/// 64 bits; v3 timestamps do not go backwards by more than fio's own reordering (any order is accepted, sorted on
/// import). A header line after the first starts a segment (fio appends to an existing write_iolog file, header
/// included): same version, its files added and opened again, its clock restarting at 0; it is placed where the
/// previous segment ended (v3: that segment's largest timestamp; v2: the sum of its waits), so the time between the
/// two fio runs is not in the result. Throws kvio::Error
/// "FILE:LINE: field 'header'|'timestamp'|'filename'|'action'|'offset'|'length': ...".
Iolog parse_fio_iolog(std::string_view text, const std::string& path);

struct IologImportOptions {
    /// Device of the log's file(s): "MAJ:MIN" or a disk name; empty: each file name must be a block device here
    /// (its whole disk, offsets moved by the partition start). Given, the offsets are taken as whole-disk offsets.
    std::string dev;
};

struct IologImport {
    int version = 0;
    uint32_t segments = 1;  ///< fio runs in the log (Iolog::segments)
    uint64_t cmds = 0;      ///< read/write/trim lines written as cmd records
    uint64_t syncs = 0;     ///< sync/datasync lines: fsyncs, not device commands; not written
};

/// Reads `path` (plain or zstd) and writes kvio.events/1 to `out`: per read/write/trim line one `cmd` record with
/// src "block", the file's dev and disk, op read|write|discard, rwbs R|W|D, sector = (partition start + offset) / 512,
/// bytes = length, ts_issue = timestamp × 1000 (ns from the log's start, not CLOCK_MONOTONIC of any machine),
/// ts_complete = ts_issue (an iolog records issues only: D2C 0), pid/tid 0, comm "fio"; in timestamp order; then a
/// summary (with "segments"). Throws kvio::Error on malformed input, an offset that is not a multiple of 512, or a file
/// that is no block device when `o.dev` is empty.
IologImport import_fio_iolog(const std::string& path, const IologImportOptions& o, std::ostream& out);

}  // namespace kvio::importer
