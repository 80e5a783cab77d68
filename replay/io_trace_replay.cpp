#include "replay/io_trace_replay.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "common/checked_math.h"
#include "common/error.h"
#include "replay/safety.h"
#include "replay/target_room.h"
#include "workload/created_target.h"

namespace kvio::replay {

namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Lateness of each started op against the schedule (workload::ExecOptions::not_before): the anchor is the least
// start - offset (the first op's, which starts when the run can), so the delay before the first op is not lateness.
void late_against_schedule(const std::vector<uint64_t>& due_ns, const std::vector<uint64_t>& started,
                           IoTraceReplayResult& r) {
    uint64_t anchor = UINT64_MAX;
    for (size_t i = 0; i < started.size(); ++i)
        if (started[i]) anchor = std::min(anchor, started[i] - std::min(started[i], due_ns[i]));
    for (size_t i = 0; i < started.size(); ++i) {
        if (!started[i] || started[i] <= anchor + due_ns[i]) continue;
        const uint64_t late = started[i] - anchor - due_ns[i];
        r.late_ns_max = std::max(r.late_ns_max, late);
        r.late_ops_1ms += late > 1000000;
    }
}

}  // namespace

uint8_t parse_tiers(const std::string& s) {
    uint8_t m = 0;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) {
        if (item.rfind("Tier-", 0) == 0) item = item.substr(5);
        if (item != "0" && item != "1" && item != "2" && item != "3")
            throw Error(
                "--tiers " + s +
                ": expected a comma list of 0, 1, 2, 3 (Tier-0 GPU, Tier-1 CPU, Tier-2 storage, Tier-3 remote)");
        m |= uint8_t(1u << (item[0] - '0'));
    }
    if (!m) throw Error("--tiers " + s + ": expected a comma list of 0, 1, 2, 3");
    return m;
}

IoTracePlan plan_io_trace(const IoTrace& trace, uint8_t tiers, const workload::DeviceGeometry& d,
                          const Timing& timing) {
    IoTracePlan p;
    const bool slots = d.layout == workload::Layout::Slots;
    const uint64_t lba = d.lba_bytes ? d.lba_bytes : 512, align = std::max<uint64_t>(d.block_align, lba);
    // Pass 1: which keys are written, each one's largest Write (its slot size), in order of first Write.
    constexpr uint64_t kNone = UINT64_MAX;
    std::vector<uint64_t> object_of(trace.keys.size(), kNone), largest;
    for (const auto& r : trace.rows) {
        if (!(tiers >> r.tier & 1) || !r.write) continue;
        uint64_t& id = object_of[r.key];
        if (id == kNone) {
            id = largest.size();
            largest.push_back(0);
        }
        largest[id] = std::max(largest[id], r.bytes);
    }
    p.objects = largest.size();
    uint64_t off = slots ? d.data_base : 0;
    for (uint64_t id = 0; id < p.objects; ++id) {
        const uint64_t bytes =
            slots ? round_up(d.header_bytes + round_up(largest[id], lba), align) : round_up(largest[id], lba);
        p.largest_payload = std::max(p.largest_payload, largest[id]);
        if (slots) p.slots.push_back({off, bytes});
        auto end = checked_add(off, bytes);
        if (!end) throw Error(trace.path + ": the trace's objects need more than 2^64 bytes");
        off = *end;
    }
    p.need_bytes = off;
    // Pass 2: the ops. A load reads what the key's latest store wrote.
    std::vector<uint64_t> stored(p.objects, 0);
    uint64_t first_ts = 0, last_ts = 0;
    for (const auto& r : trace.rows) {
        if (!(tiers >> r.tier & 1)) {
            ++p.rows_other_tiers;
            continue;
        }
        const uint64_t id = object_of[r.key];
        if (!r.write && (id == kNone || stored[id] == 0)) {
            ++p.reads_never_written;
            continue;
        }
        workload::ObjectOp op;
        op.op = r.write ? workload::OpKind::Store : workload::OpKind::Load;
        op.object_id = id;
        op.trace_id = uint32_t(p.ops.size() + 1);
        op.key = trace.keys[r.key];
        if (r.write)
            stored[id] = r.bytes;
        else if (r.bytes != stored[id])
            ++p.reads_resized;
        op.payload_bytes = stored[id];
        op.io_bytes = round_up(op.payload_bytes, lba);
        if (slots) {
            op.header_bytes = r.write ? d.header_bytes : 0;
            op.offset = p.slots[id].first + (r.write ? 0 : d.header_bytes);
        } else {
            op.file = workload::object_file_name(id);
        }
        if (p.ops.empty()) first_ts = r.ts_ns;
        last_ts = std::max(last_ts, r.ts_ns);
        p.due_ns.push_back(scheduled_ns(r.ts_ns, first_ts, timing));
        p.phase.push_back(r.phase);
        p.rows.push_back(r.line);
        p.ops.push_back(std::move(op));
        if (p.ops.size() == UINT32_MAX) throw Error(trace.path + ": more than 2^32 - 1 ops to replay");
    }
    p.span_ns = last_ts > first_ts ? last_ts - first_ts : 0;
    return p;
}

IoTraceReplayResult replay_io_trace(const IoTraceReplayOptions& o) {
    IoTraceReplayResult r;
    const IoTrace trace = read_io_trace(o.io_trace);
    // A --target that does not exist becomes a regular file (slots), sized below to what the plan needs; removed
    // again if the replay is refused before it writes.
    workload::CreatedTarget created(o.target, false);
    if (created.created()) r.notes.push_back("target " + o.target + " did not exist: created as a regular file");
    workload::TargetInfo t = workload::inspect_target(o.target);
    workload::check_engine_target(o.engine, t);
    const workload::Layout layout = workload::resolve_layout(std::nullopt, t);
    {
        CheckComm comm;  // the check reads the first MiB
        workload::check_device_safe(t, o.force);
    }
    if (!o.semantic_path.empty()) workload::check_offset_mappable(t);

    workload::DeviceGeometry& d = r.device;
    d.engine = o.engine;
    d.layout = layout;
    d.lba_bytes = t.lba_bytes;
    d.mdts_bytes = t.mdts_bytes;
    d.block_align = uint32_t(round_up(4096, t.lba_bytes));
    d.max_io_bytes = o.max_io_bytes ? o.max_io_bytes : workload::default_max_io(t, o.engine == "uring_cmd");
    d.max_io_bytes -= d.max_io_bytes % d.lba_bytes;
    if (d.max_io_bytes == 0)
        throw Error("--max-io must be at least the target's LBA size " + std::to_string(d.lba_bytes));
    workload::compute_layout(d, d.lba_bytes);  // header_bytes, data_base
    if (d.header_bytes > d.max_io_bytes)
        throw Error("the slot header (" + std::to_string(d.header_bytes) + " bytes) exceeds the transfer cap " +
                    std::to_string(d.max_io_bytes));
    r.plan = plan_io_trace(trace, o.tiers, d, o.timing);
    const IoTracePlan& p = r.plan;
    if (p.ops.empty())
        throw Error(o.io_trace + ": no operation to replay (" + std::to_string(trace.rows.size()) + " rows, " +
                    std::to_string(p.rows_other_tiers) + " of other tiers than --tiers, " +
                    std::to_string(p.reads_never_written) + " reads of keys never written)");
    workload::compute_layout(d, p.largest_payload);  // meta io_bytes / slot_bytes: the largest object's
    r.checked_bytes = prepare_object_target(t, layout, p.need_bytes, p.objects, p.slots, o.force,
                                            "the trace's " + std::to_string(p.objects) + " objects", r.notes);
    d.capacity_bytes = t.capacity_bytes;

    workload::Record rec;
    rec.geometry.model.name = "io-trace";
    rec.device = d;
    rec.access.pattern = "io-trace";
    rec.access.qd = o.qd;
    rec.access.num_chunks = p.objects;

    std::vector<uint64_t> lat[3][2];
    std::vector<uint64_t> started(p.ops.size(), 0);  // per op: ts_start, for the lateness against the schedule
    workload::RunOptions ro;
    ro.semantic_path = o.semantic_path;
    ro.progress = o.progress;
    ro.label = "kvio replay";
    ro.stop = o.stop;
    ro.meta_extra = {{"source", "mlperf-io-trace"}, {"io_trace", o.io_trace}, {"timing", timing_name(o.timing)}};
    ro.on_done = [&](size_t idx, const workload::ObjectOp& op, const workload::OpResult& res) {
        const int k = op.op == workload::OpKind::Store ? 0 : 1;
        PhaseStats& ps = r.phases[size_t(p.phase[idx])][k];
        ++ps.ops;
        ps.bytes += res.bytes;
        if (!res.error.empty()) ++ps.errors;
        lat[size_t(p.phase[idx])][k].push_back(res.ts - res.ts_start);
        started[idx] = res.ts_start;
    };
    const bool timed = o.timing.mode != Timing::Mode::Afap;
    if (timed) ro.not_before = &p.due_ns;  // offsets from the first op's start
    created.keep();                        // from here on bytes are written
    r.summary = workload::run_ops(p.ops, rec, t, ro);
    if (timed) late_against_schedule(p.due_ns, started, r);
    for (size_t ph = 0; ph < 3; ++ph)
        for (int k = 0; k < 2; ++k) {
            auto& v = lat[ph][k];
            std::sort(v.begin(), v.end());
            PhaseStats& ps = r.phases[ph][k];
            ps.p50_ns = workload::percentile(v, 50);
            ps.p95_ns = workload::percentile(v, 95);
            ps.p99_ns = workload::percentile(v, 99);
            ps.p999_ns = workload::percentile(v, 99.9);
            ps.max_ns = v.empty() ? 0 : v.back();
        }
    return r;
}

void print_io_trace_replay(std::ostream& os, const IoTraceReplayOptions& o, const IoTraceReplayResult& r) {
    const IoTracePlan& p = r.plan;
    const workload::GenSummary& s = r.summary;
    std::string tiers;
    for (int k = 0; k < 4; ++k)
        if (o.tiers >> k & 1) tiers += (tiers.empty() ? "" : ",") + std::to_string(k);
    char line[512];
    std::snprintf(line, sizeof line,
                  "kvio replay: %s on %s (%s, engine %s, layout %s, transfer cap %llu B, qd %u), tiers %s, timing %s\n",
                  o.io_trace.c_str(), o.target.c_str(), s.target.dev.whole_disk_name.c_str(), o.engine.c_str(),
                  workload::layout_name(r.device.layout), (unsigned long long)r.device.max_io_bytes, o.qd,
                  tiers.c_str(), timing_name(o.timing).c_str());
    os << line;
    for (const auto& n : r.notes) os << "  note: " << n << "\n";
    std::snprintf(
        line, sizeof line,
        "  plan: %zu ops on %llu objects (largest %llu B, %llu B of target); skipped %llu rows of other tiers, "
        "%llu reads of keys never written; %llu reads of another size than stored (read as stored)\n",
        p.ops.size(), (unsigned long long)p.objects, (unsigned long long)p.largest_payload,
        (unsigned long long)p.need_bytes, (unsigned long long)p.rows_other_tiers,
        (unsigned long long)p.reads_never_written, (unsigned long long)p.reads_resized);
    os << line;
    const double secs = double(s.io_ns) / 1e9;
    const uint64_t total = s.store.bytes + s.load.bytes;
    std::snprintf(line, sizeof line,
                  "  done: %llu/%zu ops in %.3f s: write %llu ops %llu B %.1f MB/s, read %llu ops %llu B %.1f MB/s, "
                  "total %.1f MB/s\n",
                  (unsigned long long)(s.store.ops + s.load.ops), p.ops.size(), secs, (unsigned long long)s.store.ops,
                  (unsigned long long)s.store.bytes, s.store.mb_per_s(), (unsigned long long)s.load.ops,
                  (unsigned long long)s.load.bytes, s.load.mb_per_s(), secs > 0 ? double(total) / secs / 1e6 : 0.0);
    os << line;
    os << "  latency (ms)        ops        p50        p95        p99      p99.9        max\n";
    for (size_t ph = 0; ph < 3; ++ph)
        for (int k = 0; k < 2; ++k) {
            const PhaseStats& ps = r.phases[ph][k];
            if (!ps.ops) continue;
            std::snprintf(line, sizeof line, "  %-7s %-5s %9llu %10.3f %10.3f %10.3f %10.3f %10.3f\n",
                          trace_phase_name(TracePhase(ph)), k ? "read" : "write", (unsigned long long)ps.ops,
                          ps.p50_ns / 1e6, ps.p95_ns / 1e6, ps.p99_ns / 1e6, ps.p999_ns / 1e6, ps.max_ns / 1e6);
            os << line;
        }
    if (o.timing.mode != Timing::Mode::Afap) {
        std::snprintf(line, sizeof line,
                      "  schedule: trace span %.3f s, worst start lateness %.3f ms, %llu ops more than 1 ms late\n",
                      double(p.span_ns) / 1e9, double(r.late_ns_max) / 1e6, (unsigned long long)r.late_ops_1ms);
        os << line;
    }
    os << "  loads verified against the pattern: " << (s.first_error.empty() ? "ok" : s.first_error) << "\n";
    if (s.stopped_by)
        os << "  stopped by signal " << s.stopped_by << ": " << s.done_trace_ids.size() << " of " << p.ops.size()
           << " ops completed\n";
}

}  // namespace kvio::replay
