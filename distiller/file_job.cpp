#include "distiller/file_job.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"

namespace kvio::distiller {

namespace {

bool is_io(SysKind k) { return k == SysKind::Read || k == SysKind::Write; }
bool is_replayed(SysKind k) {
    return k == SysKind::Read || k == SysKind::Write || k == SysKind::Fsync || k == SysKind::Fdatasync ||
           k == SysKind::Fadvise;
}

std::string mib(uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f MiB", double(b) / 1048576.0);
    return s;
}

// "2048k x 40 %, 128 x 10 %": the most common sizes of a call-size histogram, by calls.
std::string sizes_text(const std::map<uint64_t, uint64_t>& h, size_t top = 6) {
    uint64_t n = 0;
    for (const auto& [sz, c] : h) n += c;
    if (!n) return "none";
    std::vector<std::pair<uint64_t, uint64_t>> v(h.begin(), h.end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string s;
    for (size_t i = 0; i < v.size() && i < top; ++i) {
        char b[64];
        if (v[i].first % 1024 == 0)
            std::snprintf(b, sizeof b, "%" PRIu64 "k x %.1f %%", v[i].first / 1024,
                          100.0 * double(v[i].second) / double(n));
        else
            std::snprintf(b, sizeof b, "%" PRIu64 " x %.1f %%", v[i].first, 100.0 * double(v[i].second) / double(n));
        s += (s.empty() ? "" : ", ") + std::string(b);
    }
    if (v.size() > top) s += ", " + std::to_string(v.size() - top) + " more sizes";
    return s + " (" + std::to_string(n) + " calls)";
}

// The most threads inside a kept call at one instant (exits before entries at equal times).
uint32_t max_in_calls(const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
    std::vector<std::pair<uint64_t, int>> ev;
    for (const auto& [a, b] : spans) ev.push_back({a, 1}), ev.push_back({std::max(a, b), -1});
    std::sort(ev.begin(), ev.end());
    int cur = 0, best = 0;
    for (const auto& e : ev) best = std::max(best, cur += e.second);
    return uint32_t(best);
}

// Read uses (runs of reads on one file) after an fadvise of that file, and without one.
void count_read_uses(FileStream& s) {
    for (size_t i = 0; i < s.ops.size(); ++i) {
        const FileOp& o = s.ops[i];
        if (o.kind != FileOp::Kind::Read) continue;
        const FileOp* prev = i ? &s.ops[i - 1] : nullptr;
        if (prev && prev->kind == FileOp::Kind::Read && prev->file == o.file) continue;
        if (prev && prev->kind == FileOp::Kind::Dontneed && prev->file == o.file)
            ++s.reads_after_dontneed;
        else
            ++s.reads_cold;
    }
}

}  // namespace

uint32_t busiest_fs_dev(const std::vector<SyscallRec>& recs) {
    std::map<uint32_t, uint64_t> bytes;
    for (const auto& r : recs)
        if (r.has_file && r.fs_dev && is_io(r.kind) && r.ret > 0) bytes[r.fs_dev] += uint64_t(r.ret);
    uint32_t best = 0;
    uint64_t most = 0;
    for (const auto& [d, b] : bytes)
        if (b > most) best = d, most = b;
    return best;
}

FilePattern derive_file_pattern(const std::vector<SyscallRec>& recs, uint32_t fs_dev) {
    FilePattern p;
    p.fs_dev = fs_dev;
    std::map<std::pair<uint64_t, uint32_t>, uint32_t> file_index;
    std::map<uint32_t, size_t> stream_index;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> stream_bytes;  // tid -> (direct, buffered)
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    uint64_t last_exit = 0;
    bool first = true;
    for (const auto& r : recs) {
        if (!is_replayed(r.kind)) continue;
        if (!r.has_file) {
            if (r.kind != SysKind::Fadvise) ++p.no_identity_calls;
            continue;
        }
        if (r.fs_dev != fs_dev) {
            ++p.other_fs_calls;
            continue;
        }
        if (is_io(r.kind) && r.ret <= 0) continue;  // failed, or end of file: nothing moved
        if (!is_io(r.kind) && r.ret < 0) continue;
        auto key = std::make_pair(r.ino, r.gen);
        auto [fit, fnew] = file_index.try_emplace(key, uint32_t(p.files.size()));
        if (fnew) {
            TracedFile f;
            f.ino = r.ino;
            f.gen = r.gen;
            f.name = "i" + std::to_string(r.ino) + "g" + std::to_string(r.gen);
            f.written_first = r.kind == SysKind::Write;
            p.files.push_back(f);
        }
        TracedFile& f = p.files[fit->second];
        f.size = std::max(f.size, r.file_size);
        auto [sit, snew] = stream_index.try_emplace(r.tid, p.streams.size());
        if (snew) {
            FileStream s;
            s.pid = r.pid;
            s.tid = r.tid;
            s.comm = r.comm;
            p.streams.push_back(s);
        }
        FileStream& s = p.streams[sit->second];
        FileOp op;
        op.file = fit->second;
        op.ts_ns = r.ts_enter;
        // Records come in the order their calls returned: a long call (an fsync) entered before the first record's
        // call and returned after it, so the clock starts at the earliest entry, not the first record's.
        p.t0_ns = first ? r.ts_enter : std::min(p.t0_ns, r.ts_enter);
        first = false;
        last_exit = std::max(last_exit, r.ts_exit);
        switch (r.kind) {
            case SysKind::Read:
            case SysKind::Write: {
                const uint64_t n = uint64_t(r.ret);
                const bool rd = r.kind == SysKind::Read;
                op.kind = rd ? FileOp::Kind::Read : FileOp::Kind::Write;
                op.offset = r.offset;
                op.len = n;
                f.size = std::max(f.size, r.offset + n);
                (rd ? f.read_bytes : f.written_bytes) += n;
                (rd ? p.read_sizes : p.write_sizes)[n]++;
                uint64_t& total = r.direct ? (rd ? p.direct_read_bytes : p.direct_write_bytes)
                                           : (rd ? p.buffered_read_bytes : p.buffered_write_bytes);
                total += n;
                (r.direct ? stream_bytes[r.tid].first : stream_bytes[r.tid].second) += n;
                spans.push_back({r.ts_enter, r.ts_exit});
                break;
            }
            case SysKind::Fsync:
                op.kind = FileOp::Kind::Sync;
                ++p.fsyncs;
                spans.push_back({r.ts_enter, r.ts_exit});
                break;
            case SysKind::Fdatasync:
                op.kind = FileOp::Kind::Datasync;
                ++p.fdatasyncs;
                spans.push_back({r.ts_enter, r.ts_exit});
                break;
            default:  // Fadvise: its advice is not recorded; the workloads kvio traces drop the cache (DONTNEED)
                op.kind = FileOp::Kind::Dontneed;
                ++p.dontneeds;
                break;
        }
        s.ops.push_back(op);
    }
    if (!first) p.span_ns = last_exit > p.t0_ns ? last_exit - p.t0_ns : 0;
    p.max_threads_in_calls = max_in_calls(spans);
    p.fadvise_only_threads = std::erase_if(p.streams, [](const FileStream& s) {
        return std::all_of(s.ops.begin(), s.ops.end(),
                           [](const FileOp& o) { return o.kind == FileOp::Kind::Dontneed; });
    });
    for (auto& s : p.streams) {
        const auto [d, b] = stream_bytes[s.tid];
        s.direct = d > b;
        s.mixed_bytes = s.direct ? b : d;
        count_read_uses(s);
    }
    return p;
}

namespace {

std::string section_name(const FileJobOptions& o, const FileStream& s) {
    return o.job_name + "-t" + std::to_string(s.tid);
}

// A stream's iolog (v2) paced on one clock: before each call whose traced entry falls in a later millisecond than
// the previous wait's, a `wait` to that millisecond (from the trace's first call). fio 3.33 reads a v2 `wait` as an
// absolute time in ms since it started its threads (docs/distill.md, "Pacing the file level"), so a thread
// starts when it did in the trace, one that fell behind (a call slower than traced) catches up at its next wait, and
// the threads' calls meet as they did. A file is opened at its first op and closed when the stream turns to another
// file; an fadvise closes and reopens it (invalidate=1 drops its page cache at the open, as the traced DONTNEED did).
std::string stream_iolog(const FilePattern& p, const FileStream& s, const std::string& dir) {
    std::ostringstream os;
    os << "fio version 2 iolog\n";
    auto path = [&](uint32_t f) { return dir + "/" + p.files[f].name; };
    std::set<uint32_t> added;
    for (const auto& o : s.ops)
        if (added.insert(o.file).second) os << path(o.file) << " add\n";
    long open = -1;
    uint64_t waited_ms = 0;  // fio sleeps only while the elapsed ms are below the wait's: a wait of 0 is never needed
    auto reopen = [&](uint32_t f) {
        if (open >= 0) os << path(uint32_t(open)) << " close\n";
        os << path(f) << " open\n";
        open = long(f);
    };
    for (const auto& o : s.ops) {
        const uint64_t ms = (o.ts_ns - p.t0_ns) / 1000000;
        if (ms > waited_ms) {
            os << path(o.file) << " wait " << ms << " 0\n";
            waited_ms = ms;
        }
        if (o.kind == FileOp::Kind::Dontneed) {
            reopen(o.file);
            continue;
        }
        if (open != long(o.file)) reopen(o.file);
        switch (o.kind) {
            case FileOp::Kind::Read:
                os << path(o.file) << " read " << o.offset << ' ' << o.len << '\n';
                break;
            case FileOp::Kind::Write: {
                // Buffered: widened to whole pages. The same pages are dirtied, and none is read first: the traced
                // writes went into a new file (a 128-byte header, then 2 MiB from byte 128), the replay's into a
                // laid-out one whose page cache the open dropped, where a partial page is read before it is changed.
                const uint64_t lo = s.direct ? o.offset : o.offset / 4096 * 4096;
                const uint64_t hi = s.direct ? o.offset + o.len : (o.offset + o.len + 4095) / 4096 * 4096;
                os << path(o.file) << " write " << lo << ' ' << hi - lo << '\n';
                break;
            }
            case FileOp::Kind::Sync:
                os << path(o.file) << " sync 0 0\n";
                break;
            case FileOp::Kind::Datasync:
                os << path(o.file) << " datasync 0 0\n";
                break;
            default:
                break;
        }
    }
    if (open >= 0) os << path(uint32_t(open)) << " close\n";
    return os.str();
}

// A file the trace reads and did not make: written whole by the layout. One it made (its first call a write) and
// read is only created at its size, sparse, by the layout's script: the replay's writes then allocate its blocks.
bool laid_out_whole(const TracedFile& f) { return f.read_bytes && f.size && !f.written_first; }
bool laid_out_sparse(const TracedFile& f) { return f.read_bytes && f.size && f.written_first; }

// The scratch file a layout of sparse files only writes, so that its section has I/O.
constexpr const char* kLayoutStamp = "kvio-layout.stamp";

// The layout log (v2: no timing): every file laid_out_whole, written whole in 1 MiB calls and synced; one 4 KiB page
// of the stamp file when there is none.
std::string layout_iolog(const FilePattern& p, const std::string& dir, uint64_t& bytes) {
    std::ostringstream os;
    os << "fio version 2 iolog\n";
    constexpr uint64_t kChunk = 1 << 20;
    if (std::none_of(p.files.begin(), p.files.end(), laid_out_whole)) {
        const std::string path = dir + "/" + kLayoutStamp;
        os << path << " add\n" << path << " open\n" << path << " write 0 4096\n" << path << " close\n";
    }
    for (const auto& f : p.files) {
        if (!laid_out_whole(f)) continue;
        const std::string path = dir + "/" + f.name;
        os << path << " add\n" << path << " open\n";
        for (uint64_t off = 0; off < f.size; off += kChunk)
            os << path << " write " << off << ' ' << std::min(kChunk, f.size - off) << '\n';
        bytes += f.size;
        os << path << " sync 0 0\n" << path << " close\n";
    }
    return os.str();
}

std::string header_text(const FilePattern& p, const FileJobOptions& o, size_t laid_out) {
    std::ostringstream h;
    char b[256];
    h << "; kvio distill --level file: the application's own file I/O, reissued on a filesystem\n";
    for (const auto& l : o.header) h << "; " << l << '\n';
    std::snprintf(b, sizeof b, "; traced filesystem dev %u:%u: %zu files, %zu threads, %.3f s", p.fs_dev >> 20,
                  p.fs_dev & 0xfffff, p.files.size(), p.streams.size(), double(p.span_ns) / 1e9);
    h << b << '\n';
    h << "; app bytes: buffered read " << mib(p.buffered_read_bytes) << ", write " << mib(p.buffered_write_bytes)
      << "; direct read " << mib(p.direct_read_bytes) << ", write " << mib(p.direct_write_bytes) << '\n';
    h << "; read calls: " << sizes_text(p.read_sizes) << '\n';
    h << "; write calls: " << sizes_text(p.write_sizes) << '\n';
    h << "; fsync " << p.fsyncs << ", fdatasync " << p.fdatasyncs << ", fadvise " << p.dontneeds << "; at most "
      << p.max_threads_in_calls << " threads inside I/O calls at once\n";
    h << "; files: " << o.directory << "/i<ino>g<gen> (the traced inode and its generation); " << laid_out
      << " of them are read by the trace and made by section 'layout' first (whole, or sparse when the trace\n"
         ";   made them)\n"
         ";   the replay's buffered writes are widened to whole 4 KiB pages: the same pages are dirtied, and\n"
         ";   none is read back first (a partial page of a laid-out file whose cache the open dropped would be)\n";
    h << "; each thread is a section replaying its calls from an iolog v2 on the trace's clock: a `wait` before a\n"
         ";   call is its traced time in ms since the trace's first call (fio 3.33 waits until that long after it\n"
         ";   started the threads), so a thread starts when it did and one that fell behind catches up; a file is\n"
         ";   opened at its first call and closed when the thread turns to another; an fadvise is a close and\n"
         ";   reopen, and invalidate=1 drops the file's page cache at the open (fadvise's advice is not recorded)\n";
    h << "; NOT reproduced: metadata calls (open flags, fallocate, unlink, stat, rename) and their journal\n"
         ";   traffic beyond what the replayed calls cause; a file the trace made and read exists from the\n"
         ";   start (sparse, at its size: written into, not extended); mmap, io_uring, other\n"
         ";   processes' I/O; the page cache and the filesystem's state (free space, fragmentation) at the start\n";
    if (p.no_identity_calls || p.other_fs_calls)
        h << "; left out: " << p.no_identity_calls << " calls without file identity, " << p.other_fs_calls
          << " calls on other filesystems\n";
    if (p.fadvise_only_threads)
        h << "; left out: " << p.fadvise_only_threads
          << " thread(s) whose only calls were fadvise (fio refuses an iolog without I/O); the readers'\n"
             ";   invalidate=1 drops the page cache at their open instead\n";
    h << "; run: fio --section=layout JOB (once), then fio JOB with every other section (fio --section=NAME for\n"
         ";   each): the waits count from fio's start, so a layout in the same run would eat into the first ones\n";
    return h.str();
}

// The layout's script (fio's exec_prerun, sh): each laid_out_sparse file created empty and set to its size.
std::string sparse_script(const FilePattern& p, const std::string& dir) {
    std::ostringstream os;
    os << "# kvio distill --level file: the files the trace made and read, created sparse at their size\nset -e\n";
    for (const auto& f : p.files)
        if (laid_out_sparse(f)) os << "truncate -s " << f.size << " '" << dir << "/" << f.name << "'\n";
    return os.str();
}

}  // namespace

FileJob make_file_job(const FilePattern& p, const FileJobOptions& o) {
    if (p.streams.empty())
        throw Error("distill --level file: no read, write or sync call with file identity on the traced filesystem");
    if (o.directory.empty() || o.directory.front() != '/' || o.directory.find_first_of(" \t\n") != std::string::npos)
        throw Error("distill --level file: the directory '" + o.directory +
                    "' must be absolute and without whitespace (fio's iolog names files by absolute path)");
    FileJob j;
    uint64_t laid_bytes = 0;
    const std::string layout = layout_iolog(p, o.directory, laid_bytes);
    size_t laid_out = 0, sparse = 0;
    for (const auto& f : p.files) {
        laid_out += laid_out_whole(f), sparse += laid_out_sparse(f);
        j.needs_bytes += (f.size + 4095) / 4096 * 4096;
    }
    if (sparse && !laid_out) j.needs_bytes += 4096;  // the stamp
    std::ostringstream t;
    t << header_text(p, o, laid_out + sparse);
    t << "\n[global]\nioengine=psync\n; the traced calls move buffered data at unaligned offsets (a 128-byte header)\n"
         "bs_unaligned=1\nfallocate=none\n"
         "; no posix_fadvise of fio's own (its default hints SEQUENTIAL or RANDOM and changes readahead): the\n"
         ";   application gave none but DONTNEED\nfadvise_hint=0\n";
    if (laid_out || sparse) {
        j.layout_section = "layout";
        j.iologs.push_back({o.iolog_prefix + "layout.iolog", layout});
        t << "\n; the files the trace reads and did not make, written whole before the replay (" << mib(laid_bytes)
          << ")\n[layout]\n"
          << "read_iolog=" << o.iolog_prefix << "layout.iolog\ndirect=0\nreplay_no_stall=1\n";
        if (sparse) {
            j.iologs.push_back({o.iolog_prefix + "layout.sh", sparse_script(p, o.directory)});
            t << "; the " << sparse
              << " files the trace made and read, created sparse at their size (their blocks are\n"
              << ";   allocated by the replayed writes, as by the traced ones)\nexec_prerun=sh " << o.iolog_prefix
              << "layout.sh\n";
        }
    }
    bool first = true;
    for (const auto& s : p.streams) {
        const std::string name = section_name(o, s);
        j.replay_sections.push_back(name);
        j.iologs.push_back({o.iolog_prefix + name + ".iolog", stream_iolog(p, s, o.directory)});
        size_t r = 0, w = 0;
        for (const auto& op : s.ops) r += op.kind == FileOp::Kind::Read, w += op.kind == FileOp::Kind::Write;
        t << "\n; thread " << s.tid << " (" << s.comm << ", pid " << s.pid << "): " << r << " reads, " << w
          << " writes; its read uses: " << s.reads_after_dontneed << " after fadvise, " << s.reads_cold << " without\n";
        t << "[" << name << "]\n";
        if (first && laid_out) t << "stonewall\n";
        first = false;
        t << "read_iolog=" << o.iolog_prefix << name << ".iolog\n";
        t << "direct=" << (s.direct ? 1 : 0) << "   ; " << (s.direct ? "O_DIRECT" : "buffered") << " as traced";
        if (s.mixed_bytes) t << " (" << mib(s.mixed_bytes) << " moved the other way, replayed this way)";
        t << "\ninvalidate=" << (s.reads_after_dontneed >= s.reads_cold ? 1 : 0)
          << "   ; 1: its reads followed fadvise, so each open drops the file's page cache\n";
    }
    j.text = t.str();
    return j;
}

}  // namespace kvio::distiller
