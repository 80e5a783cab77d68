#include "workload/record_foreign.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/checked_math.h"
#include "common/jsonl.h"

namespace kvio::workload {

namespace {

using nlohmann::json;

const json& object_field(const json& j, const char* field, const JsonSource& src) {
    auto it = j.find(field);
    if (it == j.end() || !it->is_object())
        src.fail(field, it == j.end() ? "missing" : "expected an object, got " + it->dump());
    return *it;
}

// kvio's geometry when the record carries one in kvio's shape, else what replay needs of it.
Geometry geometry_of(const json& j, const std::string& model, uint64_t payload, const std::string& where) {
    if (j.contains("geometry")) {
        if (!j["geometry"].is_object())
            JsonSource{where, 0}.fail("geometry", "expected an object, got " + j["geometry"].dump());
        try {
            return geometry_from_json(j["geometry"], where);
        } catch (const Error&) {  // another tool's geometry: its own keys, not kvio's
        }
    }
    Geometry g;
    g.model.name = model;
    g.per_rank_bytes = g.object_bytes = payload;
    g.tp = g.objects_per_chunk = 1;
    return g;
}

/// An op of a kvio_record.json given without "seq": object and op index, its round (nth op of its kind on the object)
/// and kind, ordered by order_ops.
struct Pending {
    size_t obj, op;
    unsigned round;
    OpKind kind;
};

/// device_geometry of a kvio_record.json: engine (use_uring_cmd true means uring_cmd), lba_bytes, mdts_bytes,
/// max_io_bytes, block_align, header_bytes, slot_bytes, capacity_bytes, checked; io_bytes and data_base are left to
/// the caller. Errors name the field (src).
DeviceGeometry device_geometry_of(const json& dj, const JsonSource& src) {
    DeviceGeometry d;
    d.engine = get_string(dj, "engine", src);
    if (d.engine != "posix" && d.engine != "io_uring" && d.engine != "uring_cmd" && d.engine != "cufile")
        src.fail("engine", "expected posix, io_uring, uring_cmd or cufile, got \"" + d.engine + "\"");
    if (dj.contains("use_uring_cmd")) {
        if (!dj["use_uring_cmd"].is_boolean())
            src.fail("use_uring_cmd", "expected true or false, got " + dj["use_uring_cmd"].dump());
        if (dj["use_uring_cmd"].get<bool>()) d.engine = "uring_cmd";
    }
    d.layout = Layout::Slots;
    d.lba_bytes = uint32_t(std::min<uint64_t>(get_u64_or(dj, "lba_bytes", 512, src), UINT32_MAX));
    d.mdts_bytes = get_u64(dj, "mdts_bytes", src);
    d.max_io_bytes = get_u64_or(dj, "max_io_bytes", d.mdts_bytes, src);
    const uint64_t align = get_u64(dj, "block_align", src);
    d.header_bytes = get_u64(dj, "header_bytes", src);
    d.slot_bytes = get_u64(dj, "slot_bytes", src);
    d.capacity_bytes = get_u64(dj, "capacity_bytes", src);
    if (!valid_lba_bytes(d.lba_bytes))
        src.fail("lba_bytes", std::to_string(d.lba_bytes) + " is not a power of two from 512 to 65536");
    if (!align || align > UINT32_MAX || align % d.lba_bytes)
        src.fail("block_align",
                 std::to_string(align) + " is not a multiple of lba_bytes " + std::to_string(d.lba_bytes));
    d.block_align = uint32_t(align);
    if (d.mdts_bytes % 512 || d.mdts_bytes > (uint64_t(1) << 32))
        src.fail("mdts_bytes", std::to_string(d.mdts_bytes) + " is not a multiple of 512 up to 4 GiB");
    return d;
}

/// Numbers the ops given without "seq" (`unordered`: every op, or a parse error) in the access pattern's order:
/// round by round, every object's store then every object's load (`inter`leaved: per object, its store then its
/// load); trace_id = seq + 1.
void order_ops(Record& r, std::vector<Pending>& unordered, bool inter, const JsonSource& src) {
    std::stable_sort(unordered.begin(), unordered.end(), [&](const Pending& a, const Pending& b) {
        return inter ? std::tie(a.round, a.obj, a.kind) < std::tie(b.round, b.obj, b.kind)
                     : std::tie(a.round, a.kind, a.obj) < std::tie(b.round, b.kind, b.obj);
    });
    if (unordered.size() != [&] {
            size_t n = 0;
            for (auto& o : r.objects) n += o.ops.size();
            return n;
        }())
        src.fail("seq", "given for some ops and not others: give it for every op or for none");
    for (size_t s = 0; s < unordered.size(); ++s) {
        RecordOp& op = r.objects[unordered[s].obj].ops[unordered[s].op];
        op.seq = s;
        op.trace_id = uint32_t(s + 1);
    }
}

}  // namespace

bool is_kvio_record_json(const json& j) {
    if (!j.is_object()) return false;
    auto a = j.find("access_pattern");
    if (a != j.end() && a->is_string()) return true;
    auto d = j.find("device_geometry");
    return d != j.end() && d->is_object() && d->contains("use_uring_cmd");
}

Record record_from_kvio_record_json(const json& j, const std::string& where) {
    JsonSource src{where, 0};
    if (!j.is_object()) throw Error(where + ": expected a JSON object (a kvio_record.json)");
    Record r;
    r.schema_version = int(get_u64(j, "schema_version", src));
    if (r.schema_version != 1)
        src.fail("schema_version", "unsupported version " + std::to_string(r.schema_version) + " (expected 1)");
    (void)get_string_or(j, "source", "", src);
    const std::string model = get_string(j, "model", src);

    r.device = device_geometry_of(object_field(j, "device_geometry", src), src);
    auto& d = r.device;

    if (!j.contains("access_pattern") || !j["access_pattern"].is_string())
        src.fail("access_pattern", "expected \"store-all-then-load-all\" or \"interleaved\"");
    const std::string pattern = j["access_pattern"].get<std::string>();
    if (pattern != "store-all-then-load-all" && pattern != "interleaved")
        src.fail("access_pattern", "expected \"store-all-then-load-all\" or \"interleaved\", got \"" + pattern + "\"");
    r.access.pattern = pattern == "interleaved" ? "interleaved" : "store-then-load";
    r.access.qd = 1;

    if (!j.contains("objects") || !j["objects"].is_array()) src.fail("objects", "missing or not an array");
    std::vector<Pending> unordered;
    std::set<uint64_t> indexes;
    bool repeated = false;
    uint64_t max_payload = 0;
    for (const auto& oj : j["objects"]) {
        if (!oj.is_object()) src.fail("objects", "expected objects, got " + oj.dump());
        RecordObject o;
        o.index = get_u64(oj, "index", src);
        repeated |= !indexes.insert(o.index).second;
        const std::string part = get_string_or(oj, "part", "kv", src);
        if (part != "kv" && part != "k" && part != "v")
            src.fail("part", "expected \"kv\", \"k\" or \"v\", got \"" + part + "\"");
        o.payload_bytes = get_u64(oj, "payload_bytes", src);
        max_payload = std::max(max_payload, o.payload_bytes);
        o.key = get_string_or(oj, "key", model + "/obj" + std::to_string(o.index) + "/" + part, src);
        if (!oj.contains("ops") || !oj["ops"].is_array())
            src.fail("ops", "missing or not an array (object " + std::to_string(o.index) + ")");
        unsigned rounds[2] = {0, 0};
        for (const auto& pj : oj["ops"]) {
            std::string k;
            if (pj.is_string())
                k = pj.get<std::string>();
            else if (pj.is_object())
                k = get_string(pj, "op", src);
            else
                src.fail("ops", "expected \"store\", \"load\" or {\"op\":...}, got " + pj.dump());
            if (k != "store" && k != "load") src.fail("op", "expected \"store\" or \"load\", got \"" + k + "\"");
            const OpKind kind = k == "store" ? OpKind::Store : OpKind::Load;
            RecordOp op{kind, 0, 0};
            if (pj.is_object() && pj.contains("seq")) {
                op.seq = get_u64(pj, "seq", src);
                op.trace_id = uint32_t(get_u64_or(pj, "trace_id", op.seq + 1, src));
            } else {
                unordered.push_back({r.objects.size(), o.ops.size(), rounds[int(kind)], kind});
            }
            ++rounds[int(kind)];
            o.ops.push_back(op);
        }
        r.objects.push_back(std::move(o));
    }
    if (!unordered.empty()) order_ops(r, unordered, pattern == "interleaved", src);
    if (repeated)  // parts k and v of one index: every object its own slot, in list order
        for (size_t i = 0; i < r.objects.size(); ++i) r.objects[i].index = i;
    r.access.num_chunks = r.objects.size();
    for (const auto& o : r.objects) {
        uint32_t stores = 0;
        for (const auto& op : o.ops) stores += op.op == OpKind::Store;
        r.access.iters = std::max(r.access.iters, stores);
    }
    auto io = checked_round_up(max_payload, d.lba_bytes);
    auto need = io ? checked_add(*io, d.header_bytes) : std::nullopt;
    if (!need || d.slot_bytes < *need)
        src.fail("slot_bytes", std::to_string(d.slot_bytes) + " does not hold header_bytes " +
                                   std::to_string(d.header_bytes) + " + the largest payload " +
                                   std::to_string(max_payload) + " padded to " + std::to_string(d.lba_bytes));
    d.io_bytes = *io;
    d.data_base = *checked_round_up(1 << 20, d.block_align);
    r.geometry = geometry_of(j, model, max_payload, where);
    check_record_layout(r, src);
    return r;
}

Record read_record_any(const json& j, const std::string& where) {
    return is_kvio_record_json(j) ? record_from_kvio_record_json(j, where) : record_from_json(j, where);
}

}  // namespace kvio::workload
