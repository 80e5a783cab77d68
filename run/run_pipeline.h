// `kvio run`: the whole story on one device — gen under trace, validate, distill, verify, report.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::run {

/// The serving workload of `kvio run --workload simulate`: `kvio simulate` on ext4 over the embedded loop device,
/// with --enable-latency-tracing --trace-syscalls --trace-dir OUT (simulate runs the tracer and validates).
struct SimulateWorkload {
    std::string model = "tiny-1b";  ///< the MLPerf KV benchmark's model: 24,576 B/token
    uint32_t num_users = 4;
    double duration_s = 20;
    std::string storage_io = "direct";  ///< direct: every op projects exactly; buffered: the benchmark's pattern
    std::string generation_mode = "realistic";
    uint64_t image_bytes = 1ull << 30;    ///< the ext4 image (sparse); the storage tier takes 95 % of its free space
    std::vector<std::string> extra_args;  ///< appended to simulate's arguments (a repeated flag takes the last value)
};

/// What to run. Model options are passed to `kvio gen` as given (empty = gen's default).
struct RunOptions {
    std::string workload = "objects";  ///< "objects" (kvio gen's stores then loads) or "simulate" (SimulateWorkload)
    SimulateWorkload sim;
    std::string target;                   ///< block device, file or directory for gen; "" = embedded loop device
    std::vector<std::string> model_args;  ///< --model/--hf-config/--kv-dtype/--chunk-tokens/--tp as gen takes them
    uint64_t object_bytes = 0;            ///< one object's payload (per-rank bytes), sizes the embedded image
    uint64_t objects = 0;                 ///< objects gen writes (num_chunks × tp), sizes the embedded image
    std::string engine = "posix";
    std::string layout;  ///< "slots", "files", or "" = files for a directory target, slots otherwise
    uint64_t num_chunks = 8;
    std::string out_dir;  ///< created if absent; must be empty if present
    bool keep = false;    ///< keep the image files (detached) instead of removing them
    bool force = false;   ///< write a --target whose first MiB holds data (never a mounted one)
    std::string kvio_exe = "/proc/self/exe";
    std::ostream* progress = nullptr;  ///< one line per stage (stderr)
    /// `--workload simulate`: checks simulate's arguments (what follows "simulate") as simulate's own parser would,
    /// before a device is touched (the CLI gives cli::check_simulate_args); throws kvio::Error. Empty: not checked.
    std::function<void(const std::vector<std::string>&)> check_simulate_args;
};

/// Raised when SIGINT/SIGTERM/SIGHUP stopped the run; everything created was already cleaned up.
struct Interrupted : std::exception {
    int signo;
    /// Stopped during gen: validate's summary line of the ops gen completed (OUT/validate.json, validate.txt), or
    /// "not scored: WHY"; "" when stopped in another stage.
    std::string validated;
    explicit Interrupted(int s) : signo(s) {}
    const char* what() const noexcept override { return "interrupted"; }
};

/// What a completed run wrote and scored: the document also written to OUT/run.json.
/// Keys: schema "kvio.run/1", options, target {path, disk, dev, embedded}, verify_target, stages [{name, seconds}],
/// validate (kvio.validate/1 report), fidelity (distiller to_json), job (fio options), files {name: path}.
/// A run stopped by a signal writes OUT/run.json too, with the stages done, "interrupted" {signal, signal_name,
/// stage, validated} and only the files it wrote, and throws Interrupted.
struct RunResult {
    nlohmann::json doc;
    std::string summary_line;  ///< validate's one-line summary
    std::string report_path;   ///< OUT/report.html
};

/// Runs every stage. Embedded devices (sparse OUT/*.img on loop devices with --direct-io=on) are detached
/// and removed when it returns, throws, or is stopped by SIGINT/SIGTERM (forwarded to the running stage's
/// process group, then Interrupted is thrown after cleanup). Throws kvio::Error when a stage fails
/// (naming the stage, its error and its log file), when OUT is not empty or its filesystem lacks the room
/// run_dir_bytes() estimates, when the target, engine and layout do not fit (checked before anything is traced),
/// or without root. Stopped during gen, the ops gen completed are scored first (Interrupted::validated).
RunResult run_all(const RunOptions& o);

/// Bytes of a run's file outputs per device command (events.jsonl, replay.events.jsonl, job.iolog, report.html),
/// and the rest (logs, JSON reports). Measured: a 4-chunk llama3.1-8b run wrote 617 KB for 517 commands (1.05 KiB each:
/// 225 B events, 512 B replay events, 40 B iolog, 273 B report) and 60 KB of the rest; both doubled or more here.
inline constexpr uint64_t kOutputBytesPerCmd = 2048;
inline constexpr uint64_t kOutputFixedBytes = 4 << 20;
/// The command size run_dir_bytes() assumes for the embedded loop device before it exists: 128 KiB, below the
/// 512 KiB (max_segments 128 × 4 KiB) loop devices split at here, so the estimate errs high.
inline constexpr uint64_t kEmbeddedCapGuess = 128 * 1024;

/// Bytes a simulate run needs under --out: its ext4 image and the verify image (image_bytes each, both may fill),
/// plus kOutputBytesPerCmd per 4 KiB of the image written twice (its commands are at least 4 KiB: ext4's block),
/// an upper bound while the storage tier rewrites its space, plus kOutputFixedBytes.
uint64_t simulate_run_dir_bytes(uint64_t image_bytes);

/// `kvio simulate`'s arguments for the simulate workload: --model, --num-users, --duration, --gpu-mem-gb 0,
/// --cpu-mem-gb 0 (every entry reaches the traced storage tier), --generation-mode, --seed 42, --storage-io,
/// --cache-dir CACHE_DIR, --enable-latency-tracing --trace-syscalls --trace-dir OUT, --output OUT/simulate.json,
/// --quiet, then extra_args.
std::vector<std::string> simulate_argv(const std::string& exe, const SimulateWorkload& w, const std::string& cache_dir,
                                       const std::string& out);

/// Bytes a run needs under --out: the sparse target image (embedded only) and the verify image as the writes fill
/// them (image_bytes each), plus kOutputBytesPerCmd for each of the objects × (1 + 2 × ceil(object_bytes / cap))
/// commands of the stores and loads, plus kOutputFixedBytes.
uint64_t run_dir_bytes(uint64_t objects, uint64_t object_bytes, uint64_t cap_bytes, bool embedded);

/// Bytes of the embedded image for `objects` objects of `object_bytes` in the slots layout
/// (1 MiB metadata region + objects × round_up(4096 + object_bytes, 4096)), plus 1 MiB, rounded up to 1 MiB.
uint64_t image_bytes(uint64_t objects, uint64_t object_bytes);

}  // namespace kvio::run
