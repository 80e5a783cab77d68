// SimConfig defaults, the flag table, the benchmark's argument checks and bytes/token (docs/mlperf-benchmark.md,
// "Command line and validation", "Model geometry"). The YAML loader lives in config_yaml.cpp.
#include "workload/serving/config.h"

#include <unistd.h>

#include <bit>
#include <cmath>
#include <type_traits>
#include <filesystem>
#include <sstream>
#include <sys/stat.h>

#include "common/error.h"
#include "redis/url.h"

namespace kvio::serving {

YamlSettings default_yaml_settings() {
    YamlSettings y;
    y.user_templates = {
        {"chatbot", {{512, 4096}, {50, 200}, {0.1, 0.5}}},
        {"coding", {{4096, 25000}, {100, 500}, {0.2, 1.0}}},
        {"document", {{4096, 16384}, {200, 800}, {0.3, 1.5}}},
    };
    y.qos_profiles = {
        {"interactive", {50, 100, 150, 200, 3}},
        {"responsive", {100, 200, 350, 500, 2}},
        {"batch", {1000, 5000, 7500, 10000, 1}},
    };
    return y;
}

const std::vector<FlagSpec>& flag_table() {
    using C = SimConfig;
    // kv-cache.py's 40 add_argument calls in cli.py order (docs/mlperf-benchmark.md, "Command line and validation"),
    // then kvio's own flags.
    static const std::vector<FlagSpec> t = {
        {"--log-level", "choice", "INFO", "Logging level.", false, &C::log_level, "DEBUG|INFO|WARNING|ERROR|CRITICAL"},
        {"--model", "str", "llama3.1-8b",
         "Model whose KV geometry sizes every entry (bytes/token); config.yaml model_configs add or override "
         "models.",
         false, &C::model},
        {"--num-users", "int", "100",
         "Simulated users (open loop, each with its own think time); workers = min(users, 500).", false, &C::num_users},
        {"--duration", "int", "60", "Run length in seconds.", false, &C::duration},
        {"--gpu-mem-gb", "float", "16",
         "GPU tier budget per GPU in GiB (total = value × --num-gpus); 0 disables the tier.", false, &C::gpu_mem_gb},
        {"--num-gpus", "int", "1", "Number of GPUs; multiplies the GPU tier budget only.", false, &C::num_gpus},
        {"--tensor-parallel", "int", "1",
         "Tensor-parallel degree: each stored object is 1/TP of the full entry; at most --num-gpus.", false,
         &C::tensor_parallel},
        {"--cpu-mem-gb", "float", "32", "CPU RAM tier budget in GiB; 0 disables the tier.", false, &C::cpu_mem_gb},
        {"--cache-dir", "str", "None",
         "Storage tier directory (or a raw block device); default a temporary kv_cache_PID_XXXXXX directory removed at "
         "exit; a later run removes those whose PID no longer runs (a SIGKILLed run could not).",
         false, &C::cache_dir},
        {"--generation-mode", "choice", "realistic",
         "Sleep per generated token: none 0 ms, fast 2 ms, realistic 30 ms.", false, &C::generation_mode,
         "none|fast|realistic"},
        {"--performance-profile", "choice", "latency", "Pass/fail criteria of the storage assessment.", false,
         &C::performance_profile, "latency|throughput"},
        {"--disable-multi-turn", "flag", "off", "No conversations: one key per request, no re-reads of earlier turns.",
         false, &C::disable_multi_turn},
        {"--disable-prefix-caching", "flag", "off", "No system-prompt prefix lookups.", false,
         &C::disable_prefix_caching},
        {"--enable-rag", "flag", "off", "Ingest RAG documents and issue RAG chunk reads.", false, &C::enable_rag},
        {"--rag-num-docs", "int", "10", "RAG documents ingested.", false, &C::rag_num_docs},
        {"--enable-autoscaling", "flag", "off",
         "Run the autoscaler: every --autoscaler-interval s (10) it decides a user count, and kvio starts or parks "
         "user threads (workers follow min(users, 500)) so the offered load follows.",
         false, &C::enable_autoscaling},
        {"--autoscaler-mode", "choice", "qos",
         "Autoscaler goal: qos (users × 1.2 while storage saturation is below 0.9 × --target-saturation, × 0.8 after "
         "two ticks above 1.1 ×, 3-tick cooldown) or capacity (add users while per-interval tokens/s sets a new peak; "
         "stop after two ticks without one: Peak capacity found).",
         false, &C::autoscaler_mode, "qos|capacity"},
        {"--target-saturation", "float", "0.8", "Autoscaler target storage saturation, 0.0 to 1.0 (qos mode).", false,
         &C::target_saturation},
        {"--use-burst-trace", "flag", "off",
         "Replay a BurstGPT CSV (--burst-trace-path) instead of synthetic users: arrivals paced by its Timestamp "
         "column / --trace-speedup, context = Request tokens, generation = Response tokens.",
         false, &C::use_burst_trace},
        {"--burst-trace-path", "str", "BurstGPT/data/BurstGPT_1.csv",
         "BurstGPT CSV: a file, a directory of *.csv (sorted) or a glob.", false, &C::burst_trace_path},
        {"--validation-trace", "str", "None",
         "JSON list of RealTraceEntry records; the run's cache hit rate is compared with the trace's "
         "(results.validation, passed within 5 %). A missing or malformed file is refused.",
         false, &C::validation_trace},
        {"--dataset-path", "str", "None",
         "ShareGPT JSON to replay instead of synthetic users (takes precedence over --use-burst-trace): each human → "
         "gpt pair is one request, tokens = characters // 4.",
         false, &C::dataset_path},
        {"--max-conversations", "int", "500", "ShareGPT conversations loaded.", false, &C::max_conversations},
        {"--output", "str", "benchmark_results_<YYYYmmdd_HHMMSS>.json", "Results JSON path.", false, &C::output},
        {"--seed", "int", "None",
         "Seed of the user table and request draws (CPython random, bit for bit) and of the noise data.", false,
         &C::seed},
        {"--max-concurrent-allocs", "int", "0", "Cache writes in flight at once (0 = unlimited).", false,
         &C::max_concurrent_allocs},
        {"--request-rate", "float", "0", "ShareGPT replay rate in requests/s (0 = as fast as possible).", false,
         &C::request_rate},
        {"--max-requests", "int", "0", "Stop after this many completed requests (0 = duration only).", false,
         &C::max_requests},
        {"--xlsx-output", "str", "None",
         "XLSX export of the results (sheets Summary, Run Parameters, Performance Metrics, QoS Metrics, Device "
         "Tracing, Trace Histograms); a name not ending in .xlsx, or a build without libxlsxwriter, writes the Summary "
         "row as CSV.",
         false, &C::xlsx_output},
        {"--config", "str", "None",
         "config.yaml with the benchmark's schema (strict); without it the code defaults apply.", false, &C::config},
        {"--storage-capacity-gb", "float", "0",
         "Storage tier limit in GiB (0 = 95 % of the free space of --cache-dir).", false, &C::storage_capacity_gb},
        {"--precondition", "flag", "off",
         "Before measuring, write 2048-token precond_<n> entries through the tiers until --precondition-size-gb, then "
         "reset the counters (the entries stay).",
         false, &C::precondition},
        {"--precondition-size-gb", "float", "0",
         "Preconditioning volume in GiB (0 = 2 × the storage tier limit; skipped with a warning when the tier is "
         "unlimited).",
         false, &C::precondition_size_gb},
        {"--precondition-threads", "int", "0", "Preconditioning writer threads (0 = online CPUs).", false,
         &C::precondition_threads},
        {"--trace-speedup", "float", "1.0", "BurstGPT inter-arrival divisor (0 = no sleeping).", false,
         &C::trace_speedup},
        {"--replay-cycles", "int", "0",
         "Passes over the BurstGPT/ShareGPT data (0 = until --duration); a finite replay ends once its last request "
         "completed (queued requests are drained, not dropped as in the benchmark).",
         false, &C::replay_cycles},
        {"--prefill-only", "flag", "off",
         "Skip the decode reads (step 5); multi-turn, prefix and RAG reads remain (add --disable-multi-turn "
         "--disable-prefix-caching for writes only).",
         false, &C::prefill_only},
        {"--decode-only", "flag", "off",
         "Prepopulate num_users × 10 entries of 2048 tokens (progress on stderr), reset the counters, then only read: "
         "decode reads pick a random prepopulated entry, no prefill or multi-turn steps.",
         false, &C::decode_only},
        {"--io-trace-log", "str", "None",
         "Logical mode: no I/O; one CSV row per cache op (Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase); .zst "
         "compresses.",
         false, &C::io_trace_log},
        {"--enable-latency-tracing", "flag", "off",
         "Trace the run's own storage I/O with kvio's tracer; adds device_latency_tracing, fio_workload and "
         "kvio.validation.",
         false, &C::enable_latency_tracing},
        // kvio's additions
        {"--storage-io", "choice", "buffered",
         "Storage tier I/O: buffered (the benchmark's pattern: header + data, one buffered write, fsync; reads after "
         "POSIX_FADV_DONTNEED), direct (O_DIRECT) or io_uring (O_DIRECT).",
         true, &C::storage_io, "buffered|direct|io_uring"},
        {"--storage-qd", "int", "8", "io_uring: transfers in flight per storage op.", true, &C::storage_qd},
        {"--max-io-bytes", "int", "0",
         "direct/io_uring transfer cap in bytes, a multiple of 4096 (0 = the device's limit).", true, &C::max_io_bytes},
        {"--gpu-bandwidth-gbps", "float", "64", "Host↔GPU bandwidth of the GPU tier model in 10^9 bytes/s.", true,
         &C::gpu_bandwidth_gbps},
        {"--gpu-tier", "choice", "auto",
         "GPU tier: cuda (real copies; needs a CUDA build and a GPU), model (capacity + bandwidth), auto (cuda when "
         "available).",
         true, &C::gpu_tier, "auto|model|cuda"},
        {"--trace-dir", "str", "None",
         "With --enable-latency-tracing: keep the events, semantic and trace files in this directory.", true,
         &C::trace_dir},
        {"--trace-syscalls", "flag", "off",
         "With --enable-latency-tracing: the events also hold each syscall on the cache device (kvio trace --syscalls; "
         "a timeline's thread tracks).",
         true, &C::trace_syscalls},
        {"--verify-reads", "flag", "off",
         "Check every byte the storage tier reads against what was written (the noise pool and each block's stamp); "
         "a wrong byte fails the read, naming the entry and offset. --storage-io buffered only.",
         true, &C::verify_reads},
        {"--force", "flag", "off",
         "Raw block device as --cache-dir: write even if it holds data (a mounted device is always refused).", true,
         &C::force},
        {"--remote-tier", "str", "None",
         "A Redis/Valkey server as a KV tier between CPU and storage (the last tier without --cache-dir): "
         "redis://[user:pass@]HOST:PORT[/DB]; every client of the run shares its entries.",
         true, &C::remote_tier},
        {"--remote-capacity-gb", "float", "0",
         "Remote tier limit in GiB of server memory per client (0 = the server's maxmemory less what it used at "
         "start, divided by the run's clients; unlimited without maxmemory).",
         true, &C::remote_capacity_gb},
        {"--remote-run-id", "str", "None",
         "Key prefix of the remote tier's entries (default: made at start and shared by every client of the run).",
         true, &C::remote_run_id},
        {"--remote-write-mode", "choice", "through",
         "Remote tier writes: through (an op completes when the server acknowledged it) or back (when queued; a "
         "background writer per connection sends it, and writes queued at a fault or the run's end are lost).",
         true, &C::remote_write_mode, "through|back"},
        {"--remote-connections", "choice", "shared",
         "Remote tier connections per worker thread: shared (one carries its SETs and GETs) or split (a write "
         "connection for its SETs, a read connection for its GETs and DELs).",
         true, &C::remote_connections, "shared|split"},
        {"--remote-writeback-queue", "int", "8",
         "--remote-write-mode back: writes queued per connection at most; a full queue makes the op wait.", true,
         &C::remote_writeback_queue},
        {"--remote-handoff-probability", "float", "0",
         "Before a conversation's next turn, the chance (0-1) that the user returns to another client of the run "
         "(--num-clients, --mpi), which reads the earlier turns from the remote tier.",
         true, &C::remote_handoff_probability},
        {"--progress-interval", "float", "1.0", "Seconds between progress lines on stderr (0 = none).", true,
         &C::progress_interval_s},
        {"--quiet", "flag", "off", "No console report (the results JSON is still written).", true, &C::quiet},
        {"--autoscaler-interval", "float", "10",
         "Seconds between autoscaler decisions (the benchmark's fixed scale_interval is 10).", true,
         &C::autoscaler_interval_s},
        {"--storage-throttle-mibps", "float", "0",
         "Test hook: serve storage-tier reads and writes first come, first served at this bandwidth in MiB/s, like a "
         "slow device; the wait counts as device time (0 = off).",
         true, &C::storage_throttle_mibps},
        {"--max-queued-requests", "int", "10000",
         "Trace/dataset replay: the producer waits while this many requests are queued (0 = unbounded, as the "
         "benchmark).",
         true, &C::max_queued_requests},
        {"--num-clients", "int", "1",
         "Client processes on this host, each with its own <cache-dir>/rank_<i>, seed + i and <output minus "
         ".json>.rank<i>.json; --output gets the merged result (sums, percentiles over every request, MLCommons "
         "aggregation).",
         true, &C::num_clients},
        {"--mpi", "flag", "off",
         "Run as one client per mpirun rank (rank from MPI_Comm_rank; cache-dir, seed and output per rank as with "
         "--num-clients); rank 0 gathers the merged result over MPI. Needs a kvio built with Open MPI (see --help's "
         "last line).",
         true, &C::mpi},
    };
    return t;
}

std::string flag_dest(const FlagSpec& f) {
    std::string s = f.name;
    if (s.rfind("--", 0) == 0) s.erase(0, 2);
    for (char& ch : s)
        if (ch == '-') ch = '_';
    return s;
}

std::vector<std::string> flag_choices(const FlagSpec& f) {
    std::vector<std::string> v;
    if (!f.choices) return v;
    std::string cur;
    for (const char* p = f.choices;; ++p) {
        if (*p == '|' || *p == '\0') {
            v.push_back(cur);
            cur.clear();
            if (!*p) break;
        } else {
            cur += *p;
        }
    }
    return v;
}

std::string flag_table_markdown() {
    std::ostringstream o;
    o << "| flag | type | default | meaning |\n|---|---|---|---|\n";
    for (const auto& f : flag_table()) {
        std::string type = f.type;
        if (f.choices) {
            type = "choice: ";
            const auto ch = flag_choices(f);
            for (size_t i = 0; i < ch.size(); ++i) type += (i ? "/" : "") + ch[i];
        }
        o << "| `" << f.name << "` | " << type << " | `" << f.default_text << "` | " << f.help
          << (f.kvio_only ? " *(kvio)*" : "") << " |\n";
    }
    return o.str();
}

namespace {

template <class T>
std::string num(T v) {
    std::ostringstream o;
    o << v;
    return o.str();
}

bool in_choices(const FlagSpec& f, const std::string& v) {
    for (const auto& c : flag_choices(f))
        if (c == v) return true;
    return false;
}

// The benchmark refuses these as --cache-dir by prefix of the resolved path (workload.py:validate_args).
constexpr const char* kSystemPrefixes[] = {"/etc",  "/bin", "/sbin", "/usr/bin", "/usr/sbin",
                                           "/boot", "/sys", "/proc", "/dev",     "/root"};

void check_cache_dir(const std::string& dir, std::vector<std::string>& errors) {
    if (dir.empty()) return;
    namespace fs = std::filesystem;
    struct stat st {};
    // A raw block device as --cache-dir is kvio's slots layout (the issue); its own safety refusals apply.
    if (::stat(dir.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) return;
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (ec) resolved = fs::absolute(dir);
    const std::string s = resolved.string();
    if (s == "/dev/shm" || s.rfind("/dev/shm/", 0) == 0) return;  // a tmpfs for users, not a system directory
    for (const char* p : kSystemPrefixes)
        if (s.rfind(p, 0) == 0) {
            errors.push_back("--cache-dir '" + dir + "' cannot be a system directory (resolves to " + s +
                             ", which starts with " + p + ")");
            return;
        }
    const fs::path parent = resolved.parent_path();
    if (!parent.empty() && fs::exists(parent, ec) && ::access(parent.c_str(), W_OK) != 0)
        errors.push_back("--cache-dir '" + dir + "': parent directory " + parent.string() + " is not writable");
}

}  // namespace

std::vector<std::string> validate_config(const SimConfig& c, std::vector<std::string>& warnings) {
    std::vector<std::string> e;
    auto positive = [&](const char* flag, auto v) {
        if (v <= 0) e.push_back(std::string(flag) + " must be positive (got " + num(v) + ")");
    };
    auto non_negative = [&](const char* flag, auto v) {
        if constexpr (std::is_floating_point_v<decltype(v)>) {
            if (!std::isfinite(v)) {  // argparse's float() takes "nan" and "inf"; nan compares false everywhere below
                e.push_back(std::string(flag) + " must be a finite number (got " + num(v) + ")");
                return;
            }
        }
        if (v < 0) e.push_back(std::string(flag) + " cannot be negative (got " + num(v) + ")");
    };
    auto at_most = [&](const char* flag, auto v, auto limit, const char* what) {
        if (v > limit) e.push_back(std::string(flag) + " " + num(v) + " exceeds " + what);
    };
    if (c.prefill_only && c.decode_only) e.push_back("--prefill-only and --decode-only are mutually exclusive");
    if (c.num_clients < 1 || c.num_clients > 1024)
        e.push_back("--num-clients must be between 1 and 1024 (got " + num(c.num_clients) + ")");
    if (c.mpi && c.num_clients > 1)
        e.push_back("--mpi runs one client per rank: use mpirun -np (or --npernode) instead of --num-clients");
    non_negative("--remote-capacity-gb", c.remote_capacity_gb);
    // The URL is parsed here, so a run that never connects (--io-trace-log) refuses a bad one too; the error masks
    // the password (redis::parse_url).
    if (!c.remote_tier.empty()) try {
            (void)redis::parse_url(c.remote_tier);
        } catch (const Error& ex) {
            e.push_back("--remote-tier " + std::string(ex.what()));
        }
    // The logical mode asks no server: the remote tier's limit must be given (docs/simulate.md, "Remote tier").
    if (!c.remote_tier.empty() && !c.io_trace_log.empty() && c.remote_capacity_gb <= 0)
        e.push_back("--remote-tier with --io-trace-log (no I/O, no server asked) needs --remote-capacity-gb");
    if (c.remote_tier.empty() && (c.remote_capacity_gb > 0 || !c.remote_run_id.empty()))
        e.push_back("--remote-capacity-gb and --remote-run-id need --remote-tier");
    if (c.remote_writeback_queue < 1 || c.remote_writeback_queue > 4096)
        e.push_back("--remote-writeback-queue must be between 1 and 4096 (got " + num(c.remote_writeback_queue) + ")");
    non_negative("--remote-handoff-probability", c.remote_handoff_probability);
    if (c.remote_handoff_probability > 1)
        e.push_back("--remote-handoff-probability " + num(c.remote_handoff_probability) + " is above 1");
    if (c.remote_handoff_probability > 0 &&
        (c.remote_tier.empty() || c.disable_multi_turn || (c.num_clients < 2 && !c.mpi && c.client_count < 2)))
        e.push_back(
            "--remote-handoff-probability needs --remote-tier, multi-turn conversations and more than one "
            "client (--num-clients or --mpi)");
    if (c.remote_tier.empty() && c.remote_write_mode != "through")
        e.push_back("--remote-write-mode back needs --remote-tier");
    if (c.remote_run_id.find_first_of(" \t\r\n") != std::string::npos)
        e.push_back("--remote-run-id '" + c.remote_run_id + "' holds white space");
    // Limits are workload.py's module constants (MAX_USERS, MAX_DURATION_SECONDS, MAX_GPU_MEMORY_GB,
    // MAX_CPU_MEMORY_GB), not config.yaml's validation_limits, which the benchmark never reads
    // (docs/mlperf-benchmark.md, "Command line and validation").
    positive("--num-users", c.num_users);
    at_most("--num-users", c.num_users, int64_t(100000), "limit (100000)");
    positive("--duration", c.duration);
    at_most("--duration", c.duration, int64_t(86400), "24 hours (86400 s)");
    non_negative("--gpu-mem-gb", c.gpu_mem_gb);
    at_most("--gpu-mem-gb", c.gpu_mem_gb, 65536.0, "limit (65536GiB)");
    non_negative("--cpu-mem-gb", c.cpu_mem_gb);
    at_most("--cpu-mem-gb", c.cpu_mem_gb, 131072.0, "limit (131072GiB)");
    non_negative("--rag-num-docs", c.rag_num_docs);
    positive("--max-conversations", c.max_conversations);
    non_negative("--max-concurrent-allocs", c.max_concurrent_allocs);
    non_negative("--request-rate", c.request_rate);
    non_negative("--max-requests", c.max_requests);
    non_negative("--storage-capacity-gb", c.storage_capacity_gb);
    non_negative("--precondition-size-gb", c.precondition_size_gb);
    non_negative("--precondition-threads", c.precondition_threads);
    non_negative("--trace-speedup", c.trace_speedup);
    non_negative("--replay-cycles", c.replay_cycles);
    if (!(c.target_saturation >= 0.0 && c.target_saturation <= 1.0))
        e.push_back("--target-saturation must be between 0.0 and 1.0 (got " + num(c.target_saturation) + ")");
    if (c.num_gpus < 1) e.push_back("--num-gpus must be at least 1 (got " + num(c.num_gpus) + ")");
    if (c.tensor_parallel < 1) e.push_back("--tensor-parallel must be at least 1 (got " + num(c.tensor_parallel) + ")");
    if (c.tensor_parallel > c.num_gpus && c.num_gpus >= 1)
        e.push_back("--tensor-parallel " + num(c.tensor_parallel) + " cannot exceed --num-gpus " + num(c.num_gpus));
    if (c.tensor_parallel > 1 && !std::has_single_bit(uint64_t(c.tensor_parallel)))
        warnings.push_back("--tensor-parallel " + num(c.tensor_parallel) +
                           " is not a power of 2: uncommon, but allowed");
    check_cache_dir(c.cache_dir, e);

    // Choices (argparse checks them when parsing; a SimConfig built in code gets the same refusal here).
    for (const auto& f : flag_table()) {
        if (!f.choices) continue;
        const std::string& v = c.*std::get<std::string SimConfig::*>(f.target);
        if (!in_choices(f, v))
            e.push_back(std::string(f.name) + " '" + v + "' is not one of " + std::string(f.choices));
    }
    // kvio's own flags.
    if (c.storage_qd < 1 || c.storage_qd > 4096)
        e.push_back("--storage-qd must be between 1 and 4096 (got " + num(c.storage_qd) + ")");
    if (c.max_io_bytes % 4096 != 0)
        e.push_back("--max-io-bytes " + num(c.max_io_bytes) + " is not a multiple of 4096 (O_DIRECT alignment)");
    if (!(c.gpu_bandwidth_gbps > 0) || !std::isfinite(c.gpu_bandwidth_gbps))
        e.push_back("--gpu-bandwidth-gbps must be positive (got " + num(c.gpu_bandwidth_gbps) + ")");
    non_negative("--progress-interval", c.progress_interval_s);
    if (!(c.autoscaler_interval_s > 0) || !std::isfinite(c.autoscaler_interval_s))
        e.push_back("--autoscaler-interval must be positive (got " + num(c.autoscaler_interval_s) + ")");
    non_negative("--storage-throttle-mibps", c.storage_throttle_mibps);
    if (c.storage_throttle_mibps > 0 && !c.io_trace_log.empty())
        e.push_back("--storage-throttle-mibps with --io-trace-log: the logical mode performs no I/O to throttle");
    non_negative("--max-queued-requests", c.max_queued_requests);
    if (c.enable_autoscaling && (c.use_burst_trace || !c.dataset_path.empty()))
        e.push_back(
            "--enable-autoscaling with --use-burst-trace/--dataset-path: the trace sets the arrivals, there are no "
            "users to scale");
    if (!c.trace_dir.empty() && !c.enable_latency_tracing)
        e.push_back("--trace-dir needs --enable-latency-tracing (there is nothing to keep without it)");
    if (c.verify_reads && c.storage_io != "buffered")
        e.push_back("--verify-reads checks the buffered storage tier's reads: use --storage-io buffered");
    if (c.trace_syscalls && !c.enable_latency_tracing)
        e.push_back("--trace-syscalls needs --enable-latency-tracing (it adds syscall records to its events)");
    if (c.enable_latency_tracing && !c.io_trace_log.empty())
        e.push_back("--enable-latency-tracing with --io-trace-log: the logical mode performs no I/O to trace");
    return e;
}

workload::ModelConfig resolve_model(const SimConfig& c) {
    if (auto it = c.yaml.model_configs.find(c.model); it != c.yaml.model_configs.end()) return it->second;
    const auto names = workload::builtin_model_names();
    for (const auto& n : names)
        if (n == c.model) return workload::builtin_model(n);
    std::string avail;
    for (const auto& [n, m] : c.yaml.model_configs) avail += (avail.empty() ? "" : ", ") + n;
    for (const auto& n : names)
        if (!c.yaml.model_configs.count(n)) avail += (avail.empty() ? "" : ", ") + n;
    throw Error("Unknown model '" + c.model + "'. Available models: " + avail);
}

uint64_t bytes_per_token(const workload::ModelConfig& m) {
    const uint64_t bpe = workload::dtype_bytes(m.dtype);
    if (m.attention == workload::AttentionKind::Mla)
        return uint64_t(m.num_layers) * (uint64_t(m.kv_lora_rank) + m.qk_rope_head_dim) * bpe;
    const uint64_t head_dim =
        m.head_dim ? m.head_dim : (m.num_attention_heads ? m.hidden_size / m.num_attention_heads : 0);
    return uint64_t(m.num_layers) * m.num_kv_heads * head_dim * 2 * bpe;
}

}  // namespace kvio::serving
