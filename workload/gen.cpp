#include "workload/gen.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <ostream>

#include "common/error.h"
#include "common/histogram.h"
#include "common/jsonl.h"
#include "workload/created_target.h"
#include "workload/engine.h"
#include "workload/execute.h"
#include "workload/semantic.h"

namespace kvio::workload {

double OpStats::mb_per_s() const {
    if (last_end <= first_start) return 0;
    return double(bytes) / (double(last_end - first_start) / 1e9) / 1e6;
}

uint64_t percentile(const std::vector<uint64_t>& v, double p) {
    if (v.empty()) return 0;
    size_t rank = size_t(p / 100.0 * double(v.size()) + 0.999999);
    return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

void check_engine_target(const std::string& engine, const TargetInfo& t) {
    if (engine == "uring_cmd" && t.kind != TargetKind::NvmeChar)
        throw Error("engine uring_cmd needs an NVMe generic char device /dev/ngXnY as --target, but " + t.path +
                    " is " + target_kind_phrase(t.kind) + "; use --engine posix or io_uring");
    if (engine != "uring_cmd" && t.kind == TargetKind::NvmeChar)
        throw Error(t.path + " is an NVMe generic char device: only --engine uring_cmd can drive it (or use /dev/" +
                    t.dev.name + ")");
}

void preallocate(const std::string& path, uint64_t need) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    int r = ::fallocate(fd, 0, 0, off_t(need));
    int e = errno;
    ::close(fd);
    if (r != 0)
        throw Error("fallocate of " + std::to_string(need) + " bytes on " + path + " failed: " + std::strerror(e));
}

Layout resolve_layout(std::optional<Layout> asked, const TargetInfo& t) {
    Layout layout = asked.value_or(t.kind == TargetKind::Directory ? Layout::Files : Layout::Slots);
    if (layout == Layout::Files && t.kind != TargetKind::Directory)
        throw Error("--layout files needs a directory as --target, but " + t.path + " is " +
                    target_kind_phrase(t.kind) + ".");
    if (layout == Layout::Slots && t.kind == TargetKind::Directory)
        throw Error("--layout slots needs a block device or a regular file as --target, but " + t.path +
                    " is a directory.");
    return layout;
}

uint64_t files_layout_room(const TargetInfo& t, uint64_t nobj) {
    uint64_t room = t.capacity_bytes;
    for (uint64_t i = 0; i < nobj; ++i) {
        struct stat st {};
        if (::lstat((t.path + "/" + object_file_name(i)).c_str(), &st) == 0 && S_ISREG(st.st_mode))
            room += uint64_t(st.st_blocks) * 512;
    }
    return room;
}

namespace {

/// `rec` with only the ops whose trace_id is in `done`; objects left without an op are dropped.
Record completed_part(const Record& rec, const std::vector<uint32_t>& done) {
    std::vector<uint32_t> ids = done;
    std::sort(ids.begin(), ids.end());
    Record out = rec;
    out.objects.clear();
    for (const auto& ob : rec.objects) {
        RecordObject o = ob;
        o.ops.clear();
        for (const auto& op : ob.ops)
            if (std::binary_search(ids.begin(), ids.end(), op.trace_id)) o.ops.push_back(op);
        if (!o.ops.empty()) out.objects.push_back(std::move(o));
    }
    return out;
}

}  // namespace

GenSummary run_gen(const GenOptions& o) {
    GenSummary s;
    CreatedTarget created(o.target, o.layout == Layout::Files);
    TargetInfo t = inspect_target(o.target);
    check_engine_target(o.engine, t);
    const Layout layout = resolve_layout(o.layout, t);
    check_device_safe(t, o.force);
    if (!o.semantic_path.empty()) check_offset_mappable(t);
    if (o.num_chunks == 0) throw Error("--num-chunks must be at least 1");

    DeviceGeometry d;
    d.engine = o.engine;
    d.layout = layout;
    d.lba_bytes = t.lba_bytes;
    d.mdts_bytes = t.mdts_bytes;
    d.block_align = o.block_align;
    d.max_io_bytes = o.max_io_bytes ? o.max_io_bytes : default_max_io(t, o.engine == "uring_cmd");
    if (d.max_io_bytes % d.lba_bytes)
        throw Error("--max-io " + std::to_string(d.max_io_bytes) + " is not a multiple of the LBA size " +
                    std::to_string(d.lba_bytes));
    if (o.engine == "uring_cmd" && d.mdts_bytes && d.max_io_bytes > d.mdts_bytes)
        throw Error("--max-io " + std::to_string(d.max_io_bytes) + " exceeds MDTS (" + std::to_string(d.mdts_bytes) +
                    " bytes): the kernel does not split NVMe passthrough commands");
    compute_layout(d, o.geometry.per_rank_bytes);
    if (d.header_bytes > d.max_io_bytes)
        throw Error("--block-align " + std::to_string(d.block_align) + " exceeds the transfer cap " +
                    std::to_string(d.max_io_bytes));
    const uint64_t nobj = o.num_chunks * o.geometry.objects_per_chunk;
    const uint64_t need = layout == Layout::Slots ? slot_offset(d, nobj) : nobj * d.io_bytes;
    if (t.kind == TargetKind::RegularFile && t.capacity_bytes < need) {
        preallocate(o.target, need);
        t.capacity_bytes = need;
    }
    const uint64_t room = layout == Layout::Files ? files_layout_room(t, nobj) : t.capacity_bytes;
    if (need > room)
        throw Error(o.target + " has room for " + std::to_string(room) + " bytes" +
                    (room > t.capacity_bytes
                         ? " (" + std::to_string(t.capacity_bytes) + " free + " +
                               std::to_string(room - t.capacity_bytes) + " in object files it rewrites)"
                         : "") +
                    " but " + std::to_string(nobj) + " objects need " + std::to_string(need) + " (lower --num-chunks)");
    d.capacity_bytes = t.capacity_bytes;

    AccessPattern a;
    a.pattern = o.pattern;
    a.iters = o.iters;
    a.qd = o.qd;
    a.num_chunks = o.num_chunks;
    a.buffered = o.buffered;
    Record rec = make_record(o.geometry, d, a);
    RunOptions ro;
    ro.semantic_path = o.semantic_path;
    ro.progress = o.progress;
    ro.verify = o.verify;
    ro.stop = o.stop;
    ro.cut = o.cut;
    created.keep();  // from here on bytes are written: the target holds the run's objects
    s = run_record(rec, t, ro);
    if (!o.record_path.empty())
        write_json_file(o.record_path, record_to_json(s.stopped_by ? completed_part(rec, s.done_trace_ids) : rec));
    return s;
}

GenSummary run_record(const Record& rec, const TargetInfo& t, const RunOptions& o) {
    return run_ops(plan_ops(rec), rec, t, o);
}

GenSummary run_ops(const std::vector<ObjectOp>& ops, const Record& rec, const TargetInfo& t, const RunOptions& o) {
    GenSummary s;
    const DeviceGeometry& d = rec.device;
    const Layout layout = d.layout;

    EngineConfig ec;
    ec.name = d.engine;
    ec.qd = rec.access.qd;
    ec.buffered = rec.access.buffered;
    ec.lba_bytes = d.lba_bytes;
    std::unique_ptr<Engine> engine = make_engine(ec);

    std::unique_ptr<SemanticWriter> sem;
    if (!o.semantic_path.empty()) {
        sem = std::make_unique<SemanticWriter>(o.semantic_path);
        nlohmann::ordered_json meta = semantic_meta(rec, t, o.verify);
        for (const auto& [k, v] : o.meta_extra.items()) meta[k] = v;
        sem->write(meta);
    }

    std::vector<uint64_t> lat[2];
    uint64_t done_bytes = 0, last_progress = 0;
    const uint64_t t0 = monotonic_ns();
    ExecOptions eo;
    eo.max_io_bytes = d.max_io_bytes;
    eo.qd = rec.access.qd;
    eo.verify = o.verify;
    eo.stop = o.stop;
    eo.cut = o.cut;
    eo.not_before = o.not_before;
    s.ops_planned = ops.size();
    eo.on_done = [&](size_t idx, const ObjectOp& op, OpResult& r, int fd) {
        s.done_trace_ids.push_back(op.trace_id);
        OpStats& st = op.op == OpKind::Store ? s.store : s.load;
        ++st.ops;
        st.bytes += r.bytes;
        if (!st.first_start || r.ts_start < st.first_start) st.first_start = r.ts_start;
        st.last_end = std::max(st.last_end, r.ts);
        lat[op.op == OpKind::Store ? 0 : 1].push_back(r.ts - r.ts_start);
        if (sem) {
            std::vector<std::pair<uint64_t, uint64_t>> ext;
            uint64_t off = op.offset, len = op.header_bytes + op.io_bytes;
            try {
                ext = device_extents(t, fd, off, len, layout == Layout::Files ? t.path + "/" + op.file : t.path);
            } catch (const Error& e) {
                if (r.error.empty()) r.error = e.what();
            }
            sem->write(semantic_op(op, r, t, d.engine, ext));
        }
        if (o.on_done) o.on_done(idx, op, r);
        if (!r.error.empty()) {
            ++st.errors;
            if (s.first_error.empty())
                s.first_error =
                    std::string(op_name(op.op)) + " of object " + std::to_string(op.object_id) + ": " + r.error;
        }
        done_bytes += r.bytes;
        uint64_t now = r.ts;
        if (o.progress && now - std::max(last_progress, t0) >= 1000000000ull) {
            last_progress = now;
            double secs = double(now - t0) / 1e9;
            *o.progress << o.label << ": " << idx + 1 << "/" << ops.size() << " ops, " << done_bytes / 1000000
                        << " MB, " << uint64_t(double(done_bytes) / secs / 1e6) << " MB/s" << std::endl;
        }
    };
    const std::vector<OpResult> results = execute(ops, *engine, t.path, layout, eo);
    for (const OpResult& r : results) s.cut_ops += r.ts_start && !r.ts;
    if (s.done_trace_ids.size() < ops.size() && o.stop && *o.stop) s.stopped_by = int(*o.stop);
    s.elapsed_ns = monotonic_ns() - t0;
    {
        uint64_t first = UINT64_MAX, last = 0;
        for (const OpStats* st : {&s.store, &s.load})
            if (st->ops) first = std::min(first, st->first_start), last = std::max(last, st->last_end);
        s.io_ns = last > first && first != UINT64_MAX ? last - first : 0;
    }
    if (sem) sem->close();

    for (int k = 0; k < 2; ++k) {
        OpStats& st = k == 0 ? s.store : s.load;
        std::sort(lat[k].begin(), lat[k].end());
        st.p50_ns = percentile(lat[k], 50);
        st.p99_ns = percentile(lat[k], 99);
        st.max_ns = lat[k].empty() ? 0 : lat[k].back();
    }
    s.target = t;
    s.device = d;
    return s;
}

void print_summary(std::ostream& os, const GenOptions& o, const GenSummary& s) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "kvio gen: %s on %s (%s, engine %s%s, layout %s), object %llu B, transfer cap %llu B, qd %u\n",
                  o.geometry.model.name.c_str(), o.target.c_str(), s.target.dev.whole_disk_name.c_str(),
                  o.engine.c_str(), o.buffered ? " buffered" : (o.engine == "uring_cmd" ? "" : " O_DIRECT"),
                  layout_name(s.device.layout), (unsigned long long)o.geometry.per_rank_bytes,
                  (unsigned long long)s.device.max_io_bytes, o.qd);
    os << line;
    for (int k = 0; k < 2; ++k) {
        const OpStats& st = k == 0 ? s.store : s.load;
        std::snprintf(line, sizeof line,
                      "  %-5s %6llu objects %14llu bytes %9.1f MB/s  latency p50 %.3f ms  p99 %.3f ms%s\n",
                      k == 0 ? "store" : "load", (unsigned long long)st.ops, (unsigned long long)st.bytes,
                      st.mb_per_s(), double(st.p50_ns) / 1e6, double(st.p99_ns) / 1e6,
                      st.errors ? ("  ERRORS " + std::to_string(st.errors)).c_str() : "");
        os << line;
    }
    uint64_t total = s.store.bytes + s.load.bytes;
    std::snprintf(
        line, sizeof line,
        "  total %llu bytes in %.3f s = %.1f MB/s (first op start to last op end; setup+teardown %.1f ms not counted); "
        "loads verified against the pattern: %s (%s)\n",
        (unsigned long long)total, double(s.io_ns) / 1e9, s.io_ns ? double(total) / (double(s.io_ns) / 1e9) / 1e6 : 0.0,
        s.elapsed_ns > s.io_ns ? double(s.elapsed_ns - s.io_ns) / 1e6 : 0.0,
        !s.first_error.empty() ? "FAILED"
        : s.load.ops           ? "ok"
                               : "none (no load completed)",
        o.verify == Verify::Full ? "verify full: every byte" : "verify stamps: 32 B of every 4 KiB");
    os << line;
    if (s.stopped_by)
        os << "  stopped by signal " << s.stopped_by << " (" << strsignal(s.stopped_by) << ") after "
           << s.done_trace_ids.size() << " of " << s.ops_planned << " ops: "
           << (s.cut_ops ? std::to_string(s.cut_ops) +
                               " ops in flight were given up at a second signal (their "
                               "transfers in flight ended first)"
                         : std::string("the ops in flight were completed"))
           << " and none was started after them; --semantic and --record hold the completed ops\n";
}

}  // namespace kvio::workload
