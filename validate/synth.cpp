#include "validate/synth.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/events_bin.h"
#include "common/jsonl.h"
#include "validate/projection.h"

namespace kvio::validate {

SemanticMeta synth_meta(const SynthSpec& s) {
    SemanticMeta m;
    m.engine = s.engine;
    m.layout = "slots";
    m.model = "synthetic";
    auto d = parse_dev_string(s.dev);
    if (!d) throw Error("synth: dev: expected \"MAJ:MIN\", got \"" + s.dev + "\"");
    m.dev = kernel_dev(*d);
    m.dev_str = s.dev;
    m.lba_bytes = s.lba_bytes;
    m.block_align = s.block_align;
    m.max_io_bytes = s.max_io_bytes;
    m.max_sectors_kb = s.max_sectors_kb;
    m.header_bytes = s.header_bytes;
    return m;
}

uint64_t synth_generate(const SynthSpec& s, const std::function<void(const ObjectOp&)>& on_op,
                        const std::function<void(const Command&)>& on_cmd) {
    SemanticMeta meta = synth_meta(s);
    ProjectionRules rules = resolve_rules(meta, GeometryOverrides{});
    const uint64_t hdr = s.header_bytes ? round_up(s.header_bytes, rules.block_align) : 0;
    const uint64_t slot_bytes = round_up(hdr + round_up(s.object_bytes, rules.lba_bytes), rules.block_align);
    const uint64_t data_base = 1 << 20;  // metadata region [0, 1 MiB) takes the noise
    const uint64_t nslots = s.slots ? s.slots : (s.objects + 1) / 2;
    const bool tag = s.engine == "io_uring" || s.engine == "uring_cmd";
    uint64_t ts = 1'000'000'000, ncmds = 0;
    std::vector<uint64_t> sizes;
    ObjectOp op;
    op.dev = meta.dev;
    Command c;
    c.dev = meta.dev;
    for (uint64_t i = 0; i < s.objects; ++i) {
        const uint64_t nstores = (s.objects + 1) / 2;
        const bool store = i < nstores;
        const uint64_t obj = store ? i : i - nstores;
        const uint64_t slot_off = data_base + (obj % nslots) * slot_bytes;
        op.kind = store ? OpKind::Store : OpKind::Load;
        op.object_id = obj;
        op.trace_id = i + 1;
        op.key = "obj" + std::to_string(obj);
        op.bytes = s.object_bytes;
        // like kvio gen: the extents list the bytes the op moves (a load skips the header)
        op.extents.assign(1, store ? Extent{slot_off, hdr + round_up(s.object_bytes, rules.lba_bytes)}
                                   : Extent{slot_off + hdr, round_up(s.object_bytes, rules.lba_bytes)});
        op.line = i + 2;
        project(op, rules, sizes);
        op.ts_start = ts;
        op.ts = ts + 1000 * (sizes.size() + s.noise_per_op + 1);
        on_op(op);
        uint64_t off = store ? slot_off : slot_off + hdr, n = 0;
        c.op = store ? CmdOp::Write : CmdOp::Read;
        for (uint64_t sz : sizes) {
            c.offset = off;
            c.bytes = sz;
            c.ts_issue = ts += 1000;
            c.has_user_data = tag;
            c.user_data = tag ? (op.trace_id << 32 | ++n) : 0;
            on_cmd(c);
            off += sz;
            ++ncmds;
        }
        for (uint64_t k = 0; k < s.noise_per_op; ++k) {  // journal-like writes no op owns
            Command noise = c;
            noise.op = CmdOp::Write;
            noise.offset = ((i * 7 + k) % 256) * 4096;
            noise.bytes = 4096;
            noise.ts_issue = ts += 1000;
            noise.has_user_data = false;
            noise.user_data = 0;
            on_cmd(noise);
            ++ncmds;
        }
        ts = op.ts + 1000;
    }
    return ncmds;
}

uint64_t synth_write(const SynthSpec& s, const std::string& semantic_path, const std::string& events_path) {
    std::ofstream sem(semantic_path), ev(events_path);
    if (!sem) throw Error(semantic_path + ": cannot write: " + std::strerror(errno));
    if (!ev) throw Error(events_path + ": cannot write: " + std::strerror(errno));
    SemanticMeta m = synth_meta(s);
    json meta = {{"type", "meta"},
                 {"schema", "kvio.semantic/1"},
                 {"model", m.model},
                 {"engine", m.engine},
                 {"layout", m.layout},
                 {"target", "synthetic"},
                 {"dev", m.dev_str},
                 {"lba_bytes", m.lba_bytes},
                 {"block_align", m.block_align},
                 {"mdts_bytes", 0},
                 {"max_io_bytes", m.max_io_bytes},
                 {"max_sectors_kb", m.max_sectors_kb},
                 {"header_bytes", m.header_bytes},
                 {"clock", "CLOCK_MONOTONIC"}};
    sem << meta.dump() << "\n";
    json rec = {{"op", ""},      {"object_id", 0},   {"trace_id", 0},     {"key", ""},
                {"bytes", 0},    {"dev", m.dev_str}, {"dev_off", 0},      {"extents", json::array()},
                {"ts_start", 0}, {"ts", 0},          {"engine", m.engine}};
    json cmd = {{"type", "cmd"}, {"src", "block"}, {"dev", m.dev_str}, {"disk", "synth0"}, {"op", ""},
                {"rwbs", ""},    {"sector", 0},    {"bytes", 0},       {"ts_issue", 0},    {"ts_complete", 0},
                {"d2c_ns", 500}, {"qd", 1},        {"pid", 4242},      {"tid", 4242},      {"comm", "kvio"}};
    const bool tag = s.engine == "io_uring" || s.engine == "uring_cmd";
    // A path ending in .kvb gets the binary capture (kvio.events.bin/1) of the same commands.
    const bool bin = events_path.size() > 4 && events_path.compare(events_path.size() - 4, 4, ".kvb") == 0;
    evbin::Encoder benc;
    kvio_cmd_event be{};
    if (bin) {
        benc.device(evbin::make_device_record(uint32_t(m.dev), uint32_t(m.lba_bytes), m.dev_str, "synth0"));
        be.type = KVIO_EV_CMD;
        be.src = KVIO_SRC_BLOCK;
        be.dev = uint32_t(m.dev);
        be.qd = 1;
        be.owner.pid = be.owner.tid = 4242;
        std::strncpy(be.owner.comm, "kvio", sizeof be.owner.comm - 1);
    }
    std::string line;
    uint64_t n = synth_generate(
        s,
        [&](const ObjectOp& op) {
            rec["op"] = op_kind_name(op.kind);
            rec["object_id"] = op.object_id;
            rec["trace_id"] = op.trace_id;
            rec["key"] = op.key;
            rec["bytes"] =
                op.bytes + (op.kind == OpKind::Store && s.header_bytes ? round_up(s.header_bytes, s.block_align) : 0);
            rec["payload_bytes"] = op.bytes;
            rec["dev_off"] = op.extents[0].off;
            rec["extents"] = json::array({json::array({op.extents[0].off, op.extents[0].len})});
            rec["ts_start"] = op.ts_start;
            rec["ts"] = op.ts;
            sem << rec.dump() << "\n";
        },
        [&](const Command& c) {
            bool w = c.op == CmdOp::Write;
            if (bin) {
                be.opf = w ? uint32_t(KVIO_OP_WRITE | KVIO_F_SYNC) : uint32_t(KVIO_OP_READ);
                be.bytes = uint32_t(c.bytes);
                be.sector = c.offset / 512;
                be.ts_issue = c.ts_issue;
                be.ts_complete = c.ts_issue + 500;
                be.has_user_data = tag && c.has_user_data;
                be.owner.user_data = be.has_user_data ? c.user_data : 0;
                benc.cmd(be);
                if (benc.size() >= (1u << 20)) {
                    ev.write(benc.data(), std::streamsize(benc.size()));
                    benc.clear();
                }
                return;
            }
            cmd["op"] = w ? "write" : "read";
            cmd["rwbs"] = w ? "WS" : "R";
            cmd["sector"] = c.offset / 512;
            cmd["bytes"] = c.bytes;
            cmd["ts_issue"] = c.ts_issue;
            cmd["ts_complete"] = c.ts_issue + 500;
            if (tag && c.has_user_data)
                cmd["user_data"] = c.user_data;
            else
                cmd.erase("user_data");
            line = cmd.dump();
            line += '\n';
            ev.write(line.data(), std::streamsize(line.size()));
        });
    json summary = {
        {"type", "summary"}, {"events", n}, {"dropped", 0}, {"unmatched_completes", 0}, {"negative_deltas", 0}};
    if (bin) {
        benc.json(summary.dump());
        ev.write(benc.data(), std::streamsize(benc.size()));
    } else {
        ev << summary.dump() << "\n";
    }
    if (!sem || !ev) throw Error("synth: write failed (disk full?)");
    return n;
}

}  // namespace kvio::validate
