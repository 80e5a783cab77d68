#include "validate/semantic_lmcache.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/checked_math.h"
#include "common/devinfo.h"
#include "validate/foreign_fields.h"
#include "validate/projection.h"

namespace kvio::validate {

namespace {

// LMCache's io_engine names to kvio's engines.
std::string engine_of(const std::string& e, const JsonSource& src) {
    if (e == "posix" || e == "pread" || e == "psync" || e == "sync") return "posix";
    if (e == "io_uring" || e == "uring") return "io_uring";
    if (e == "uring_cmd" || e == "io_uring_cmd" || e == "nvme_passthru") return "uring_cmd";
    if (e == "cufile" || e == "gds") return "cufile";
    src.fail("io_engine",
             "expected posix, io_uring, uring_cmd or cufile (or pread, psync, io_uring_cmd, gds), got \"" + e + "\"");
}

struct Where {
    uint32_t dev = 0;
    uint64_t part_start = 0;  // bytes added to slot_offset (a partition's start on its disk)
    bool known = false;
};

Where device_of(const json& j, const JsonSource& src) {
    Where w;
    if (j.contains("dev")) {
        std::string s = get_string(j, "dev", src);
        auto d = parse_dev_string(s);
        if (!d) src.fail("dev", "expected \"MAJ:MIN\", got \"" + s + "\"");
        w.dev = kernel_dev(*d), w.known = true;
        return w;
    }
    const std::string p = get_string_or(j, "device_path", "", src);
    struct stat st {};
    if (p.empty() || ::stat(p.c_str(), &st) != 0) return w;
    if (S_ISCHR(st.st_mode)) {  // an NVMe generic char device (/dev/ngXnY): commands carry its rdev
        w.dev = kernel_dev({::major(st.st_rdev), ::minor(st.st_rdev)}), w.known = true;
    } else if (S_ISBLK(st.st_mode)) {
        try {
            BlockDevInfo b = block_dev_info({::major(st.st_rdev), ::minor(st.st_rdev)});
            w.dev = kernel_dev(b.whole_disk), w.part_start = b.is_partition ? b.start_sector * 512 : 0, w.known = true;
        } catch (const Error&) {}
    }
    return w;
}

SemanticMeta read_meta(const json& j, const JsonSource& src, Where& where) {
    if (get_string_or(j, "event_type", "", src) != "kvio_meta")
        src.fail("event_type",
                 "the first line of an LMCache kvio trace must be the meta record (\"event_type\":\"kvio_meta\")");
    const uint64_t schema = get_u64(j, "schema", src);
    if (schema != 2)
        src.fail("schema",
                 "expected 2 (the LMCache kvio trace schema this reader knows), got " + std::to_string(schema));
    for (const char* f : {"hostname", "device_path"}) check_string_opt(j, f, src);
    check_u64_opt(j, "pid", src);
    SemanticMeta m;
    m.engine = engine_of(get_string(j, "io_engine", src), src);
    m.layout = "slots";
    m.block_align = get_u64(j, "block_align", src);
    if (!m.block_align) src.fail("block_align", "0: every I/O is aligned to at least 512 bytes");
    m.header_bytes = get_u64(j, "header_bytes", src);
    const uint64_t mdts_field = get_u64_or(j, "max_data_transfer_size", 0, src);
    m.max_io_bytes = mdts_field;
    m.mdts_bytes = get_u64_or(j, "mdts_bytes", mdts_field, src);
    m.lba_bytes = get_u64_or(j, "lba_bytes", 0, src);
    if (j.contains("lba_bytes") && !m.lba_bytes) src.fail("lba_bytes", "0 is not a power of two from 512 to 65536");
    m.max_sectors_kb = get_u64_or(j, "max_sectors_kb", 0, src);
    if (j.contains("max_sectors_kb") && !m.max_sectors_kb)
        src.fail("max_sectors_kb", "0: a device splits at 1 KiB or more");
    check_semantic_geometry(m, src);
    where = device_of(j, src);
    m.dev = where.dev;
    if (where.known) m.dev_str = dev_string(decode_kernel_dev(where.dev));
    return m;
}

// [start, start + len) within 64 bits, else the field's error.
Extent extent(uint64_t start, uint64_t len, const char* field, const JsonSource& src) {
    if (!checked_add(start, len))
        src.fail(field, std::to_string(start) + " + " + std::to_string(len) + " bytes ends beyond 2^64 bytes");
    return {start, len};
}

bool read_op(const json& j, const SemanticMeta& m, const Where& w, const JsonSource& src, ObjectOp& op) {
    if (j.contains("event_type"))
        src.fail("event_type",
                 "only the first line is a meta record; op records carry no event_type, got " + j["event_type"].dump());
    const std::string kind = get_string(j, "op", src);
    if (kind == "delete") return false;
    if (kind == "store")
        op.kind = OpKind::Store;
    else if (kind == "load")
        op.kind = OpKind::Load;
    else
        src.fail("op", "expected \"store\", \"load\" or \"delete\", got \"" + kind + "\"");
    op.object_id = get_u64_lenient(j, "object_id", src);
    op.key = get_string_or(j, "key", "", src);
    const std::string part = get_string_or(j, "part", "kv", src);
    if (part != "kv" && part != "k" && part != "v")
        src.fail("part", "expected \"kv\", \"k\" or \"v\", got \"" + part + "\"");
    op.bytes = get_u64(j, "bytes", src);
    const uint64_t ud = j.contains("user_data") ? get_u64_lenient(j, "user_data", src) : 0;
    op.trace_id = j.contains("trace_id") ? get_u64_lenient(j, "trace_id", src) : ud >> 32;
    if (j.contains("trace_id") && j.contains("user_data") && ud >> 32 && ud >> 32 != op.trace_id)
        src.fail("user_data", "its upper 32 bits (" + std::to_string(ud >> 32) + ") are not the record's trace_id " +
                                  std::to_string(op.trace_id));
    op.ts_start = get_time_ns(j, "ts_start", src);
    op.ts = get_time_ns(j, "ts", src);
    if (op.ts < op.ts_start)
        src.fail("ts", "ends before ts_start (" + std::to_string(op.ts) + " < " + std::to_string(op.ts_start) + " ns)");
    check_u64_opt(j, "pid", src);
    if (j.contains("instance") && !j["instance"].is_string() && !j["instance"].is_number_integer())
        src.fail("instance", "expected a string or an integer, got " + j["instance"].dump());
    if (j.contains("components")) {
        const json& c = j["components"];
        if (!c.is_object()) src.fail("components", "expected {k_bytes, v_bytes, scale_bytes}, got " + c.dump());
        for (const char* f : {"k_bytes", "v_bytes", "scale_bytes"}) check_u64_opt(c, f, JsonSource{src.file, src.line});
    }
    if (j.contains("shape") && !j["shape"].is_array()) src.fail("shape", "expected an array, got " + j["shape"].dump());
    check_string_opt(j, "dtype", src);
    // The slot and the bytes an op moves in it (the projection's padding, so every command lies inside).
    const char* slot_field = j.contains("slot_dev_off") ? "slot_dev_off" : "slot_offset";
    uint64_t slot = get_u64(j, slot_field, src);
    if (!j.contains("slot_dev_off")) {
        auto s = checked_add(slot, w.part_start);
        if (!s) src.fail(slot_field, std::to_string(slot) + " is beyond any device");
        slot = *s;
    } else {
        check_u64_opt(j, "slot_offset", src);
    }
    const uint64_t align = m.lba_bytes > m.block_align ? m.lba_bytes : m.block_align;
    auto payload = checked_round_up(op.bytes, align);
    auto header = checked_round_up(m.header_bytes, align);
    if (!payload || !header || !checked_add(*payload, *header))
        src.fail("bytes", std::to_string(op.bytes) + " is beyond any device (its padded size overflows 64 bits)");
    if (op.kind == OpKind::Store) {
        op.extents.push_back(extent(slot, *header + *payload, slot_field, src));
    } else {
        auto at = checked_add(slot, *header);
        if (!at) src.fail(slot_field, std::to_string(slot) + " is beyond any device");
        op.extents.push_back(extent(*at, *payload, slot_field, src));
    }
    op.dev = w.dev;
    if (j.contains("error"))
        op.failed = !(j["error"].is_null() || (j["error"].is_string() && j["error"].get<std::string>().empty()));
    op.line = src.line;
    return true;
}

}  // namespace

SemanticTrace read_semantic_lmcache(const std::string& path) {
    SemanticTrace t;
    t.path = path;
    t.format = "lmcache-kvio/2";
    JsonlReader r(path);
    json j;
    if (!r.next(j)) throw Error(path + ": empty: expected an LMCache kvio trace's kvio_meta line");
    Where w;
    t.meta = read_meta(j, r.source(), w);
    t.dev_unknown = !w.known;
    while (r.next(j)) {
        ObjectOp op;
        if (read_op(j, t.meta, w, r.source(), op))
            t.ops.push_back(std::move(op));
        else
            ++t.skipped_deletes;
    }
    return t;
}

}  // namespace kvio::validate
