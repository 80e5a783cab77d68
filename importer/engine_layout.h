// `kvio import vllm-fs` / `kvio import lmcache-disk`: a directory of an engine's KV block files (one file per block,
// named by its hash; docs/engine_layouts.md) plus a `kvio trace --files --events` stream of the same run, turned into
// kvio.semantic/1 object ops whose sizes come from the model's KV geometry, so `kvio validate --objects` compares each
// file's projected bytes with what the device moved for it.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/events_reader.h"
#include "workload/geometry.h"

namespace kvio::importer {

/// Which engine wrote the directory (docs/engine_layouts.md).
enum class EngineLayout : uint8_t { VllmFs, LmcacheDisk };
/// "vllm-fs" | "lmcache-disk".
const char* engine_layout_name(EngineLayout e);

/// vLLM's default GPU block size, tokens (the fs tier's file holds blocks_per_file such blocks).
inline constexpr uint32_t kVllmDefaultBlockTokens = 16;
/// LMCache's default chunk_size, tokens (one file per chunk).
inline constexpr uint32_t kLmcacheDefaultChunkTokens = 256;

/// What a directory is read with. `geometry` gives per_rank_bytes_per_token (workload/geometry.h) and tp.
struct LayoutOptions {
    EngineLayout engine = EngineLayout::VllmFs;
    workload::Geometry geometry;
    /// Tokens per block (vLLM) or chunk (LMCache); unset: what the path says (vLLM), else the engine's default.
    std::optional<uint32_t> block_tokens;
    std::optional<uint32_t> blocks_per_file;  ///< vLLM only; unset: what the path says, else 1
};

/// One KV file of the directory. Bytes are bytes.
struct KvFile {
    std::string path;              ///< as found under the directory (DIR/...)
    std::string rel;               ///< relative to the directory
    std::string key;               ///< the block or chunk hash from the name
    uint64_t size = 0;             ///< st_size
    uint64_t tokens = 0;           ///< tokens the file holds: size / per-rank bytes per token
    uint64_t block_tokens = 0;     ///< tokens a full file holds (block size × blocks per file, or chunk size)
    uint64_t projected_bytes = 0;  ///< tokens × per_rank_bytes_per_token of the model geometry
    bool partial = false;          ///< LMCache: a last chunk shorter than chunk_size
    uint32_t rank = 0;             ///< vLLM rank_R / LMCache worker_id
    uint64_t ino = 0, gen = 0;     ///< stat(2) st_ino; FS_IOC_GETVERSION (gen_known false when it fails)
    bool gen_known = false;
    std::string fs_dev;  ///< "MAJ:MIN" of st_dev
};

/// The files of a directory, sorted by `rel`, and what was left out.
struct LayoutScan {
    std::vector<KvFile> files;
    uint64_t skipped_tmp = 0;  ///< vLLM fs tier's in-flight temporary files (`NAME.bin_<n>.tmp`)
};

/// Reads `dir` recursively (names, sizes, inode identity). Each file's name must be the engine's (docs/
/// engine_layouts.md) and its size what the geometry predicts: vLLM exactly blocks_per_file × block_tokens tokens;
/// LMCache a whole number of tokens, at most chunk_size. Throws kvio::Error "FILE: field 'name'|'size'|'tp'|
/// 'world_size'|'block_size'|'blocks_per_file': ..." naming the file, or "DIR: ..." when it cannot be read or holds
/// no KV file.
LayoutScan scan_layout(const std::string& dir, const LayoutOptions& o);

/// Where a file's bytes sit on its disk: whole-disk "MAJ:MIN", byte ranges on it in file order, and the disk's
/// queue limits the projection uses.
struct MappedFile {
    std::string dev;
    std::vector<std::pair<uint64_t, uint64_t>> extents;  ///< [disk offset, length], bytes
    uint64_t lba_bytes = 4096;    ///< the filesystem block: writes reach the disk in whole blocks
    uint64_t max_sectors_kb = 0;  ///< 0: unknown (validate then needs --trace-json or --max-sectors-kb)
};

/// Maps files to disk ranges; the default (null) is FIEMAP plus the partition start (workload/fiemap.h, sysfs).
using FileMapper = std::function<MappedFile(const KvFile&)>;

struct ImportOptions {
    LayoutOptions layout;
    std::string events_path;  ///< kvio.events/1 from `kvio trace --files` (JSONL or binary)
    /// kvio.trace/1 summary of the same trace (`kvio trace --files --json`): its files table's `app_bytes` per file
    /// say which files the application read or wrote, so a load the page cache served (no device read) is a load
    /// measured 0. "" when not given: then the stream must carry syscall records (`--syscalls`).
    std::string trace_json_path;
    /// Accept a stream without its closing summary (cut: the trace was killed, or the file truncated) with a warning
    /// instead of an error.
    bool accept_partial = false;
    FileMapper mapper;
};

/// What an import wrote.
struct ImportSummary {
    LayoutScan scan;
    uint64_t stores = 0, loads = 0;  ///< ops written
    uint64_t untouched = 0;          ///< files no command or syscall of the events touched
    /// files whose commands in one direction moved more bytes than the file holds (rounded to the filesystem block),
    /// in a stream whose cmd records carry no `files` (a kvio before them): the kernel merged several files into
    /// those commands and such a record names only the first file, so their per-file bytes are not exact (the trace
    /// summary's files table is). With `files` each file takes its own bytes of a merged command: 0.
    uint64_t merged = 0;
    uint64_t projected_bytes = 0;  ///< sum over files
    uint64_t cached_loads = 0;     ///< loads the application made with no device read (page cache: measured 0)
    /// stores and loads whose device bytes in the stream fall short of the `--trace-json` files table's (the stream
    /// cut or records dropped): an error unless accept_partial, and then not counted as cached loads
    uint64_t short_ops = 0;
    EventsTally events;  ///< the stream's records, closing summary, dropped records, lost completions
};

/// Scans `dir`, joins the events per file (fs_dev, ino, gen; gen left out when the filesystem keeps none we could
/// read) and writes kvio.semantic/1 to `out`: a meta line (engine posix, layout files, the model and its geometry,
/// `source` the engine layout) then per file one `store` when device writes or write syscalls touched it and one
/// `load` when reads did, in ts_start order: `key` the hash, `payload_bytes` the projection, `bytes` it padded to the
/// filesystem block, `tokens`, `path`, `ino`/`fs_dev`/`gen`, `extents`, ts_start/ts the first issue (or syscall
/// entry) and last completion (or exit) of that direction; `app_bytes` what the application read or wrote of it by
/// syscalls (from `trace_json_path`'s files table, else the stream's syscall records), so a file read only from the
/// page cache gets a load with 0 device commands. Throws kvio::Error as scan_layout and the events reader, when no
/// file of `dir` is in the events (another run's trace), when neither `trace_json_path` nor syscall records say what
/// the application read (a cached load would vanish), and when the stream has no closing summary (cut) unless
/// `accept_partial`: nothing is written then; so too when a file's device bytes in the stream fall short of the
/// `trace_json_path` table's (short_ops: records cut or dropped), and, without that table, when loads with no device
/// read come from a stream that lost records (dropped, lost completions). Dropped records and lost completions are
/// warned of and counted.
ImportSummary import_engine_layout(const std::string& dir, const ImportOptions& o, std::ostream& out);

}  // namespace kvio::importer
