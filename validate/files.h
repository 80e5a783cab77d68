// `--join files` core: with no semantic log, each traced file is the object. Device commands that `kvio trace
// --files` attributed to a file (ino, fs_dev, gen: docs/formats.md) are grouped per file and compared with what
// the file's size predicts (docs/validate_files.md).
#pragma once
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/events_reader.h"

namespace kvio::validate {

/// A file's identity as the events stream carries it: filesystem "MAJ:MIN", inode number, i_generation.
struct FileId {
    std::string fs_dev;
    uint64_t ino = 0, gen = 0;
    bool operator<(const FileId& o) const { return std::tie(fs_dev, ino, gen) < std::tie(o.fs_dev, o.ino, o.gen); }
};

/// What the device and the syscalls moved for one file. Bytes are bytes; sizes are per device command.
struct FileIo {
    FileId id;
    uint64_t read_cmds = 0, write_cmds = 0;            ///< device read / write commands attributed to the file
    uint64_t read_bytes = 0, write_bytes = 0;          ///< their summed `bytes`
    uint64_t min_cmd_bytes = 0, max_cmd_bytes = 0;     ///< smallest and largest read/write command
    uint64_t file_size = 0;                            ///< largest `file_size` of the file's syscall records; 0: none
    uint64_t sys_read_bytes = 0, sys_write_bytes = 0;  ///< bytes syscalls returned (ret > 0) for the file
    bool has_syscalls = false;                         ///< at least one syscall record names the file
    std::string path;  ///< from the trace's --json `files` table (name_files_from_trace_json); "" when not known
    /// Share of syscall read bytes the device did not read (served by the page cache): 1 - read_bytes /
    /// sys_read_bytes, clamped to [0, 1]; -1 when no syscall read the file.
    double page_cache_read_share() const;
};

/// Per-file totals of one events stream, ordered by FileId, and what could not be attributed.
struct FilesJoin {
    std::vector<FileIo> files;
    uint64_t cmds = 0;               ///< read/write device commands in the stream
    uint64_t unattributed_cmds = 0;  ///< read/write commands without `ino` (metadata, journal, or no --files)
    EventsTally tally;               ///< the stream's records, closing summary, dropped records, lost completions
    /// with join_files' `named`: read/write commands carrying bytes of a file not in it (each command once, however
    /// many such files it held)
    uint64_t cmds_of_unnamed = 0;
};

/// Reads kvio.events/1 (JSONL or binary) at `events_path` through common/events_reader.h and groups read/write
/// commands by file. Throws kvio::Error "EVENTS: none of its N read/write device commands carries a file (ino): trace
/// with --files" when read/write commands exist but none is attributed, and the reader's FILE:LINE: field errors on bad
/// records. With `named`, also counts the commands that carry bytes of files not in it (cmds_of_unnamed). With
/// `require_files` false (validate --objects, whose objects are files the import named: a run whose loads all came from
/// the page cache may hold only metadata commands) none attributed is a warning, not the error.
FilesJoin join_files(const std::string& events_path, const std::set<FileId>* named = nullptr,
                     bool require_files = true);

/// Sets each file's `path` from the `files` rows of the kvio.trace/1 summary (`kvio trace --files --json`) of the
/// same trace: a row of one file carries its `ino`, `fs_dev` and `gen` (docs/formats.md); a `--group-by` row of
/// several files names none of them, and a file `--under` left out keeps "". The events stream carries no paths
/// (docs/validate_files.md). Returns the number of files named. Throws kvio::Error "FILE: field 'F': ..." when the
/// file is not a kvio.trace/1 summary or has no `files` array (traced without --files), and "EVENTS and FILE are not
/// the same trace: ..." when the stream (`events_path`, read into `j`) and the summary carry different `trace_id`s.
size_t name_files_from_trace_json(FilesJoin& j, const std::string& trace_json_path, const std::string& events_path);

/// One text row per file: identity, device read/write commands and bytes, command size range, syscall bytes,
/// file size, page-cache read share and path ("-" when unknown), then the unattributed count.
void print_files_report(std::ostream& os, const FilesJoin& j);

/// {"schema":"kvio.validate.files/1","cmds":N,"unattributed_cmds":N,"files":[{"fs_dev","ino","gen","read_cmds",
/// "write_cmds","read_bytes","write_bytes","min_cmd_bytes","max_cmd_bytes","file_size","sys_read_bytes",
/// "sys_write_bytes","page_cache_read_share","path" (each null when unknown)}]}.
nlohmann::json files_report_json(const FilesJoin& j);

}  // namespace kvio::validate
