#include "validate/semantic.h"

#include "common/checked_math.h"
#include "common/devinfo.h"
#include "common/jsonl.h"

namespace kvio::validate {

static uint32_t parse_dev_field(const json& j, const char* field, const JsonSource& src) {
    std::string s = get_string(j, field, src);
    auto d = parse_dev_string(s);
    if (!d) src.fail(field, "expected \"MAJ:MIN\", got \"" + s + "\"");
    return kernel_dev(*d);
}

static bool known_engine(const std::string& e) {
    return e == "posix" || e == "io_uring" || e == "uring_cmd" || e == "cufile";
}

// The meta's geometry, whether from the semantic meta or a record manifest: values no device or engine can have
// are errors here, not wrong projections later.
void check_semantic_geometry(const SemanticMeta& m, const JsonSource& src) {
    if (!m.engine.empty() && !known_engine(m.engine))
        src.fail("engine", "expected posix, io_uring, uring_cmd or cufile, got \"" + m.engine + "\"");
    if (m.lba_bytes && !valid_lba_bytes(m.lba_bytes))
        src.fail("lba_bytes", std::to_string(m.lba_bytes) + " is not a power of two from 512 to 65536");
    if (m.block_align && m.lba_bytes && m.block_align % m.lba_bytes)
        src.fail("block_align",
                 std::to_string(m.block_align) + " is not a multiple of lba_bytes " + std::to_string(m.lba_bytes));
    if (m.block_align % 512) src.fail("block_align", std::to_string(m.block_align) + " is not a multiple of 512");
    // Transfer limits: a whole number of 512-byte sectors, at most 4 GiB (the kernel's 32-bit request length).
    auto limit = [&](uint64_t v, const char* field, uint64_t unit) {
        if (v && (v > (uint64_t(UINT32_MAX) + 1) / unit || (unit == 1 && v % 512)))
            src.fail(field,
                     std::to_string(v) + (unit == 1 ? " is not a multiple of 512 up to 4 GiB" : " KiB is above 4 GiB"));
    };
    limit(m.mdts_bytes, "mdts_bytes", 1);
    limit(m.max_io_bytes, "max_io_bytes", 1);
    limit(m.max_sectors_kb, "max_sectors_kb", 1024);
    if (m.header_bytes > (uint64_t(1) << 32))
        src.fail("header_bytes", std::to_string(m.header_bytes) + " is above 4 GiB");
}

static SemanticMeta read_meta(const json& j, const JsonSource& src) {
    if (get_string_or(j, "type", "", src) != "meta")
        src.fail("type", "the first line must be the meta record (\"type\":\"meta\")" + src.other_kind(j));
    std::string schema = get_string(j, "schema", src);
    if (schema != "kvio.semantic/1") src.fail("schema", "expected \"kvio.semantic/1\", got \"" + schema + "\"");
    SemanticMeta m;
    m.engine = get_string(j, "engine", src);
    m.layout = get_string_or(j, "layout", "", src);
    m.model = get_string_or(j, "model", "", src);
    if (j.contains("dev")) {
        m.dev = parse_dev_field(j, "dev", src);
        m.dev_str = j["dev"].get<std::string>();
    }
    m.lba_bytes = get_u64_or(j, "lba_bytes", 0, src);
    m.block_align = get_u64_or(j, "block_align", 0, src);
    m.mdts_bytes = get_u64_or(j, "mdts_bytes", 0, src);
    m.max_io_bytes = get_u64_or(j, "max_io_bytes", 0, src);
    m.header_bytes = get_u64_or(j, "header_bytes", 0, src);
    m.max_sectors_kb = get_u64_or(j, "max_sectors_kb", 0, src);
    if (j.contains("max_sectors_kb") && !m.max_sectors_kb)
        src.fail("max_sectors_kb", "0: a device splits at 1 KiB or more");
    if (j.contains("lba_bytes") && !m.lba_bytes) src.fail("lba_bytes", "0 is not a power of two from 512 to 65536");
    check_semantic_geometry(m, src);
    if (j.contains("buffered")) {
        if (!j["buffered"].is_boolean()) src.fail("buffered", "expected true or false");
        m.buffered = j["buffered"].get<bool>();
    }
    std::string clock = get_string_or(j, "clock", "CLOCK_MONOTONIC", src);
    if (clock != "CLOCK_MONOTONIC")
        src.fail("clock", "expected \"CLOCK_MONOTONIC\" (the clock the tracer uses), got \"" + clock + "\"");
    return m;
}

// An op imported from an engine's KV files names its file as kvio.events/1 does (docs/engine_layouts.md).
static void read_file_identity(const json& j, ObjectOp& op, const JsonSource& src) {
    const int n = int(j.contains("ino")) + int(j.contains("fs_dev")) + int(j.contains("gen"));
    if (n != 0 && n != 3)
        src.fail(j.contains("ino") ? (j.contains("fs_dev") ? "gen" : "fs_dev") : "ino",
                 "missing: ino, fs_dev and gen go together");
    op.path = get_string_or(j, "path", "", src);
    if (n == 0) return;
    op.has_file = true;
    op.ino = get_u64(j, "ino", src);
    op.gen = get_u64(j, "gen", src);
    op.fs_dev = get_string(j, "fs_dev", src);
    if (!parse_dev_string(op.fs_dev)) src.fail("fs_dev", "expected \"MAJ:MIN\", got \"" + op.fs_dev + "\"");
}

static ObjectOp read_op(const json& j, const SemanticMeta& meta, const JsonSource& src) {
    ObjectOp op;
    std::string kind = get_string(j, "op", src);
    if (kind == "store")
        op.kind = OpKind::Store;
    else if (kind == "load")
        op.kind = OpKind::Load;
    else
        src.fail("op", "expected \"store\" or \"load\", got \"" + kind + "\"");
    op.object_id = get_u64(j, "object_id", src);
    op.trace_id = get_u64_or(j, "trace_id", 0, src);
    op.key = get_string_or(j, "key", "", src);
    // kvio gen writes `bytes` (moved, header included) and `payload_bytes` (the object); older files only `bytes`.
    // Both are checked when present, whichever is used.
    const uint64_t moved = j.contains("payload_bytes") ? get_u64_or(j, "bytes", 0, src) : get_u64(j, "bytes", src);
    op.bytes = j.contains("payload_bytes") ? get_u64(j, "payload_bytes", src) : moved;
    // The projection pads the payload to the LBA size and adds the (padded) header: all of it must fit in 64 bits.
    const char* bytes_field = j.contains("payload_bytes") ? "payload_bytes" : "bytes";
    auto total = checked_round_up(op.bytes, meta.lba_bytes ? meta.lba_bytes : 512);
    if (total) total = checked_add(*total, meta.header_bytes);
    if (total) total = checked_add(*total, meta.block_align);
    if (!total)
        src.fail(bytes_field, std::to_string(op.bytes) + " is beyond any device (its padded size overflows 64 bits)");
    op.dev = parse_dev_field(j, "dev", src);
    op.ts_start = get_u64(j, "ts_start", src);
    op.ts = get_u64(j, "ts", src);
    if (op.ts < op.ts_start)
        src.fail("ts", "ends before ts_start (" + std::to_string(op.ts) + " < " + std::to_string(op.ts_start) + ")");
    auto it = j.find("extents");
    if (it == j.end()) {
        // No FIEMAP list: one range from dev_off covering the payload.
        op.extents.push_back({get_u64(j, "dev_off", src), op.bytes});
    } else {
        if (j.contains("dev_off")) get_u64(j, "dev_off", src);  // not used beside extents, but never of a wrong type
        if (!it->is_array()) src.fail("extents", "expected [[dev_off,len],...]");
        for (const auto& e : *it) {
            if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() || !e[1].is_number_unsigned())
                src.fail("extents", "expected [[dev_off,len],...] of non-negative integers, got " + e.dump());
            op.extents.push_back({e[0].get<uint64_t>(), e[1].get<uint64_t>()});
        }
    }
    uint64_t mapped = 0;
    for (const Extent& e : op.extents) {
        if (!checked_add(e.off, e.len))
            src.fail(it == j.end() ? "dev_off" : "extents",
                     "[" + std::to_string(e.off) + ", " + std::to_string(e.len) + "] ends beyond 2^64 bytes");
        mapped = checked_add(mapped, e.len).value_or(UINT64_MAX);
    }
    if (it != j.end() && op.bytes > mapped)
        src.fail(bytes_field,
                 std::to_string(op.bytes) + " is more than its extents hold (" + std::to_string(mapped) + " bytes)");
    if (j.contains("error"))
        op.failed = !(j["error"].is_null() || (j["error"].is_string() && j["error"].get<std::string>().empty()));
    read_file_identity(j, op, src);
    op.line = src.line;
    return op;
}

SemanticTrace read_semantic(const std::string& path) {
    SemanticTrace t;
    t.path = path;
    JsonlReader r(path);
    r.expect("kvio.semantic/1");
    json j;
    if (!r.next(j)) throw Error(path + ": empty: expected a kvio.semantic/1 meta line");
    t.meta = read_meta(j, r.source());
    while (r.next(j)) t.ops.push_back(read_op(j, t.meta, r.source()));
    return t;
}

void merge_record_manifest(SemanticMeta& meta, const std::string& record_path) {
    json j = read_json_file(record_path);
    JsonSource src{record_path, 0, "record manifest"};
    if (!j.is_object()) throw Error(record_path + ": expected a JSON object");
    uint64_t v = get_u64(j, "schema_version", src);
    if (v != 1) src.fail("schema_version", "expected 1, got " + std::to_string(v));
    auto it = j.find("device_geometry");
    if (it == j.end() || !it->is_object()) src.fail("device_geometry", "missing or not an object");
    const json& g = *it;
    auto fill = [&](uint64_t& dst, const char* field) {
        if (!dst) dst = get_u64_or(g, field, 0, src);
    };
    if (meta.engine.empty()) meta.engine = get_string_or(g, "engine", "", src);
    fill(meta.lba_bytes, "lba_bytes");
    fill(meta.mdts_bytes, "mdts_bytes");
    fill(meta.block_align, "block_align");
    fill(meta.header_bytes, "header_bytes");
    fill(meta.max_io_bytes, "max_io_bytes");
    fill(meta.max_sectors_kb, "max_sectors_kb");
    check_semantic_geometry(meta, JsonSource{record_path + ": device_geometry", 0});
}

uint64_t max_sectors_kb_from_trace_json(const std::string& path, uint32_t dev) {
    json j = read_json_file(path);
    JsonSource src{path, 0, "kvio.trace/1"};
    if (!j.is_object()) throw Error(path + ": expected a JSON object");
    std::string schema = get_string(j, "schema", src);
    if (schema != "kvio.trace/1") src.fail("schema", "expected \"kvio.trace/1\", got \"" + schema + "\"");
    auto it = j.find("devices");
    if (it == j.end() || !it->is_array()) src.fail("devices", "missing or not an array");
    for (const auto& d : *it) {
        if (!d.is_object()) src.fail("devices", "expected objects");
        auto id = parse_dev_string(get_string(d, "dev", src));
        if (!id) src.fail("devices[].dev", "expected \"MAJ:MIN\"");
        if (kernel_dev(*id) == dev) return get_u64(d, "max_sectors_kb", src);
    }
    return 0;
}

}  // namespace kvio::validate
