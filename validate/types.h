// The records validate works on: object ops (from kvio.semantic/1) and device commands (from kvio.events/1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/events_reader.h"

namespace kvio::validate {

/// Direction of an object op. A store writes (header + payload), a load reads (payload).
enum class OpKind : uint8_t { Store = 0, Load = 1 };
inline constexpr int kOpKinds = 2;
inline const char* op_kind_name(OpKind k) { return k == OpKind::Store ? "store" : "load"; }

/// One byte range on the whole-disk device: [off, off + len), bytes.
struct Extent {
    uint64_t off = 0;
    uint64_t len = 0;
};

/// One object op of a kvio.semantic/1 record line. Timestamps CLOCK_MONOTONIC ns.
struct ObjectOp {
    OpKind kind = OpKind::Store;
    uint64_t object_id = 0;
    uint64_t trace_id = 0;        ///< io_uring engines put it in user_data >> 32; 0 = none
    std::string key;              ///< object key (joins NVMe KV commands)
    uint64_t bytes = 0;           ///< payload bytes of the object (`payload_bytes`, else `bytes`), header not included
    uint32_t dev = 0;             ///< whole-disk device, kernel dev_t (MAJOR << 20 | MINOR)
    std::vector<Extent> extents;  ///< whole-disk byte ranges in file/slot logical order, header included
    uint64_t ts_start = 0, ts = 0;
    bool failed = false;  ///< the record carries "error": joined, but not scored
    size_t line = 0;      ///< line in the semantic file, for messages
    /// The op's file (`kvio import vllm-fs|lmcache-disk`): `ino`, `fs_dev`, `gen` all present (has_file) or none;
    /// `path` relative to the imported directory, "" when absent (docs/engine_layouts.md).
    bool has_file = false;
    std::string fs_dev, path;
    uint64_t ino = 0, gen = 0;
};

/// Direction of a device command (kvio.events/1 `op`).
using CmdOp = kvio::IoOp;

/// One device command (kvio.events/1 `"type":"cmd"`), reduced to what the join needs.
struct Command {
    bool nvme = false;               ///< src "nvme" (else "block")
    bool passthrough_block = false;  ///< src "block" with 'N' in rwbs: a passthrough request with no LBA
    CmdOp op = CmdOp::Other;
    uint32_t dev = 0;     ///< whole-disk device, kernel dev_t
    uint64_t offset = 0;  ///< start byte on the whole disk: sector × 512, NVMe slba × LBA bytes
    uint64_t bytes = 0;
    uint64_t ts_issue = 0;  ///< ns
    uint64_t user_data = 0;
    bool has_user_data = false;
    std::string key;  ///< NVMe KV command set key; empty when absent
};

}  // namespace kvio::validate
