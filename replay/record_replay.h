// `kvio replay --record`: reissue a recorded object stream (kvio gen --record manifest) on another target
// through the workload library (engines, layout arithmetic, executor, semantic writer, safety checks),
// re-split for the target's LBA size and transfer limits, with a semantic trace `kvio validate` can score.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "workload/gen.h"
#include "workload/record.h"

namespace kvio::replay {

struct RecordReplayOptions {
    std::string record;         ///< manifest path (schema_version 1)
    std::string target;         ///< block device, /dev/ngXnY, regular file (slots) or directory (files)
    std::string engine;         ///< empty: the manifest's
    uint32_t iters = 0;         ///< 0: the manifest's stream as recorded; N: the pattern rebuilt with N iterations
    uint32_t qd = 0;            ///< 0: the manifest's
    std::string semantic_path;  ///< kvio.semantic/1 JSONL of the replay, empty = none
    bool force = false;         ///< overwrite data in the first MiB or in the slots (never a mounted device)
    std::ostream* progress = nullptr;
    const volatile sig_atomic_t* stop = nullptr;  ///< see workload::GenOptions::stop
};

/// The device geometry for `target` derived from the recorded one: LBA size, MDTS and the transfer cap
/// min(recorded max_io_bytes, workload::default_max_io(target)) — the recorded commands stay identical
/// when the target allows them and are re-split when it does not — then the slot arithmetic
/// (workload::compute_layout) redone for the new LBA size. `notes` gets one line per changed value.
/// Throws kvio::Error when the slot header does not fit the new transfer cap.
workload::DeviceGeometry regeometry(const workload::Record& rec, const workload::TargetInfo& t,
                                    const std::string& engine, std::vector<std::string>& notes);

struct RecordReplayResult {
    workload::Record record;         ///< the stream as replayed (new geometry, qd, iters)
    std::vector<std::string> notes;  ///< what changed against the manifest
    uint64_t checked_bytes = 0;      ///< slot bytes verified empty before writing
    workload::GenSummary summary;
};

/// Reads the manifest, checks the target (workload::check_device_safe; slots about to be written must be
/// zero or hold a kvio slot header, unless force), grows a regular file, then runs it (workload::run_record).
/// Throws kvio::Error before any byte is written for refusals and malformed manifests (naming the field).
RecordReplayResult replay_record(const RecordReplayOptions& o);

/// Notes, then workload::print_summary of the run.
void print_record_replay(std::ostream& os, const RecordReplayOptions& o, const RecordReplayResult& r);

}  // namespace kvio::replay
