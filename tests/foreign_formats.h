// Test helper: rewrites kvio's own files in the foreign formats kvio validate reads (docs/formats.md, "Foreign
// inputs"), from the field lists those formats publish, so a test can check that both score the same. Every variant the
// readers accept is exercised on the way: seconds and ns timestamps, decimal and hex user_data, slot_offset and
// slot_dev_off, delete records, the io_uring_cmd and the driver-tracepoint monitor.
#pragma once
#include <sys/sysmacros.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::test {

/// kvio.semantic/1 (kvio gen --semantic) -> LMCache kvio trace, schema 2. `device_path` goes into the meta (the
/// reader resolves it when it exists). The meta carries what LMCache's does (no lba_bytes, no max_sectors_kb:
/// validate them with --lba-bytes / --max-sectors-kb).
inline void kvio_semantic_to_lmcache(const std::string& in, const std::string& out, const std::string& device_path) {
    using nlohmann::json;
    std::ifstream is(in);
    std::ofstream os(out);
    std::string line;
    std::getline(is, line);
    const json m = json::parse(line);
    const std::string engine = m["engine"];
    uint64_t max_io = m.value("max_io_bytes", uint64_t(0));
    if (engine == "uring_cmd" && (!max_io || m.value("mdts_bytes", uint64_t(0)) < max_io)) max_io = m["mdts_bytes"];
    const uint64_t header = m.value("header_bytes", uint64_t(0));
    os << json{{"event_type", "kvio_meta"},
               {"schema", 2},
               {"hostname", "test-host"},
               {"pid", 4242},
               {"instance", "lmcache-0"},
               {"device_path", device_path},
               {"io_engine", engine == "posix" ? "pread" : engine},
               {"block_align", m["block_align"]},
               {"header_bytes", header},
               {"max_data_transfer_size", max_io},
               {"clock_monotonic_ns", 1},
               {"clock_realtime_ns", 2}}
              .dump()
       << "\n";
    size_t n = 0;
    while (std::getline(is, line)) {
        if (line.empty()) continue;
        const json k = json::parse(line);
        const bool store = k["op"] == "store";
        const uint64_t dev_off = k["dev_off"], payload = k.value("payload_bytes", k.value("bytes", uint64_t(0)));
        const uint64_t slot = store ? dev_off : dev_off - header;
        json o = {{"op", k["op"]},
                  {"key", k.value("key", "")},
                  {"object_id", k["object_id"]},
                  {"part", n % 3 == 0   ? "kv"
                           : n % 3 == 1 ? "k"
                                        : "v"},
                  {"bytes", payload},
                  {"pid", 4242},
                  {"instance", "lmcache-0"},
                  {"components", {{"k_bytes", payload / 2}, {"v_bytes", payload - payload / 2}, {"scale_bytes", 0}}},
                  {"shape", {2, 32, 256, 8, 128}},
                  {"dtype", "bfloat16"}};
        if (n % 2) o["slot_dev_off"] = slot;
        o["slot_offset"] = slot;
        // Alternate the published variants: ns integers with a hex user_data, seconds with a plain trace_id.
        const uint64_t tid = k.value("trace_id", uint64_t(0)), ts0 = k["ts_start"], ts1 = k["ts"];
        if (n % 2) {
            char ud[32];
            std::snprintf(ud, sizeof ud, "0x%08llx_%08llx", (unsigned long long)tid,
                          (unsigned long long)(n & 0xffffffff));
            o["user_data"] = ud;
            o["ts_start"] = ts0, o["ts"] = ts1;
        } else {
            o["trace_id"] = tid;
            o["ts_start"] = double(ts0) / 1e9, o["ts"] = double(ts1) / 1e9;
        }
        if (k.contains("error")) o["error"] = k["error"];
        os << o.dump() << "\n";
        if (n == 0)
            os << json{{"op", "delete"}, {"key", o["key"]},     {"object_id", o["object_id"]},
                       {"bytes", 0},     {"slot_offset", slot}, {"ts_start", ts1},
                       {"ts", ts1}}
                      .dump()
               << "\n";
        ++n;
    }
}

enum class MonitorVariant {
    IoUringCmd,        ///< user_data, pid, tid, rdev, comm; nvme_cmp with err
    DriverTracepoint,  ///< disk, hwq, cid; no user_data or pid; nvme_cmp with status
};

/// kvio.events/1 -> NVMe monitor JSONL: a clock_anchor, then per command an nvme_cmd (slba/nlb in `lba_bytes`
/// blocks) and, when it completed, an nvme_cmp; the summary becomes the final drops record.
inline void kvio_events_to_monitor(const std::string& in, const std::string& out, MonitorVariant v,
                                   uint64_t lba_bytes = 512) {
    using nlohmann::json;
    std::ifstream is(in);
    std::ofstream os(out);
    os << json{{"event_type", "clock_anchor"}, {"monotonic_ns", 1000}, {"realtime_ns", 1700000000000000000ull}}.dump()
       << "\n";
    std::string line;
    uint64_t cid = 0;
    while (std::getline(is, line)) {
        if (line.empty()) continue;
        const json e = json::parse(line);
        const std::string type = e["type"];
        if (type == "summary") {
            os << json{{"event_type", "drops"}, {"dropped", e.value("dropped", uint64_t(0))}}.dump() << "\n";
            continue;
        }
        if (type != "cmd") continue;
        const std::string op = e["op"];
        const bool data = op == "read" || op == "write";
        const uint64_t bytes = e["bytes"], offset = e["src"] == "nvme"
                                                        ? e["slba"].get<uint64_t>() * (bytes / e["nlb"].get<uint64_t>())
                                                        : e["sector"].get<uint64_t>() * 512;
        unsigned maj = 0, min = 0;
        std::sscanf(e["dev"].get<std::string>().c_str(), "%u:%u", &maj, &min);
        json c = {{"event_type", "nvme_cmd"},
                  {"nvme_opcode", op == "write"  ? 1
                                  : op == "read" ? 2
                                                 : 0},
                  {"op_name", data || op == "flush" ? op : "other"},
                  {"nsid", 1},
                  {"slba", data ? offset / lba_bytes : 0},
                  {"nlb", data ? bytes / lba_bytes : 0},
                  {"bytes", bytes},
                  {"data_len", bytes},
                  {"ts", e["ts_issue"]}};
        json cmp = {{"event_type", "nvme_cmp"}, {"lat_ns", e.value("d2c_ns", uint64_t(0))}, {"hwq", 1}, {"cid", cid}};
        if (v == MonitorVariant::IoUringCmd) {
            c["pid"] = e.value("pid", 0), c["tid"] = e.value("tid", 0), c["comm"] = e.value("comm", "");
            c["multipath"] = false, c["cmd_op"] = "0xc0484e83", c["rdev"] = uint64_t(::makedev(maj, min));
            if (e.contains("user_data")) c["user_data"] = e["user_data"], cmp["user_data"] = e["user_data"];
            cmp["err"] = e.value("error", 0);
        } else {
            c["disk"] = e["disk"], c["hwq"] = 1, c["cid"] = cid;
            cmp["status"] = e.value("error", 0);
        }
        os << c.dump() << "\n";
        if (e.contains("ts_complete")) {
            cmp["ts"] = e["ts_complete"];
            os << cmp.dump() << "\n";
        }
        cid = (cid + 1) % 1024;
    }
}

}  // namespace kvio::test
