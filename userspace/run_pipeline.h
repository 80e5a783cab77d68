// `kvio run`: the whole story on one device — gen under trace, validate, distill, verify, report.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::run {

/// What to run. Model options are passed to `kvio gen` as given (empty = gen's default).
struct RunOptions {
    std::string target;                 ///< block device, file or directory for gen; "" = embedded loop device
    std::vector<std::string> model_args;///< --model/--hf-config/--kv-dtype/--chunk-tokens/--tp as gen takes them
    uint64_t object_bytes = 0;          ///< one object's payload (per-rank bytes), sizes the embedded image
    uint64_t objects = 0;               ///< objects gen writes (num_chunks × tp), sizes the embedded image
    std::string engine = "posix";
    std::string layout = "slots";
    uint64_t num_chunks = 8;
    std::string out_dir;                ///< created if absent; must be empty if present
    bool keep = false;                  ///< keep the image files (detached) instead of removing them
    bool force = false;                 ///< write a --target whose first MiB holds data (never a mounted one)
    std::string kvio_exe = "/proc/self/exe";
    std::ostream* progress = nullptr;   ///< one line per stage (stderr)
};

/// Raised when SIGINT/SIGTERM/SIGHUP stopped the run; everything created was already cleaned up.
struct Interrupted : std::exception {
    int signo;
    explicit Interrupted(int s) : signo(s) {}
    const char* what() const noexcept override { return "interrupted"; }
};

/// What a completed run wrote and scored: the document also written to OUT/run.json.
/// Keys: schema "kvio.run/1", options, target {path, disk, dev, embedded}, verify_target, stages [{name, seconds}],
/// validate (kvio.validate/1 report), fidelity (distiller to_json), job (fio options), files {name: path}.
struct RunResult {
    nlohmann::json doc;
    std::string summary_line;   ///< validate's one-line summary
    std::string report_path;    ///< OUT/report.html
};

/// Runs every stage. Embedded devices (sparse OUT/*.img on loop devices with --direct-io=on) are detached
/// and removed when it returns, throws, or is stopped by SIGINT/SIGTERM (forwarded to the running stage's
/// process group, then Interrupted is thrown after cleanup). Throws kvio::Error when a stage fails
/// (naming the stage and its log file), when OUT is not empty, or without root.
RunResult run_all(const RunOptions& o);

/// Bytes of the embedded image for `objects` objects of `object_bytes` in the slots layout
/// (1 MiB metadata region + objects × round_up(4096 + object_bytes, 4096)), plus 1 MiB, rounded up to 1 MiB.
uint64_t image_bytes(uint64_t objects, uint64_t object_bytes);

}  // namespace kvio::run
