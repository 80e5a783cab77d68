// The KV-centric line of `kvio drives`: what a drive's measured bandwidth means for one KV object of a model (time to
// store it, time to load it, and how many users' loads it sustains). docs/drives.md, "The KV line".
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::drives {

/// The KV object the line is about: one rank's object of the model's geometry (workload::Geometry::per_rank_bytes:
/// bytes per token of one rank × chunk tokens), named for the reader. `user_objects_per_s`: how many such objects
/// one user loads per second (the demand a "user" stands for; `--kv-user-rate`).
struct KvObject {
    std::string label;  ///< e.g. "llama3.1-8b bf16, 256-token chunk, tp 1"
    uint64_t bytes = 0;
    double user_objects_per_s = 1;
};

/// One drive's line. Times in ms, rates per second; each < 0 when the workload moved nothing in that direction
/// (a read-only job has no store time).
struct KvLine {
    double store_ms = -1;     ///< object bytes ÷ the write bandwidth measured under the job's mix
    double load_ms = -1;      ///< object bytes ÷ the read bandwidth measured under the job's mix
    double loads_per_s = -1;  ///< read bandwidth ÷ object bytes
    double users = -1;        ///< loads_per_s ÷ KvObject::user_objects_per_s
};

/// The line for a drive whose run read `read_bytes_per_s` and wrote `write_bytes_per_s` (bytes/s, both measured
/// in one run of the mixed workload; 0: that direction was idle). Object bytes must be > 0.
KvLine kv_line(const KvObject& obj, double read_bytes_per_s, double write_bytes_per_s);

/// {"store_ms", "load_ms", "loads_per_s", "users"}, null for a direction the workload did not move.
nlohmann::json kv_line_json(const KvLine& l);

/// "KV NAME: store 25.1 ms, load 12.3 ms per 32.0 MiB object; 81 loads/s = 81 users at 1 object/s each" (a "-"
/// for a direction the workload did not move).
std::string kv_line_text(const std::string& drive, const KvObject& obj, const KvLine& l);

}  // namespace kvio::drives
