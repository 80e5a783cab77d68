#include "importer/engine_layout.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <ostream>
#include <regex>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/checked_math.h"
#include "common/devinfo.h"
#include "common/error.h"
#include "common/events_reader.h"
#include "common/jsonl.h"
#include "common/trace_id.h"
#include "common/warn.h"
#include "workload/fiemap.h"

namespace kvio::importer {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* engine_layout_name(EngineLayout e) { return e == EngineLayout::VllmFs ? "vllm-fs" : "lmcache-disk"; }

namespace {

[[noreturn]] void fail(const std::string& file, const char* field, const std::string& msg) {
    throw Error(file + ": field '" + field + "': " + msg);
}

bool lower_hex(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(uint8_t(c)) || (c >= 'a' && c <= 'f'); });
}

/// A decimal of at most 9 digits (what the engines write for sizes and ranks); nullopt otherwise.
std::optional<uint32_t> small_decimal(const std::string& s) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(uint8_t(c)); }))
        return std::nullopt;
    return uint32_t(std::stoul(s));
}

/// What vLLM's fs tier writes into the directory names above a block file (docs/engine_layouts.md).
struct VllmPathParams {
    std::optional<uint32_t> block_size, blocks_per_file, tp, rank;
};

VllmPathParams vllm_path_params(const fs::path& file) {
    static const std::regex bs("block_size_([0-9]{1,9})_blocks_per_file_([0-9]{1,9})");
    static const std::regex tp("tp_([0-9]{1,9})_pp_size_([0-9]{1,9})_pcp_size_([0-9]{1,9})");
    static const std::regex rank("rank_([0-9]{1,9})");
    VllmPathParams p;
    std::smatch m;
    for (const auto& c : fs::absolute(file).parent_path()) {
        const std::string s = c.string();
        if (std::regex_match(s, m, bs)) {
            p.block_size = uint32_t(std::stoul(m[1]));
            p.blocks_per_file = uint32_t(std::stoul(m[2]));
        } else if (std::regex_match(s, m, tp)) {
            p.tp = uint32_t(std::stoul(m[1]));
        } else if (std::regex_match(s, m, rank)) {
            p.rank = uint32_t(std::stoul(m[1]));
        }
    }
    return p;
}

/// The flag's value, the path's, or the default; a flag that contradicts the path is an error naming both.
uint32_t pick(std::optional<uint32_t> flag, std::optional<uint32_t> path, uint32_t dflt, const std::string& file,
              const char* field, const char* flag_name) {
    if (flag && path && *flag != *path)
        fail(file, field,
             "the path says " + std::to_string(*path) + ", " + flag_name + " says " + std::to_string(*flag));
    const uint32_t v = flag ? *flag : path ? *path : dflt;
    if (v == 0) fail(file, field, "0 tokens");
    return v;
}

/// vLLM fs tier: DIR/.../<hhh>/<hh>/<16 hex>.bin, raw KV bytes of blocks_per_file full blocks of this rank.
void read_vllm_file(KvFile& f, const fs::path& p, const LayoutOptions& o) {
    const std::string name = p.filename().string();
    const std::string hex = name.substr(0, 16);
    if (name.size() != 20 || name.substr(16) != ".bin" || !lower_hex(hex))
        fail(f.path, "name",
             "expected <16 lowercase hex digits>.bin (the block hash; docs/engine_layouts.md), got \"" + name + "\"");
    if (p.parent_path().parent_path().filename() != hex.substr(0, 3) || p.parent_path().filename() != hex.substr(3, 2))
        fail(
            f.path, "name",
            "expected under " + hex.substr(0, 3) + "/" + hex.substr(3, 2) + "/ (the hash's first 3 and next 2 digits)");
    const VllmPathParams pp = vllm_path_params(p);
    const uint32_t bs =
        pick(o.block_tokens, pp.block_size, kVllmDefaultBlockTokens, f.path, "block_size", "--block-tokens");
    const uint32_t bpf = pick(o.blocks_per_file, pp.blocks_per_file, 1, f.path, "blocks_per_file", "--blocks-per-file");
    if (pp.tp && *pp.tp != o.geometry.tp)
        fail(f.path, "tp",
             "the path says tp_" + std::to_string(*pp.tp) + ", the geometry has --tp " + std::to_string(o.geometry.tp));
    f.rank = pp.rank.value_or(0);
    if (f.rank >= o.geometry.tp)
        fail(f.path, "rank", "rank_" + std::to_string(f.rank) + " with --tp " + std::to_string(o.geometry.tp));
    f.key = hex;
    f.block_tokens = uint64_t(bs) * bpf;
    f.tokens = f.block_tokens;
    f.projected_bytes = f.tokens * o.geometry.per_rank_bytes_per_token;
    if (f.size != f.projected_bytes)
        fail(f.path, "size",
             std::to_string(f.size) + " bytes, expected " + std::to_string(f.projected_bytes) + " (" +
                 std::to_string(bpf) + " blocks x " + std::to_string(bs) + " tokens x " +
                 std::to_string(o.geometry.per_rank_bytes_per_token) + " bytes per token per rank of " +
                 o.geometry.model.name + ")");
}

/// LMCache local disk: DIR/FMT@MODEL@WORLD_SIZE@WORKER_ID@CHUNK_HASH[@...].pt, raw KV bytes of one chunk.
void read_lmcache_file(KvFile& f, const fs::path& p, const LayoutOptions& o) {
    const std::string name = p.filename().string();
    const char* want =
        "expected FMT@MODEL@WORLD_SIZE@WORKER_ID@CHUNK_HASH[@DTYPE...].pt (docs/engine_layouts.md), got \"";
    if (name.size() < 4 || name.substr(name.size() - 3) != ".pt") fail(f.path, "name", want + name + "\"");
    std::vector<std::string> parts;
    std::string stem = name.substr(0, name.size() - 3), cur;
    for (char c : stem) {
        if (c == '@') {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    parts.push_back(cur);
    if (parts.size() < 5 || parts[0].empty() || parts[1].empty()) fail(f.path, "name", want + name + "\"");
    const auto world = small_decimal(parts[2]), worker = small_decimal(parts[3]);
    if (!world || *world == 0) fail(f.path, "world_size", "expected a positive integer, got \"" + parts[2] + "\"");
    if (!worker) fail(f.path, "worker_id", "expected a non-negative integer, got \"" + parts[3] + "\"");
    const std::string& hash = parts[4];
    if (!lower_hex(hash[0] == '-' ? hash.substr(1) : hash))
        fail(f.path, "chunk_hash", "expected hex or decimal digits, got \"" + hash + "\"");
    if (*world != o.geometry.tp)
        fail(f.path, "world_size", std::to_string(*world) + ", the geometry has --tp " + std::to_string(o.geometry.tp));
    if (*worker >= *world)
        fail(f.path, "worker_id", std::to_string(*worker) + " with world_size " + std::to_string(*world));
    const uint64_t bpt = o.geometry.per_rank_bytes_per_token;
    const uint32_t chunk = pick(o.block_tokens, std::nullopt, kLmcacheDefaultChunkTokens, f.path, "chunk_size", "");
    if (f.size == 0 || f.size % bpt)
        fail(f.path, "size",
             std::to_string(f.size) + " bytes is not a whole, non-zero number of tokens of " + o.geometry.model.name +
                 " (" + std::to_string(bpt) + " bytes per token per rank)");
    f.tokens = f.size / bpt;
    if (f.tokens > chunk)
        fail(f.path, "size",
             std::to_string(f.size) + " bytes = " + std::to_string(f.tokens) + " tokens, more than a chunk of " +
                 std::to_string(chunk));
    f.key = hash;
    f.rank = *worker;
    f.block_tokens = chunk;
    f.partial = f.tokens < chunk;
    f.projected_bytes = f.tokens * bpt;
}

/// st_ino, st_dev and, where the filesystem answers FS_IOC_GETVERSION, i_generation.
void identify(KvFile& f) {
    struct stat st {};
    if (stat(f.path.c_str(), &st) != 0) throw Error(f.path + ": cannot stat: " + std::strerror(errno));
    f.ino = st.st_ino;
    f.fs_dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    const int fd = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(f.path + ": cannot open: " + std::strerror(errno));
    long gen = 0;  // ext4 writes 32 bits (docs/formats.md, `gen`)
    f.gen_known = ioctl(fd, FS_IOC_GETVERSION, &gen) == 0;
    f.gen = uint32_t(gen);
    close(fd);
}

}  // namespace

LayoutScan scan_layout(const std::string& dir, const LayoutOptions& o) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a directory");
    if (o.geometry.per_rank_bytes_per_token == 0) throw Error(dir + ": the model geometry has 0 bytes per token");
    LayoutScan s;
    fs::recursive_directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const fs::path p = it->path();
        const std::string name = p.filename().string();
        if (o.engine == EngineLayout::VllmFs && name.size() > 4 && name.substr(name.size() - 4) == ".tmp") {
            s.skipped_tmp++;
            continue;
        }
        KvFile f;
        f.path = p.string();
        f.rel = fs::relative(p, dir).string();
        f.size = it->file_size(ec);
        if (ec) break;
        identify(f);
        if (o.engine == EngineLayout::VllmFs)
            read_vllm_file(f, p, o);
        else
            read_lmcache_file(f, p, o);
        s.files.push_back(std::move(f));
    }
    if (ec) throw Error(dir + ": cannot read: " + ec.message());
    std::sort(s.files.begin(), s.files.end(), [](const KvFile& a, const KvFile& b) { return a.rel < b.rel; });
    if (s.files.empty())
        throw Error(dir + ": no " + engine_layout_name(o.engine) + " KV file under it (docs/engine_layouts.md)");
    return s;
}

namespace {

/// One direction's traffic for a file: device commands and syscalls, and the time they span (ns).
struct DirIo {
    uint64_t first = UINT64_MAX, last = 0, cmds = 0, syscalls = 0;
    uint64_t cmd_bytes = 0;  ///< the commands' bytes for this file (its part of a command of several files)
    uint64_t app_bytes = 0;  ///< what the application's syscalls moved (positive returns, or the files table's)
    /// the device bytes the trace summary's files table counted for the file (`--trace-json`), beside the stream's
    uint64_t summary_bytes = 0;
    bool any() const { return cmds + syscalls + app_bytes > 0; }
    void span(uint64_t a, uint64_t b) {
        first = std::min(first, a);
        last = std::max(last, std::max(a, b));
    }
};
struct FileEvents {
    DirIo rd, wr;
};
/// (fs_dev, ino) -> gen -> traffic.
using EventsByFile = std::map<std::pair<std::string, uint64_t>, std::map<uint64_t, FileEvents>>;

/// What the stream held besides the files' traffic.
struct StreamFacts {
    bool parts = false;     ///< some command record carried `files` (each file's bytes of a merged command)
    bool syscalls = false;  ///< some syscall record names a file (traced with --syscalls)
    EventsTally tally;
};

/// One read or write command of `r` that moved `bytes` of the file whose traffic is `fe`.
void add_cmd(FileEvents& fe, const EventRecord& r, uint64_t bytes) {
    DirIo& d = r.io == IoOp::Read ? fe.rd : fe.wr;
    d.cmds++;
    d.cmd_bytes += bytes;
    d.span(r.ts_issue, r.has_field(EventField::TsComplete) ? r.ts_complete : r.ts_issue);
}

/// The events per file.
EventsByFile read_file_events(const std::string& path, StreamFacts* facts) {
    EventsReader rd(path);
    EventRecord r;
    EventsByFile by;
    while (rd.next_checked(r)) {
        if (!r.has_field(EventField::Ino) || !r.has_field(EventField::FsDev)) continue;
        if (r.kind == EventType::Cmd && r.io != IoOp::Read && r.io != IoOp::Write) continue;
        if (r.kind == EventType::Cmd && !r.files.empty()) {  // a command of several files: each its own bytes
            facts->parts = true;
            for (const EventFilePart& p : r.files) add_cmd(by[{std::string(p.fs_dev), p.ino}][p.gen], r, p.bytes);
            continue;
        }
        FileEvents& fe = by[{std::string(r.fs_dev), r.ino}][r.gen];
        if (r.kind == EventType::Cmd) {
            add_cmd(fe, r, r.bytes);
        } else if (r.kind == EventType::Syscall) {
            facts->syscalls = true;
            const bool wr = r.name.find("write") != std::string_view::npos;
            if (!wr && r.name.find("read") == std::string_view::npos) continue;
            DirIo& d = wr ? fe.wr : fe.rd;
            d.syscalls++;
            if (r.ret > 0) d.app_bytes += uint64_t(r.ret);
            d.span(r.ts_enter, r.ts_exit);
        }
    }
    facts->tally = rd.tally();
    return by;
}

/// Adds the application's bytes per file from the `files` table of the kvio.trace/1 summary at `path` (`kvio trace
/// --files --json`) to `by`, for files whose stream had no syscall records. Returns the rows that name a file.
size_t add_app_bytes(EventsByFile& by, const std::string& path, const std::string& events_path,
                     const EventsTally& events) {
    const json t = read_json_file(path);
    const JsonSource src{path, 0};
    if (!t.is_object() || get_string_or(t, "schema", "", src) != "kvio.trace/1")
        throw Error(path + ": field 'schema': expected a kvio.trace/1 summary (`kvio trace --files --json`)");
    check_same_trace(events_path, events.trace_id, path, t);
    auto rows = t.find("files");
    if (rows == t.end() || !rows->is_array())
        src.fail("files", "missing or not an array: trace with `kvio trace --files --json`");
    size_t named = 0;
    for (const json& row : *rows) {
        if (!row.is_object()) src.fail("files", "expected objects");
        if (!row.contains("ino")) continue;  // a --group-by row of several files names none
        FileEvents& fe = by[{get_string(row, "fs_dev", src), get_u64(row, "ino", src)}][get_u64(row, "gen", src)];
        for (auto [dir, d] : {std::pair<const char*, DirIo*>{"read", &fe.rd}, {"write", &fe.wr}})
            if (row.contains(dir)) {
                d->app_bytes = get_u64_or(row[dir], "app_bytes", 0, src);
                d->summary_bytes = get_u64_or(row[dir], "bytes", 0, src);
            }
        named++;
    }
    if (named == 0 && !rows->empty())
        src.fail("files", "its rows are --group-by groups, which name no file: trace without --group-by");
    return named;
}

/// The traffic of `f` in `by`, or nullptr. Without a generation of its own (the filesystem did not answer
/// FS_IOC_GETVERSION), the inode's only one in the stream, which `f` then takes.
const FileEvents* find_events(const EventsByFile& by, KvFile& f, const std::string& events_path) {
    auto it = by.find({f.fs_dev, f.ino});
    if (it == by.end()) return nullptr;
    if (f.gen_known) {
        auto g = it->second.find(f.gen);
        return g == it->second.end() ? nullptr : &g->second;
    }
    if (it->second.size() > 1)
        throw Error(f.path + ": inode " + std::to_string(f.ino) + " has " + std::to_string(it->second.size()) +
                    " generations in " + events_path + " and its filesystem does not say which is this file's");
    f.gen = it->second.begin()->first;
    return &it->second.begin()->second;
}

/// FIEMAP of the whole file, moved to whole-disk offsets; the disk's limits from sysfs (common/devinfo.h).
MappedFile fiemap_file(const KvFile& f) {
    MappedFile m;
    const BlockDevInfo part = block_dev_info_for_path(f.path);
    const BlockDevInfo disk = part.is_partition ? block_dev_info(part.whole_disk) : part;
    m.dev = dev_string(disk.dev);
    m.max_sectors_kb = disk.max_sectors_kb;
    struct statvfs sv {};
    if (statvfs(f.path.c_str(), &sv) == 0 && sv.f_bsize >= 512 && sv.f_bsize <= 65536) m.lba_bytes = sv.f_bsize;
    const int fd = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(f.path + ": cannot open: " + std::strerror(errno));
    try {
        for (const auto& e : workload::file_extents(fd, 0, f.size, f.path))
            m.extents.push_back({part.start_sector * 512 + e.physical, e.length});
    } catch (...) {
        close(fd);
        throw;
    }
    close(fd);
    return m;
}

json op_record(const KvFile& f, size_t id, bool store, const DirIo& d, const MappedFile& m) {
    json ext = json::array();
    for (const auto& [off, len] : m.extents) ext.push_back({off, len});
    return {{"op", store ? "store" : "load"},
            {"object_id", id},
            {"key", f.key},
            {"bytes", checked_round_up(f.projected_bytes, m.lba_bytes).value_or(f.projected_bytes)},
            {"payload_bytes", f.projected_bytes},
            {"file_bytes", f.size},
            {"tokens", f.tokens},
            {"block_tokens", f.block_tokens},
            {"partial", f.partial},
            {"rank", f.rank},
            {"path", f.rel},
            {"ino", f.ino},
            {"fs_dev", f.fs_dev},
            {"gen", f.gen},
            {"dev", m.dev},
            {"dev_off", m.extents.empty() ? 0 : m.extents.front().first},
            {"extents", ext},
            {"device_cmds", d.cmds},
            {"syscalls", d.syscalls},
            {"app_bytes", d.app_bytes},
            {"ts_start", d.first},
            {"ts", d.last}};
}

/// The stream's and the summary's traffic per file; throws when it cannot tell the KV files' loads (docs/
/// engine_layouts.md, "The import").
EventsByFile read_traffic(const ImportOptions& o, StreamFacts* facts) {
    EventsByFile by = read_file_events(o.events_path, facts);
    const EventsTally& t = facts->tally;
    if (t.records == 0)
        throw Error(o.events_path +
                    ": empty: no record (the trace wrote nothing, or the file was cut before its first)");
    const std::string cost = "loads and stores of the KV files may be missing (docs/engine_layouts.md)";
    if (warn_stream_end(o.events_path, t, cost) && !o.accept_partial)
        throw Error(o.events_path + ": no closing summary: the stream is cut; import it anyway with --partial");
    if (!o.trace_json_path.empty()) {
        add_app_bytes(by, o.trace_json_path, o.events_path, t);
    } else if (!facts->syscalls) {
        // A load served by the page cache moves no device byte: without the application's reads it would vanish.
        throw Error(o.events_path +
                    ": field 'name': no syscall record, so a load the page cache served (no device read) cannot be "
                    "seen: give --trace-json T, the `kvio trace --files --json T` of the same trace, or trace with "
                    "--syscalls");
    }
    if (by.empty())
        throw Error(o.events_path + ": field 'ino': none of its " + std::to_string(t.records) +
                    " records names a file (ino, fs_dev): trace with `kvio trace --files --events`");
    return by;
}

}  // namespace

ImportSummary import_engine_layout(const std::string& dir, const ImportOptions& o, std::ostream& out) {
    ImportSummary s;
    s.scan = scan_layout(dir, o.layout);
    StreamFacts facts;
    const EventsByFile by = read_traffic(o, &facts);
    s.events = facts.tally;
    const FileMapper mapper = o.mapper ? o.mapper : FileMapper(fiemap_file);
    std::vector<std::pair<uint64_t, json>> ops;  // by ts_start
    MappedFile first;
    for (size_t i = 0; i < s.scan.files.size(); i++) {
        KvFile& f = s.scan.files[i];
        s.projected_bytes += f.projected_bytes;
        const FileEvents* fe = find_events(by, f, o.events_path);
        if (!fe || (!fe->wr.any() && !fe->rd.any())) {
            s.untouched++;
            continue;
        }
        const MappedFile m = mapper(f);
        if (first.dev.empty()) first = m;
        const uint64_t whole = checked_round_up(f.size, m.lba_bytes).value_or(f.size);
        if (!facts.parts && (fe->wr.cmd_bytes > whole || fe->rd.cmd_bytes > whole)) s.merged++;
        // A direction with no command or syscall record (its bytes from the summary only) has no time: 0.
        auto at = [](const DirIo& d) { return d.first == UINT64_MAX ? uint64_t(0) : d.first; };
        DirIo wr = fe->wr, rd = fe->rd;
        wr.first = at(wr), rd.first = at(rd);
        if (wr.any()) ops.emplace_back(wr.first, op_record(f, i, true, wr, m)), s.stores++;
        if (rd.any()) ops.emplace_back(rd.first, op_record(f, i, false, rd, m)), s.loads++;
        // The summary's table counts at completion as the stream does: a file it holds more device bytes for than
        // the stream is one the stream lost records of (cut, dropped), not a load from the page cache.
        const bool short_wr = wr.summary_bytes > wr.cmd_bytes, short_rd = rd.summary_bytes > rd.cmd_bytes;
        s.short_ops += (wr.any() && short_wr) + (rd.any() && short_rd);
        if (rd.any() && rd.cmds == 0 && !short_rd) s.cached_loads++;
    }
    // Without the summary's table a load with no device read is a cached one only if the stream lost nothing.
    const EventsTally& t = s.events;
    if (s.cached_loads && o.trace_json_path.empty() && (t.dropped || t.lost_completions) && !o.accept_partial)
        throw Error(o.events_path + ": " + std::to_string(s.cached_loads) +
                    " loads have no device read in a stream that lost records (" + std::to_string(t.dropped) +
                    " dropped, " + std::to_string(t.lost_completions) +
                    " completions lost): they may be reads whose records were lost, not loads from the page cache; "
                    "give --trace-json T (the trace's --files --json) to tell them apart, or import anyway with "
                    "--partial");
    if (s.short_ops && !o.accept_partial)
        throw Error(o.events_path + ": " + std::to_string(s.short_ops) +
                    " stores or loads of the KV files have fewer device bytes in the stream than " + o.trace_json_path +
                    "'s files table counted (the stream is cut or lost records): import it anyway with --partial");
    // Another run's events name other inodes: an empty semantic stream would only fail later, in validate.
    if (ops.empty())
        throw Error(o.events_path + ": field 'ino': none of the " + std::to_string(s.scan.files.size()) +
                    " KV files under " + dir +
                    " is in its commands or syscalls: the trace of another run, or of other files");
    std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    json meta = {{"type", "meta"},
                 {"schema", "kvio.semantic/1"},
                 {"source", engine_layout_name(o.layout.engine)},
                 {"engine", "posix"},
                 {"layout", "files"},
                 {"model", o.layout.geometry.model.name},
                 {"geometry", workload::geometry_to_json(o.layout.geometry)},
                 {"dir", dir},
                 {"lba_bytes", first.lba_bytes},
                 {"block_align", first.lba_bytes},
                 {"header_bytes", 0},
                 {"clock", "CLOCK_MONOTONIC"}};
    if (!first.dev.empty()) meta["dev"] = first.dev;
    if (first.max_sectors_kb) meta["max_sectors_kb"] = first.max_sectors_kb;
    out << meta.dump() << "\n";
    for (const auto& [ts, j] : ops) out << j.dump() << "\n";
    return s;
}

}  // namespace kvio::importer
