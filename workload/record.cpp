#include "workload/record.h"

#include <algorithm>

#include "common/checked_math.h"
#include "common/error.h"
#include "common/jsonl.h"

namespace kvio::workload {

const char* op_name(OpKind k) { return k == OpKind::Store ? "store" : "load"; }
const char* layout_name(Layout l) { return l == Layout::Slots ? "slots" : "files"; }
Layout parse_layout(const std::string& s) {
    if (s == "slots") return Layout::Slots;
    if (s == "files") return Layout::Files;
    throw Error("unknown layout '" + s + "' (known: slots, files)");
}

void compute_layout(DeviceGeometry& d, uint64_t payload_bytes) {
    if (d.lba_bytes == 0 || d.block_align == 0 || d.block_align % d.lba_bytes)
        throw Error("--block-align " + std::to_string(d.block_align) + " must be a multiple of the LBA size " +
                    std::to_string(d.lba_bytes));
    auto too_big = [&] {
        return Error("a payload of " + std::to_string(payload_bytes) +
                     " bytes is beyond any device: its slot size overflows 64 bits");
    };
    auto io = checked_round_up(payload_bytes, d.lba_bytes);
    if (!io) throw too_big();
    d.io_bytes = *io;
    if (d.layout == Layout::Slots) {
        d.header_bytes = d.block_align;
        auto with_header = checked_add(d.header_bytes, d.io_bytes);
        auto slot = with_header ? checked_round_up(*with_header, d.block_align) : std::nullopt;
        if (!slot) throw too_big();
        d.slot_bytes = *slot;
        d.data_base = *checked_round_up(1 << 20, d.block_align);
    } else {
        d.header_bytes = 0;
        d.slot_bytes = 0;
        d.data_base = 0;
    }
}

uint64_t slot_offset(const DeviceGeometry& d, uint64_t index) {
    auto span = checked_mul(index, d.slot_bytes);
    auto off = span ? checked_add(d.data_base, *span) : std::nullopt;
    if (!off)
        throw Error("slot " + std::to_string(index) + " of " + std::to_string(d.slot_bytes) +
                    " bytes starts beyond 2^64 bytes");
    return *off;
}

std::string object_file_name(uint64_t index) { return "kvobj-" + std::to_string(index) + ".bin"; }

Record make_record(const Geometry& g, const DeviceGeometry& d, const AccessPattern& a) {
    if (a.pattern != "store-then-load" && a.pattern != "interleaved")
        throw Error("unknown pattern '" + a.pattern + "' (known: store-then-load, interleaved)");
    if (a.iters == 0) throw Error("--iters must be at least 1");
    Record r;
    r.geometry = g;
    r.device = d;
    r.access = a;
    const uint64_t n = a.num_chunks * g.objects_per_chunk;
    r.objects.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
        auto& o = r.objects[i];
        o.index = i;
        o.payload_bytes = g.per_rank_bytes;
        o.key = "kvio/" + g.model.name + "/tp" + std::to_string(g.tp) + "/rank" + std::to_string(i % g.tp) + "/chunk" +
                std::to_string(i / g.tp);
    }
    uint64_t seq = 0;
    auto add = [&](uint64_t i, OpKind k) {
        r.objects[i].ops.push_back({k, seq, uint32_t(seq + 1)});
        ++seq;
    };
    for (uint32_t it = 0; it < a.iters; ++it) {
        if (a.pattern == "interleaved") {
            for (uint64_t i = 0; i < n; ++i) add(i, OpKind::Store), add(i, OpKind::Load);
        } else {
            for (uint64_t i = 0; i < n; ++i) add(i, OpKind::Store);
            for (uint64_t i = 0; i < n; ++i) add(i, OpKind::Load);
        }
    }
    return r;
}

nlohmann::json record_to_json(const Record& r) {
    const auto& d = r.device;
    nlohmann::json objs = nlohmann::json::array();
    for (const auto& o : r.objects) {
        nlohmann::json ops = nlohmann::json::array();
        for (const auto& op : o.ops)
            ops.push_back({{"op", op_name(op.op)}, {"seq", op.seq}, {"trace_id", op.trace_id}});
        objs.push_back({{"index", o.index}, {"payload_bytes", o.payload_bytes}, {"key", o.key}, {"ops", ops}});
    }
    return {
        {"schema_version", r.schema_version},
        {"model", r.geometry.model.name},
        {"geometry", geometry_to_json(r.geometry)},
        {"device_geometry",
         {{"engine", d.engine},
          {"layout", layout_name(d.layout)},
          {"lba_bytes", d.lba_bytes},
          {"mdts_bytes", d.mdts_bytes},
          {"max_io_bytes", d.max_io_bytes},
          {"block_align", d.block_align},
          {"header_bytes", d.header_bytes},
          {"io_bytes", d.io_bytes},
          {"slot_bytes", d.slot_bytes},
          {"data_base", d.data_base},
          {"capacity_bytes", d.capacity_bytes}}},
        {"access_pattern",
         {{"pattern", r.access.pattern},
          {"iters", r.access.iters},
          {"qd", r.access.qd},
          {"num_chunks", r.access.num_chunks},
          {"buffered", r.access.buffered}}},
        {"objects", objs},
    };
}

Record record_from_json(const nlohmann::json& j, const std::string& where) {
    JsonSource src{where, 0, "record manifest"};
    if (!j.is_object()) throw Error(where + ": expected a JSON object (a kvio record manifest)");
    Record r;
    r.schema_version = int(get_u64(j, "schema_version", src));
    if (r.schema_version != 1)
        src.fail("schema_version", "unsupported version " + std::to_string(r.schema_version) + " (expected 1)");
    if (!j.contains("geometry")) src.fail("geometry", "missing");
    r.geometry = geometry_from_json(j["geometry"], where);
    if (!j.contains("device_geometry") || !j["device_geometry"].is_object())
        src.fail("device_geometry", "missing or not an object");
    const auto& dj = j["device_geometry"];
    auto& d = r.device;
    d.engine = get_string(dj, "engine", src);
    d.layout = parse_layout(get_string(dj, "layout", src));
    d.lba_bytes = uint32_t(get_u64(dj, "lba_bytes", src));
    d.mdts_bytes = get_u64(dj, "mdts_bytes", src);
    d.max_io_bytes = get_u64(dj, "max_io_bytes", src);
    d.block_align = uint32_t(get_u64(dj, "block_align", src));
    d.header_bytes = get_u64(dj, "header_bytes", src);
    d.io_bytes = get_u64(dj, "io_bytes", src);
    d.slot_bytes = get_u64(dj, "slot_bytes", src);
    d.data_base = get_u64(dj, "data_base", src);
    d.capacity_bytes = get_u64(dj, "capacity_bytes", src);
    if (!j.contains("access_pattern") || !j["access_pattern"].is_object())
        src.fail("access_pattern", "missing or not an object");
    const auto& aj = j["access_pattern"];
    r.access.pattern = get_string(aj, "pattern", src);
    r.access.iters = uint32_t(get_u64(aj, "iters", src));
    r.access.qd = uint32_t(get_u64(aj, "qd", src));
    r.access.num_chunks = get_u64(aj, "num_chunks", src);
    if (aj.contains("buffered")) {
        if (!aj["buffered"].is_boolean()) src.fail("buffered", "expected true or false, got " + aj["buffered"].dump());
        r.access.buffered = aj["buffered"].get<bool>();
    }
    if (!valid_lba_bytes(d.lba_bytes))
        src.fail("lba_bytes", std::to_string(d.lba_bytes) + " is not a power of two from 512 to 65536");
    if (!d.block_align || d.block_align % d.lba_bytes)
        src.fail("block_align",
                 std::to_string(d.block_align) + " is not a multiple of lba_bytes " + std::to_string(d.lba_bytes));
    if (!j.contains("objects") || !j["objects"].is_array()) src.fail("objects", "missing or not an array");
    for (const auto& oj : j["objects"]) {
        RecordObject o;
        o.index = get_u64(oj, "index", src);
        o.payload_bytes = get_u64(oj, "payload_bytes", src);
        o.key = get_string_or(oj, "key", "", src);
        if (!oj.contains("ops") || !oj["ops"].is_array())
            src.fail("ops", "missing or not an array (object " + std::to_string(o.index) + ")");
        for (const auto& pj : oj["ops"]) {
            std::string k = get_string(pj, "op", src);
            if (k != "store" && k != "load") src.fail("op", "expected \"store\" or \"load\", got \"" + k + "\"");
            o.ops.push_back({k == "store" ? OpKind::Store : OpKind::Load, get_u64(pj, "seq", src),
                             uint32_t(get_u64(pj, "trace_id", src))});
        }
        r.objects.push_back(std::move(o));
    }
    check_record_layout(r, src);
    return r;
}

void check_record_layout(const Record& r, const JsonSource& src) {
    const DeviceGeometry& d = r.device;
    // The whole layout must be computable before anything touches a target: every slot sized for the largest
    // payload (replay lays all objects out alike), the last one ending within 64 bits.
    uint64_t max_payload = 0, slots = 0;
    for (const auto& o : r.objects)
        max_payload = std::max(max_payload, o.payload_bytes), slots = std::max(slots, o.index + 1);
    try {
        DeviceGeometry probe = d;
        compute_layout(probe, max_payload);
        if (probe.layout == Layout::Slots)
            (void)slot_offset(probe, slots);
        else
            (void)checked_mul(probe.io_bytes, r.objects.size()).value();
    } catch (const std::exception&) {
        src.fail("payload_bytes", std::to_string(max_payload) + " with " + std::to_string(slots) +
                                      " objects is beyond any device: the layout would end past 2^64 bytes");
    }
}

std::vector<ObjectOp> plan_ops(const Record& r) {
    std::vector<std::pair<uint64_t, ObjectOp>> v;
    for (const auto& o : r.objects) {
        for (const auto& op : o.ops) {
            ObjectOp x;
            x.op = op.op;
            x.object_id = o.index;
            x.trace_id = op.trace_id;
            x.key = o.key;
            x.payload_bytes = o.payload_bytes;
            auto io = checked_round_up(o.payload_bytes, r.device.lba_bytes);
            if (!io)
                throw Error("object " + std::to_string(o.index) + ": payload of " + std::to_string(o.payload_bytes) +
                            " bytes overflows 64 bits once padded to the LBA size");
            x.io_bytes = *io;
            if (r.device.layout == Layout::Slots) {
                // A store writes header + payload from the slot start; a load reads the payload only.
                x.header_bytes = op.op == OpKind::Store ? r.device.header_bytes : 0;
                x.offset = slot_offset(r.device, o.index) + (op.op == OpKind::Store ? 0 : r.device.header_bytes);
            } else {
                x.file = object_file_name(o.index);
            }
            v.push_back({op.seq, std::move(x)});
        }
    }
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ObjectOp> out;
    out.reserve(v.size());
    for (auto& p : v) out.push_back(std::move(p.second));
    return out;
}

}  // namespace kvio::workload
