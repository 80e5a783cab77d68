// `kvio gen` as a library call: inspect and check the target, lay objects out, run the object stream
// on an engine, write the --semantic JSONL and the --record manifest, and summarise.
#pragma once
#include <csignal>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/execute.h"
#include "workload/geometry.h"
#include "workload/pattern.h"
#include "workload/record.h"
#include "workload/target.h"

namespace kvio::workload {

struct GenOptions {
    Geometry geometry;
    std::string target;  ///< block device, /dev/ngXnY, regular file or directory
    std::string engine = "posix";
    std::optional<Layout> layout;  ///< default: files for a directory, slots otherwise
    uint64_t num_chunks = 8;       ///< chunks; objects = num_chunks × tp
    std::string pattern = "store-then-load";
    uint32_t iters = 1;
    uint32_t qd = 1;
    bool buffered = false;
    uint64_t max_io_bytes = 0;  ///< 0: default_max_io() of the target
    uint32_t block_align = 4096;
    std::string semantic_path;         ///< kvio.semantic/1 JSONL, empty = none
    std::string record_path;           ///< record manifest, empty = none
    bool force = false;                ///< overwrite a device holding data in its first MiB
    Verify verify = Verify::Stamps;    ///< load check and checksum coverage (workload/pattern.h)
    std::ostream* progress = nullptr;  ///< progress lines (stderr), at most one per second
    /// A signal handler's flag (ExecOptions::stop): once non-zero the ops in flight finish, no new one starts, and
    /// --semantic and --record hold exactly the completed ops. nullptr: run to the end.
    const volatile sig_atomic_t* stop = nullptr;
    /// The user's second stop signal (ExecOptions::cut): the ops in flight end at their transfers in flight,
    /// counted in GenSummary::cut_ops and left out of --semantic and --record (their bytes are on the target but
    /// belong to no op). nullptr: a stop always finishes the started ops.
    const volatile sig_atomic_t* cut = nullptr;
};

/// Per op kind: counts, bytes, op latencies (ts - ts_start) in ns.
struct OpStats {
    uint64_t ops = 0, bytes = 0, errors = 0;
    uint64_t first_start = 0, last_end = 0;  ///< CLOCK_MONOTONIC ns
    uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
    double mb_per_s() const;  ///< bytes / (last_end - first_start), 10^6 bytes per s
};

struct GenSummary {
    TargetInfo target;
    DeviceGeometry device;
    OpStats store, load;
    uint64_t elapsed_ns = 0;               ///< executor call: buffer setup, opens, all ops (ns)
    uint64_t io_ns = 0;                    ///< first op's ts_start to last op's ts: what the total MB/s divides by,
                                           ///< like fio's job runtime (which excludes buffer allocation and open too)
    std::string first_error;               ///< empty when every op succeeded and verified
    uint64_t ops_planned = 0;              ///< ops of the record
    std::vector<uint32_t> done_trace_ids;  ///< trace_id of every completed op, in completion order
    uint64_t cut_ops = 0;                  ///< ops started but given up at a second stop signal (GenOptions::cut)
    int stopped_by = 0;                    ///< the stop flag's value (a signal number) when ops were left out, else 0
};

/// Runs the whole generation. A missing --target is created: a regular file (slots; not under /dev) or, with
/// --layout files, a directory; it is removed again when a refusal follows. Throws kvio::Error for refusals
/// (mounted/read-only/non-empty target, engine/target or layout/target mismatch, too small a target) before any
/// byte is written. A stop (GenOptions::stop) writes --record with the completed ops only (objects without one
/// are left out).
GenSummary run_gen(const GenOptions& o);

/// The layout for target `t`: `asked`, or files for a directory and slots otherwise. Throws kvio::Error when the
/// two do not fit (files need a directory; slots a block device, /dev/ngXnY or a regular file).
Layout resolve_layout(std::optional<Layout> asked, const TargetInfo& t);

/// Room for `nobj` objects in directory target `t` (files layout): its free space plus the bytes the object files
/// kvobj-0..nobj-1.bin already there hold (st_blocks × 512), since a store truncates and rewrites its file.
uint64_t files_layout_room(const TargetInfo& t, uint64_t nobj);

/// How run_record() runs a planned record (engine, qd and buffering come from the record itself).
struct RunOptions {
    std::string semantic_path;                    ///< kvio.semantic/1 JSONL, empty = none
    std::ostream* progress = nullptr;             ///< progress lines, at most one per second
    std::string label = "kvio gen";               ///< prefix of the progress lines
    Verify verify = Verify::Stamps;               ///< load check and checksum coverage (workload/pattern.h)
    const volatile sig_atomic_t* stop = nullptr;  ///< see GenOptions::stop
    const volatile sig_atomic_t* cut = nullptr;   ///< see GenOptions::cut
    /// run_ops() only: per op, ns after the schedule's anchor before which it must not start (ExecOptions::not_before).
    const std::vector<uint64_t>* not_before = nullptr;
    /// Called after each op completed and its semantic record was written (the op's index in the ops list).
    std::function<void(size_t index, const ObjectOp&, const OpResult&)> on_done;
    /// Keys added to the semantic meta line (after semantic_meta's).
    nlohmann::ordered_json meta_extra = nlohmann::ordered_json::object();
};

/// Runs `ops` (any sizes and offsets, e.g. a replayed trace's) on target `t` with the engine, qd, buffering and
/// transfer cap of `rec` (whose objects are not used), writing the semantic JSONL with semantic_meta(rec, t) as
/// its meta. The caller has inspected and checked `t`. Throws kvio::Error when the engine or target fails.
GenSummary run_ops(const std::vector<ObjectOp>& ops, const Record& rec, const TargetInfo& t, const RunOptions& o);

/// Runs the ops of `rec` (plan_ops) on target `t` with engine rec.device.engine, qd rec.access.qd, and
/// writes the semantic JSONL. The caller has inspected and checked `t` (check_device_safe, room for the
/// layout). Used by run_gen() and by `kvio replay --record`. Throws kvio::Error when the engine or target fails.
GenSummary run_record(const Record& rec, const TargetInfo& t, const RunOptions& o);

/// Refuses an engine/target pair that cannot work: uring_cmd needs /dev/ngXnY, the others cannot drive it.
void check_engine_target(const std::string& engine, const TargetInfo& t);

/// Grows the regular file `path` with fallocate to at least `need` bytes (every slot allocated before a run).
void preallocate(const std::string& path, uint64_t need);

/// Nearest-rank percentile `p` (0..100) of sorted `v`; 0 when empty.
uint64_t percentile(const std::vector<uint64_t>& v, double p);

/// Prints the final summary (objects, bytes, MB/s, op latency p50/p99).
void print_summary(std::ostream& os, const GenOptions& o, const GenSummary& s);

}  // namespace kvio::workload
