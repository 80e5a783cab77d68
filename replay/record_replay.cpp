#include "replay/record_replay.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "common/jsonl.h"
#include "replay/safety.h"
#include "workload/record_foreign.h"
#include "replay/target_room.h"
#include "workload/created_target.h"

namespace kvio::replay {

namespace {

std::string changed(const char* what, uint64_t from, uint64_t to, const std::string& why) {
    return std::string(what) + " " + std::to_string(from) + " -> " + std::to_string(to) +
           (why.empty() ? "" : " (" + why + ")");
}

}  // namespace

workload::DeviceGeometry regeometry(const workload::Record& rec, const workload::TargetInfo& t,
                                    const std::string& engine, std::vector<std::string>& notes) {
    workload::DeviceGeometry d = rec.device;
    d.engine = engine;
    if (engine != rec.device.engine) notes.push_back("engine " + rec.device.engine + " -> " + engine);
    if (t.lba_bytes != d.lba_bytes) {
        notes.push_back(changed("LBA size", d.lba_bytes, t.lba_bytes,
                                "target logical_block_size; payload padding and slots recomputed"));
        d.lba_bytes = t.lba_bytes;
    }
    if (d.block_align % d.lba_bytes) {
        uint32_t a = (d.block_align + d.lba_bytes - 1) / d.lba_bytes * d.lba_bytes;
        notes.push_back(changed("block_align", d.block_align, a, "rounded up to the LBA size"));
        d.block_align = a;
    }
    if (t.mdts_bytes != d.mdts_bytes) {
        notes.push_back(changed("MDTS/max_hw_sectors", d.mdts_bytes, t.mdts_bytes, "target max_hw_sectors_kb × 1024"));
        d.mdts_bytes = t.mdts_bytes;
    }
    const uint64_t cap = workload::default_max_io(t, engine == "uring_cmd");
    uint64_t io = std::min(rec.device.max_io_bytes ? rec.device.max_io_bytes : cap, cap);
    io -= io % d.lba_bytes;
    if (io != rec.device.max_io_bytes)
        notes.push_back(changed("transfer cap", rec.device.max_io_bytes, io,
                                "target max_sectors_kb " + std::to_string(t.dev.max_sectors_kb) + ", max_segments " +
                                    std::to_string(t.dev.max_segments) + ": transfers re-split"));
    d.max_io_bytes = io;
    const uint64_t payload = rec.objects.empty() ? rec.geometry.per_rank_bytes : rec.objects.front().payload_bytes;
    const auto before = d;
    workload::compute_layout(d, payload);
    if (d.slot_bytes != before.slot_bytes || d.io_bytes != before.io_bytes || d.data_base != before.data_base ||
        d.header_bytes != before.header_bytes)
        notes.push_back("slot layout recomputed: io_bytes " + std::to_string(before.io_bytes) + " -> " +
                        std::to_string(d.io_bytes) + ", slot_bytes " + std::to_string(before.slot_bytes) + " -> " +
                        std::to_string(d.slot_bytes) + " (object offsets move)");
    if (d.header_bytes > d.max_io_bytes)
        throw Error("the slot header (" + std::to_string(d.header_bytes) +
                    " bytes) exceeds the target's transfer cap " + std::to_string(d.max_io_bytes));
    d.capacity_bytes = t.capacity_bytes;
    return d;
}

RecordReplayResult replay_record(const RecordReplayOptions& o) {
    RecordReplayResult r;
    workload::Record rec = workload::read_record_any(read_json_file(o.record), o.record);
    if (rec.objects.empty()) throw Error(o.record + ": field 'objects': empty, nothing to replay");
    // A --target that does not exist becomes what the layout needs (a regular file for slots, grown below; a
    // directory for files); removed again if the replay is refused before it writes.
    workload::CreatedTarget created(o.target, rec.device.layout == workload::Layout::Files);
    if (created.created())
        r.notes.push_back("target " + o.target + " did not exist: created as " +
                          (rec.device.layout == workload::Layout::Files ? "a directory" : "a regular file"));
    workload::TargetInfo t = workload::inspect_target(o.target);
    const std::string engine = o.engine.empty() ? rec.device.engine : o.engine;
    workload::check_engine_target(engine, t);
    const workload::Layout layout = rec.device.layout;
    if (layout == workload::Layout::Files && t.kind != workload::TargetKind::Directory)
        throw Error("the manifest uses the files layout: --target must be a directory, but " + o.target + " is " +
                    workload::target_kind_phrase(t.kind) + ".");
    if (layout == workload::Layout::Slots && t.kind == workload::TargetKind::Directory)
        throw Error("the manifest uses the slots layout: --target must be a block device or a regular file, but " +
                    o.target + " is a directory.");
    {
        CheckComm comm;  // the check reads the first MiB
        workload::check_device_safe(t, o.force);
    }
    if (!o.semantic_path.empty()) workload::check_offset_mappable(t);

    workload::DeviceGeometry d = regeometry(rec, t, engine, r.notes);
    if (o.qd && o.qd != rec.access.qd) {
        r.notes.push_back(changed("qd", rec.access.qd, o.qd, "--qd"));
        rec.access.qd = o.qd;
    }
    if (o.iters && o.iters != rec.access.iters) {
        r.notes.push_back(
            changed("iters", rec.access.iters, o.iters, "--iters: the " + rec.access.pattern + " pattern rebuilt"));
        rec.access.iters = o.iters;
        rec = workload::make_record(rec.geometry, d, rec.access);
    }
    rec.device = d;

    uint64_t nobj = 0;
    for (const auto& ob : rec.objects) nobj = std::max(nobj, ob.index + 1);
    const uint64_t need =
        layout == workload::Layout::Slots ? workload::slot_offset(d, nobj) : rec.objects.size() * d.io_bytes;
    std::vector<std::pair<uint64_t, uint64_t>> slots;
    if (layout == workload::Layout::Slots)
        for (const auto& ob : rec.objects) slots.push_back({workload::slot_offset(d, ob.index), d.slot_bytes});
    r.checked_bytes = prepare_object_target(t, layout, need, nobj, std::move(slots), o.force,
                                            "the recorded " + std::to_string(nobj) + " objects", r.notes);
    rec.device.capacity_bytes = t.capacity_bytes;

    workload::RunOptions ro;
    ro.semantic_path = o.semantic_path;
    ro.progress = o.progress;
    ro.label = "kvio replay";
    ro.stop = o.stop;
    created.keep();  // from here on bytes are written
    r.summary = workload::run_record(rec, t, ro);
    r.record = std::move(rec);
    return r;
}

void print_record_replay(std::ostream& os, const RecordReplayOptions& o, const RecordReplayResult& r) {
    if (r.notes.empty())
        os << "kvio replay: " << o.record << " on " << o.target << ": same geometry as recorded, identical stream\n";
    else {
        os << "kvio replay: " << o.record << " on " << o.target << ": " << r.notes.size()
           << " change(s) against the manifest:\n";
        for (const auto& n : r.notes) os << "  note: " << n << "\n";
    }
    workload::GenOptions g;
    g.geometry = r.record.geometry;
    g.target = o.target;
    g.engine = r.record.device.engine;
    g.buffered = r.record.access.buffered;
    g.qd = r.record.access.qd;
    std::ostringstream ss;
    workload::print_summary(ss, g, r.summary);
    std::string text = ss.str();
    if (text.rfind("kvio gen:", 0) == 0) text.replace(0, 9, "  run:");  // the same summary gen prints
    os << text;
}

}  // namespace kvio::replay
