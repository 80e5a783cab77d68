// `kvio simulate` configuration: every flag of the MLPerf Storage KV Cache Benchmark v3.0 (kv-cache.py;
// docs/mlperf-benchmark.md, "Command line and validation") with the same name, default and meaning, kvio's additions,
// and the benchmark's config.yaml keys (docs/mlperf-benchmark.md, "config.yaml"). One struct for the CLI, the YAML
// loader, the simulation and the results.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/model.h"

namespace kvio::serving {

/// A closed integer range [lo, hi] of the benchmark's user templates (tokens) or a float range (think time, s).
struct IntRange {
    int64_t lo = 0, hi = 0;
};
struct FloatRange {
    double lo = 0, hi = 0;
};

/// One user template (docs/mlperf-benchmark.md, "Users and the request stream"; YAML `user_templates.<name>`).
struct UserTemplate {
    IntRange context_range;       ///< tokens
    IntRange generation_range;    ///< tokens
    FloatRange think_time_range;  ///< seconds
};

/// One QoS class (docs/mlperf-benchmark.md, "Users and the request stream"; YAML `qos_profiles.<name>`). Only the P95
/// target is judged, per request.
struct QosProfile {
    double target_latency_p95_ms = 0, target_latency_p99_ms = 0, target_latency_p999_ms = 0,
           target_latency_p9999_ms = 0;
    int priority = 0;  ///< 3 interactive, 2 responsive, 1 batch (higher is served first)
};

/// The config.yaml settings (docs/mlperf-benchmark.md, "config.yaml"). Defaults are the benchmark's code defaults (what
/// applies without
/// --config). Keys the benchmark reads nowhere ("dead") are accepted and kept so a file round-trips, and
/// docs/simulate.md says which ones kvio honours anyway.
struct YamlSettings {
    /// chatbot [512,4096] [50,200] [0.1,0.5]; coding [4096,25000] [100,500] [0.2,1.0];
    /// document [4096,16384] [200,800] [0.3,1.5]. Order of choice(): chatbot, coding, document.
    std::vector<std::pair<std::string, UserTemplate>> user_templates;
    /// interactive 50/100/150/200 p3; responsive 100/200/350/500 p2; batch 1000/5000/7500/10000 p1.
    std::map<std::string, QosProfile> qos_profiles;
    double interactive_probability = 0.15;  ///< qos_distribution.interactive_probability
    double responsive_threshold = 0.50;     ///< qos_distribution.responsive_threshold (cumulative)
    // eviction.*
    int max_recursion_depth = 10;
    double target_usage_ratio = 0.8;
    double large_entry_limit_ratio = 0.95;
    int max_evictions_hard_cap = 5000;
    int max_evictions_min = 1000;
    // gpu_backend.* (torch-only in the benchmark; kvio's GPU model uses memory_fraction for its usable budget)
    double gpu_memory_fraction = 0.8;
    int gpu_max_eviction_attempts = 100;
    double gpu_free_memory_threshold = 0.1;
    // prefix_cache.*
    int min_prefix_length = 50;     ///< dead in the benchmark
    int max_prefix_entries = 1000;  ///< dead in the benchmark
    double system_prompt_hit_probability = 0.2;
    // rag.*
    int rag_chunk_size_tokens = 512;
    int rag_top_k_chunks = 5;
    uint64_t rag_max_chunk_bytes = 256ull << 20;
    double rag_request_probability = 0.1;
    std::string rag_retrieval_distribution = "zipfian";  ///< zipfian | uniform | random
    int rag_max_documents = 0;                           ///< 0 = unlimited
    int rag_large_model_doc_tokens_min = 1024, rag_large_model_doc_tokens_max = 4096;
    int rag_small_model_doc_tokens_min = 4000, rag_small_model_doc_tokens_max = 12000;
    // conversation.*
    int max_conversations = 1000;
    int max_turns_per_conv = 50;
    double end_conversation_probability = 0.2;  ///< dead in the benchmark (hard-coded 0.2); kvio honours it
    // autoscaler.*
    int autoscaler_min_users = 1, autoscaler_max_users = 10000;
    double autoscaler_scale_up_factor = 1.2, autoscaler_scale_down_factor = 0.8;
    int autoscaler_consecutive_samples_required = 2;
    // decode.*
    int decode_batch_size = 32;
    // sharegpt.* (dead in the benchmark: loader hard-codes 16384 / 2048 / 4)
    int sharegpt_max_context_tokens = 8192, sharegpt_max_generation_tokens = 2048, sharegpt_chars_per_token = 4;
    // saturation_detection.*
    double sat_read_latency_p95_threshold_ms = 100, sat_write_latency_p95_threshold_ms = 50;
    int sat_queue_depth_threshold = 100, sat_history_window_size = 10;
    // generation_timing.* (dead in the benchmark: models.GENERATION_TIMING is hard-coded to the same values)
    double generation_timing_none = 0.0, generation_timing_fast = 0.002, generation_timing_realistic = 0.030;
    // validation_limits.* (dead in the benchmark)
    nlohmann::json validation_limits = nlohmann::json::object();
    /// model_configs.<name>: merged over the built-in models (new names allowed).
    std::map<std::string, workload::ModelConfig> model_configs;
    /// The YAML file as loaded (echoed into the results' kvio.config), null without --config.
    nlohmann::json raw;
};

/// The benchmark's defaults for every YAML key above (what applies without --config).
YamlSettings default_yaml_settings();

/// Every flag of kv-cache.py (same names, defaults, meanings: docs/mlperf-benchmark.md, "Command line and validation")
/// plus kvio's own.
struct SimConfig {
    // ---- the benchmark's 40 flags ----
    std::string log_level = "INFO";  ///< DEBUG|INFO|WARNING|ERROR|CRITICAL
    std::string model = "llama3.1-8b";
    int64_t num_users = 100;
    int64_t duration = 60;   ///< s
    double gpu_mem_gb = 16;  ///< GiB per GPU
    int64_t num_gpus = 1;
    int64_t tensor_parallel = 1;
    double cpu_mem_gb = 32;                       ///< GiB
    std::string cache_dir;                        ///< "" = a temporary directory kv_cache_PID_XXXXXX, removed at exit
    std::string generation_mode = "realistic";    ///< none|fast|realistic = 0/2/30 ms per generated token
    std::string performance_profile = "latency";  ///< latency|throughput (assessment only)
    bool disable_multi_turn = false;
    bool disable_prefix_caching = false;
    bool enable_rag = false;
    int64_t rag_num_docs = 10;
    bool enable_autoscaling = false;
    std::string autoscaler_mode = "qos";  ///< qos|capacity
    double target_saturation = 0.8;
    bool use_burst_trace = false;
    std::string burst_trace_path = "BurstGPT/data/BurstGPT_1.csv";
    std::string validation_trace;
    std::string dataset_path;
    int64_t max_conversations = 500;  ///< ShareGPT conversations loaded
    std::string output;               ///< "" = benchmark_results_<YYYYmmdd_HHMMSS>.json in cwd
    std::optional<int64_t> seed;
    int64_t max_concurrent_allocs = 0;  ///< 0 = unlimited
    double request_rate = 0;            ///< req/s, ShareGPT replay only
    int64_t max_requests = 0;           ///< 0 = duration only
    std::string xlsx_output;
    std::string config;              ///< YAML path, "" = code defaults
    double storage_capacity_gb = 0;  ///< GiB, 0 = auto (statvfs f_bavail × f_frsize × 0.95)
    bool precondition = false;
    double precondition_size_gb = 0;
    int64_t precondition_threads = 0;
    double trace_speedup = 1.0;
    int64_t replay_cycles = 0;
    bool prefill_only = false;
    bool decode_only = false;
    std::string io_trace_log;  ///< logical mode: no I/O, one CSV row per op (.zst: zstd)
    bool enable_latency_tracing = false;

    // ---- kvio's additions ----
    /// Storage-tier I/O: "buffered" (the benchmark's pattern: 128-byte header + data, fallocate, one buffered
    /// write, fsync; reads after POSIX_FADV_DONTNEED), "direct" (kvio's posix engine, O_DIRECT, 4 KiB-aligned
    /// header) or "io_uring" (kvio's io_uring engine, O_DIRECT).
    std::string storage_io = "buffered";
    uint32_t storage_qd = 8;         ///< io_uring: transfers in flight per op
    uint64_t max_io_bytes = 0;       ///< direct/io_uring transfer cap, 0 = the device's default_max_io()
    double gpu_bandwidth_gbps = 64;  ///< host↔GPU model bandwidth, 10^9 bytes/s (the benchmark's proposed design)
    std::string gpu_tier = "auto";   ///< auto (cuda when built in and a GPU is present, else model) | model | cuda
    std::string trace_dir;           ///< --enable-latency-tracing: keep events/semantic/trace files here
    bool verify_reads = false;       ///< --verify-reads: storage reads checked byte for byte (buffered tier)
    bool trace_syscalls = false;     ///< --enable-latency-tracing: the tracer also writes syscall records
    /// kvio.semantic/1 JSONL of every storage-tier op (written by the cache; "" = none). The latency tracer sets
    /// it (e.g. <trace_dir>/semantic.jsonl) so `kvio validate` can join the device commands to the entries.
    std::string semantic_path;
    bool force = false;  ///< raw block device as --cache-dir: write even if its first MiB holds data
    /// --remote-tier: redis://[user:pass@]HOST:PORT[/DB] of a Redis/Valkey server, a tier between CPU and storage
    /// (the last tier without --cache-dir); "" = none (docs/simulate.md, "Remote tier").
    std::string remote_tier;
    double remote_capacity_gb = 0;  ///< GiB; 0 = the server's maxmemory less what it used at start (unlimited without)
    /// Key prefix of the run's remote entries; "" = made at start (kvio-<host>-<pid>-<time>) and handed to every
    /// client of --num-clients / --mpi, so all of them share one namespace.
    std::string remote_run_id;
    /// --remote-write-mode: "through" (a write completes when the server acknowledged it) or "back" (when queued in
    /// a bounded queue per connection, written by a background writer; docs/simulate.md, "Remote tier").
    std::string remote_write_mode = "through";
    int64_t remote_writeback_queue = 8;  ///< --remote-writeback-queue: writes queued per connection at most
    /// --remote-connections: "shared" (a worker thread's SETs and GETs on one connection) or "split" (a write and a
    /// read connection per worker thread; docs/simulate.md, "Remote tier").
    std::string remote_connections = "shared";
    /// --remote-handoff-probability: before a conversation's next turn, the chance that the user returns to another
    /// client (the next one, by index) instead; its earlier turns are then read from the remote tier.
    double remote_handoff_probability = 0;
    /// The run's number of clients (--num-clients or the MPI size; 1 for a single run): where handoffs go. Set by
    /// client_config(), not a flag.
    int64_t client_count = 1;
    /// This client's index among the run's clients (--num-clients index or MPI rank; 0 for a single run): the remote
    /// tier's namespace of the client's own entries. Set by client_config(), not a flag.
    int64_t client_index = 0;
    /// This client is one rank of an `mpirun ... kvio simulate --mpi` job (client_count its world size, client_index
    /// its rank). Set by client_config(), not a flag: a client's own --mpi is off (it runs one simulation).
    bool client_of_mpi = false;
    double progress_interval_s = 1.0;  ///< progress line on stderr; 0 = none
    /// Autoscaler tick, s: the benchmark's WorkloadAutoscaler.scale_interval (10 s); shorter for tests.
    double autoscaler_interval_s = 10.0;
    /// Test hook: storage-tier ops served FIFO at this bandwidth, MiB/s (a throttled device); 0 = off.
    double storage_throttle_mibps = 0;
    /// Trace/dataset replay: the producer waits while this many requests are queued (0 = unbounded, as the
    /// benchmark, whose unpaced replay grows the queue without limit).
    int64_t max_queued_requests = 10000;
    bool quiet = false;  ///< no console report (results JSON only)
    /// Client processes on this host (multi_client.h): each its own <cache-dir>/rank_<i>, seed + i and
    /// <output>.rank<i>.json; --output gets the merged result. 1 = a single run in this process.
    int64_t num_clients = 1;
    bool mpi = false;  ///< one client per mpirun rank, rank 0 gathers the merge (mpi_client.h)

    /// Settings from --config (or the defaults).
    YamlSettings yaml = default_yaml_settings();
};

/// The SimConfig member a flag sets (added by sim-config: lets the CLI, config_to_json and the docs share one table).
using FlagTarget = std::variant<std::string SimConfig::*, int64_t SimConfig::*, double SimConfig::*, bool SimConfig::*,
                                std::optional<int64_t> SimConfig::*, uint32_t SimConfig::*, uint64_t SimConfig::*>;

/// One row of the flag table: what parsing, --help and docs/simulate.md are made from.
struct FlagSpec {
    const char* name;               ///< "--num-users"
    const char* type;               ///< "int" | "float" | "str" | "flag" | "choice"
    const char* default_text;       ///< as the benchmark prints it ("100", "None", "realistic")
    const char* help;               ///< one sentence, units stated
    bool kvio_only;                 ///< not a kv-cache.py flag
    FlagTarget target{};            ///< the member it sets
    const char* choices = nullptr;  ///< "choice" flags: the accepted values, '|'-separated ("none|fast|realistic")
};

/// The argparse dest of a flag: "--num-users" -> "num_users" (the key used in config_to_json).
std::string flag_dest(const FlagSpec& f);
/// The choices of a "choice" flag, in the benchmark's order (empty for other flags).
std::vector<std::string> flag_choices(const FlagSpec& f);
/// docs/simulate.md's flag table (markdown: flag | type | default | meaning), generated from flag_table().
std::string flag_table_markdown();

/// The flags in the benchmark's order (cli.py), then kvio's.
const std::vector<FlagSpec>& flag_table();

/// The benchmark's argument checks (workload.py:validate_args, docs/mlperf-benchmark.md, "Command line and validation")
/// plus kvio's. Returns every error (one sentence each, naming the flag and value); empty when valid. Warnings (TP not
/// a power of two) go to `warnings`. prefill_only with decode_only is reported here too ("mutually exclusive").
std::vector<std::string> validate_config(const SimConfig& c, std::vector<std::string>& warnings);

/// Loads --config into c.yaml: yaml-cpp, strict (an unknown key at any level is an error naming its dotted path
/// and the valid keys at that level; a wrong scalar type names the key, the file and line). model_configs
/// entries become ModelConfig (name, num_layers, hidden_dim, num_heads, kv_heads, kv_dim_per_head, dtype,
/// attention_type, kv_lora_rank, qk_rope_head_dim). Throws kvio::Error "FILE:LINE: key 'a.b': ...".
void load_yaml_config(const std::string& path, SimConfig& c);

/// The model named c.model: c.yaml.model_configs first, then workload::builtin_model(). Throws kvio::Error
/// "Unknown model 'X'. Available models: ..." (the benchmark's message).
workload::ModelConfig resolve_model(const SimConfig& c);

/// KV bytes per token of `m` with the benchmark's formula (docs/mlperf-benchmark.md, "Model geometry"): MHA/GQA layers
/// × kv_heads × head_dim × 2 × bytes_per_element; MLA layers × (kv_lora_rank + qk_rope_head_dim) × bytes_per_element.
/// Equals workload::compute_geometry(m, tp=1).bytes_per_token.
uint64_t bytes_per_token(const workload::ModelConfig& m);

/// The config as the results' kvio.config echo: {"flags": {<argparse dest>: value, ...} for every flag of
/// flag_table(), "yaml": yaml_settings_to_json(c.yaml), "yaml_file": the --config file as loaded (null without)}.
nlohmann::ordered_json config_to_json(const SimConfig& c);

/// The YAML settings in config.yaml's shape (section.key), with model_configs' entries as loaded plus their
/// bytes_per_token. A YAML `dtype: int8` model is kvio's 1-byte KvDtype::Fp8 (same size; echoed as "fp8").
nlohmann::ordered_json yaml_settings_to_json(const YamlSettings& y);

}  // namespace kvio::serving
