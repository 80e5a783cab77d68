// kvio simulate's configuration: defaults, the benchmark's refusals (docs/mlperf-benchmark.md, "Command line and
// validation"), config.yaml loading (docs/mlperf-benchmark.md, "config.yaml"), the model table and bytes/token
// (docs/mlperf-benchmark.md, "Model geometry"), and the flag table docs/simulate.md shows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "workload/serving/results/report.h"
#include "workload/serving/results/stats_util.h"
#include "workload/serving/config.h"

using namespace kvio;
using namespace kvio::serving;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> errors_of(const SimConfig& c) {
    std::vector<std::string> w;
    return validate_config(c, w);
}
bool has(const std::vector<std::string>& v, const std::string& needle) {
    for (const auto& s : v)
        if (s.find(needle) != std::string::npos) return true;
    return false;
}
std::string write_tmp(const std::string& name, const std::string& text) {
    const fs::path p = fs::temp_directory_path() / ("kvio-serving-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p) << text;
    return p.string();
}
std::string load_error(const std::string& yaml) {
    SimConfig c;
    const std::string p = write_tmp("bad.yaml", yaml);
    try {
        load_yaml_config(p, c);
    } catch (const Error& e) {
        fs::remove(p);
        return e.what();
    }
    fs::remove(p);
    return "";
}
}  // namespace

TEST(ServingConfig, DefaultsAreTheBenchmarks) {
    SimConfig c;
    EXPECT_EQ(c.model, "llama3.1-8b");
    EXPECT_EQ(c.num_users, 100);
    EXPECT_EQ(c.generation_mode, "realistic");
    EXPECT_FALSE(c.seed.has_value());
    std::vector<std::string> w;
    EXPECT_TRUE(validate_config(c, w).empty());
    EXPECT_TRUE(w.empty());
    const auto& y = c.yaml;
    ASSERT_EQ(y.user_templates.size(), 3u);
    EXPECT_EQ(y.user_templates[1].first, "coding");
    EXPECT_EQ(y.user_templates[1].second.context_range.hi, 25000);
    EXPECT_EQ(y.qos_profiles.at("batch").target_latency_p95_ms, 1000);
    EXPECT_EQ(y.gpu_memory_fraction, 0.8);  // code default; the YAML says 0.9
}

TEST(ServingConfig, FlagTableHasTheBenchmarks40InOrder) {
    const auto& t = flag_table();
    size_t bench = 0;
    for (const auto& f : t) bench += !f.kvio_only;
    EXPECT_EQ(bench, 40u);
    EXPECT_STREQ(t.front().name, "--log-level");
    EXPECT_STREQ(t[39].name, "--enable-latency-tracing");
    for (size_t i = 40; i < t.size(); ++i) EXPECT_TRUE(t[i].kvio_only) << t[i].name;
    for (const auto& f : t) {
        if (std::string(f.type) == "choice") {
            EXPECT_NE(f.choices, nullptr) << f.name;
            EXPECT_TRUE(std::holds_alternative<std::string SimConfig::*>(f.target)) << f.name;
        }
    }
    EXPECT_EQ(flag_dest(t[2]), "num_users");
    const auto gm = flag_choices(t[9]);
    EXPECT_EQ(gm, (std::vector<std::string>{"none", "fast", "realistic"}));
}

TEST(ServingConfig, RefusalsOfTheBenchmark) {
    SimConfig c;
    c.num_users = 0;
    EXPECT_TRUE(has(errors_of(c), "--num-users must be positive"));
    c.num_users = 100001;
    EXPECT_TRUE(has(errors_of(c), "--num-users 100001 exceeds limit"));
    c = {};
    c.duration = 86401;
    EXPECT_TRUE(has(errors_of(c), "exceeds 24 hours"));
    c = {};
    c.gpu_mem_gb = -1;
    c.cpu_mem_gb = 131073;
    auto e = errors_of(c);
    EXPECT_TRUE(has(e, "--gpu-mem-gb cannot be negative"));
    EXPECT_TRUE(has(e, "--cpu-mem-gb 131073 exceeds limit"));
    EXPECT_EQ(e.size(), 2u);  // all errors are collected, not just the first
    c = {};
    c.target_saturation = 1.5;
    EXPECT_TRUE(has(errors_of(c), "between 0.0 and 1.0"));
    c = {};
    c.max_conversations = 0;
    c.replay_cycles = -1;
    c.trace_speedup = -1;
    e = errors_of(c);
    EXPECT_TRUE(has(e, "--max-conversations must be positive"));
    EXPECT_TRUE(has(e, "--replay-cycles cannot be negative"));
    EXPECT_TRUE(has(e, "--trace-speedup cannot be negative"));
    c = {};
    c.prefill_only = c.decode_only = true;
    EXPECT_TRUE(has(errors_of(c), "mutually exclusive"));
}

TEST(ServingConfig, TensorParallel) {
    SimConfig c;
    c.tensor_parallel = 2;
    EXPECT_TRUE(has(errors_of(c), "cannot exceed --num-gpus"));
    c.num_gpus = 4;
    c.tensor_parallel = 3;
    std::vector<std::string> w;
    EXPECT_TRUE(validate_config(c, w).empty());
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("not a power of 2"), std::string::npos);
    c.tensor_parallel = 4;
    w.clear();
    EXPECT_TRUE(validate_config(c, w).empty());
    EXPECT_TRUE(w.empty());
}

TEST(ServingConfig, CacheDirSystemPrefixAndParent) {
    SimConfig c;
    for (const char* d : {"/etc/kv", "/proc", "/devX/cache", "/rootfs/kv", "/usr/bin/x"}) {
        c.cache_dir = d;
        EXPECT_TRUE(has(errors_of(c), "cannot be a system directory")) << d;
    }
    c.cache_dir = "/dev/shm/x";  // a tmpfs, not a system directory (/dev/shmX still is one)
    EXPECT_FALSE(has(errors_of(c), "cannot be a system directory"));
    c.cache_dir = "/dev/shmX/kv";
    EXPECT_TRUE(has(errors_of(c), "cannot be a system directory"));
    c.cache_dir = "/usr/lib/kv";  // /usr/bin is refused, /usr is not
    EXPECT_TRUE(errors_of(c).empty());
    c.cache_dir = "/tmp/kv-cache-test";
    EXPECT_TRUE(errors_of(c).empty());
    // Parent not writable: a read-only tmpfs (root may write to any mode bits, so mode 0555 would not do).
    const fs::path ro = fs::temp_directory_path() / ("kvio-ro-" + std::to_string(::getpid()));
    fs::create_directory(ro);
    if (::geteuid() == 0 && ::mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=1m") == 0) {
        c.cache_dir = (ro / "cache").string();
        EXPECT_TRUE(has(errors_of(c), "is not writable")) << c.cache_dir;
        ::umount(ro.c_str());
        EXPECT_TRUE(errors_of(c).empty());
    } else if (::geteuid() != 0) {
        fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
        c.cache_dir = (ro / "cache").string();
        EXPECT_TRUE(has(errors_of(c), "is not writable")) << c.cache_dir;
        fs::permissions(ro, fs::perms::owner_all);
    } else {
        ADD_FAILURE() << "cannot mount a read-only tmpfs on " << ro;
    }
    fs::remove(ro);
}

TEST(ServingConfig, KvioFlagChecks) {
    SimConfig c;
    c.storage_io = "mmap";
    c.gpu_tier = "fpga";
    c.generation_mode = "slow";
    c.max_io_bytes = 1000;
    c.storage_qd = 0;
    c.gpu_bandwidth_gbps = 0;
    auto e = errors_of(c);
    EXPECT_TRUE(has(e, "--storage-io 'mmap' is not one of buffered|direct|io_uring"));
    EXPECT_TRUE(has(e, "--gpu-tier 'fpga'"));
    EXPECT_TRUE(has(e, "--generation-mode 'slow'"));
    EXPECT_TRUE(has(e, "--max-io-bytes 1000 is not a multiple of 4096"));
    EXPECT_TRUE(has(e, "--storage-qd"));
    EXPECT_TRUE(has(e, "--gpu-bandwidth-gbps"));
    c = {};
    c.trace_dir = "/tmp/t";
    EXPECT_TRUE(has(errors_of(c), "--trace-dir needs --enable-latency-tracing"));
    c.enable_latency_tracing = true;
    EXPECT_TRUE(errors_of(c).empty());
    c.io_trace_log = "/tmp/x.csv";
    EXPECT_TRUE(has(errors_of(c), "performs no I/O"));
}

// docs/mlperf-benchmark.md, "Model geometry": the benchmark's 9 models.
TEST(ServingConfig, BytesPerTokenOfTheNineModels) {
    const std::pair<const char*, uint64_t> want[] = {{"tiny-1b", 24576},
                                                     {"mistral-7b", 131072},
                                                     {"llama2-7b", 524288},
                                                     {"llama3.1-8b", 131072},
                                                     {"llama3.1-70b-instruct", 327680},
                                                     {"deepseek-v3", 70272},
                                                     {"qwen3-32b", 262144},
                                                     {"gpt-oss-120b", 73728},
                                                     {"gpt-oss-20b", 49152}};
    SimConfig c;
    for (auto [name, bpt] : want) {
        c.model = name;
        EXPECT_EQ(bytes_per_token(resolve_model(c)), bpt) << name;
    }
    // The same numbers from the benchmark's own config.yaml model_configs.
    load_yaml_config("tests/fixtures/mlperf-kv-config.yaml", c);
    for (auto [name, bpt] : want) {
        c.model = name;
        const auto m = resolve_model(c);
        EXPECT_NE(m.source.find("config.yaml"), std::string::npos) << name;
        EXPECT_EQ(bytes_per_token(m), bpt) << name;
    }
}

TEST(ServingConfig, UnknownModelMessage) {
    SimConfig c;
    c.model = "gpt-5";
    try {
        resolve_model(c);
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.rfind("Unknown model 'gpt-5'. Available models: ", 0), 0u) << m;
        EXPECT_NE(m.find("tiny-1b"), std::string::npos);
        EXPECT_NE(m.find("gpt-oss-20b"), std::string::npos);
    }
}

TEST(ServingConfig, LoadsTheBenchmarksConfigYaml) {
    SimConfig c;
    load_yaml_config("tests/fixtures/mlperf-kv-config.yaml", c);
    const auto& y = c.yaml;
    EXPECT_EQ(y.gpu_memory_fraction, 0.9);  // the YAML's value, not the code default
    EXPECT_EQ(y.rag_max_chunk_bytes, 268435456u);
    EXPECT_EQ(y.rag_retrieval_distribution, "zipfian");
    EXPECT_EQ(y.qos_profiles.at("interactive").priority, 3);
    EXPECT_EQ(y.qos_profiles.at("responsive").target_latency_p9999_ms, 500);
    EXPECT_EQ(y.user_templates[2].second.think_time_range.hi, 1.5);
    EXPECT_EQ(y.validation_limits["max_gpu_memory_gb"], 1024);
    EXPECT_EQ(y.sat_history_window_size, 10);
    EXPECT_EQ(y.model_configs.size(), 9u);
    EXPECT_TRUE(y.raw.is_object());
    EXPECT_EQ(y.raw["rag"]["top_k_chunks"], 5);
    // The echo has every leaf of the file (minus model_configs, which is echoed as loaded).
    const auto j = yaml_settings_to_json(y);
    EXPECT_EQ(j["eviction"]["large_entry_limit_ratio"], 0.95);
    EXPECT_EQ(j["user_templates"]["coding"]["context_range"], nlohmann::ordered_json::array({4096, 25000}));
    for (auto it = y.raw.begin(); it != y.raw.end(); ++it) EXPECT_TRUE(j.contains(it.key())) << it.key();
    const auto cj = config_to_json(c);
    EXPECT_EQ(cj["flags"]["num_users"], 100);
    EXPECT_TRUE(cj["flags"]["seed"].is_null());
    EXPECT_EQ(cj["flags"].size(), flag_table().size());
}

TEST(ServingConfig, RemoteTierUrlCheckedAndRecordedWithoutPassword) {
    SimConfig c;
    c.remote_tier = "redis://:goodpw@127.0.0.1:31003";
    EXPECT_FALSE(has(errors_of(c), "--remote-tier"));
    const std::string text = config_to_json(c).dump();
    EXPECT_EQ(text.find("goodpw"), std::string::npos) << text;
    EXPECT_EQ(config_to_json(c)["flags"]["remote_tier"], "redis://127.0.0.1:31003/0");
    // Refused where the flags are checked (also for --io-trace-log runs, which never connect), password masked;
    // the message starts with --remote-tier, which makes it a usage error (exit 2, cli/simulate_options.cpp).
    c.io_trace_log = "/tmp/never-written.csv";
    c.remote_capacity_gb = 1;
    c.remote_tier = "http://x";
    auto e = errors_of(c);
    EXPECT_TRUE(has(e, "--remote-tier 'http://x': expected redis://")) << (e.empty() ? "" : e[0]);
    c.remote_tier = "redis://:s3cret@h:99999";
    e = errors_of(c);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0], "--remote-tier 'redis://:***@h:99999': port '99999' is not a number in 1..65535");
}

TEST(ServingReport, FailedWritesNameTheRemoteTierWhenItIsLast) {
    nlohmann::ordered_json kc = {{"failed_writes", 3},
                                 {"capacity_refusals", 0},
                                 {"write_io_errors", 3},
                                 {"first_write_error", "remote write of entry 'e': redis 127.0.0.1:1: no reply"},
                                 {"storage", "absent (--remote-tier without --cache-dir: the remote tier is last)"}};
    EXPECT_EQ(failed_writes_phrase(kc),
              "3 remote-tier writes failed: 0 capacity refusals, 3 I/O errors (first: remote write of entry 'e': "
              "redis 127.0.0.1:1: no reply)");
    kc["storage"] = "buffered /tmp/x";
    EXPECT_EQ(failed_writes_phrase(kc).rfind("3 storage writes failed: ", 0), 0u) << failed_writes_phrase(kc);
}

TEST(ServingConfig, YamlUnknownKeyTopLevel) {
    const std::string e = load_error("eviction:\n  max_recursion_depth: 3\nevictions:\n  x: 1\n");
    EXPECT_NE(e.find(":3: unknown configuration key 'evictions'"), std::string::npos) << e;
    EXPECT_NE(e.find("valid keys at this level: model_configs, user_templates, generation_timing"), std::string::npos)
        << e;
}

TEST(ServingConfig, YamlUnknownKeyNested) {
    std::string e = load_error("rag:\n  top_k_chunks: 3\n  top_k: 3\n");
    EXPECT_NE(e.find(":3: unknown configuration key 'rag.top_k'"), std::string::npos) << e;
    EXPECT_NE(e.find("chunk_size_tokens, top_k_chunks"), std::string::npos) << e;
    e = load_error("user_templates:\n  chatbot:\n    think_range: [1, 2]\n");
    EXPECT_NE(e.find("'user_templates.chatbot.think_range'"), std::string::npos) << e;
    e = load_error("model_configs:\n  m:\n    num_layers: 2\n    heads: 4\n");
    EXPECT_NE(e.find(":4: unknown configuration key 'model_configs.m.heads'"), std::string::npos) << e;
}

TEST(ServingConfig, YamlWrongTypes) {
    std::string e = load_error("decode:\n  batch_size: \"32\"\n");
    EXPECT_NE(e.find(":2: key 'decode.batch_size': expected an integer, got '32'"), std::string::npos) << e;
    e = load_error("eviction:\n  target_usage_ratio: high\n");
    EXPECT_NE(e.find("key 'eviction.target_usage_ratio': expected a number"), std::string::npos) << e;
    e = load_error("rag:\n  retrieval_distribution: 7\n");
    EXPECT_NE(e.find("expected a string"), std::string::npos) << e;
    e = load_error("eviction: 3\n");
    EXPECT_NE(e.find("key 'eviction': expected a mapping"), std::string::npos) << e;
    e = load_error("user_templates:\n  coding:\n    context_range: [5000, 100]\n");
    EXPECT_NE(e.find("min is larger than max"), std::string::npos) << e;
    e = load_error("rag: [\n");
    EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(ServingConfig, YamlMissingFile) {
    SimConfig c;
    try {
        load_yaml_config("/nonexistent/kvio.yaml", c);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/kvio.yaml: --config: cannot open: No such file"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ServingConfig, YamlModelConfigsMergeOverBuiltins) {
    const std::string p = write_tmp("models.yaml",
                                    "model_configs:\n"
                                    "  my-int8:\n    name: \"Mine\"\n    num_layers: 10\n    hidden_dim: 2048\n"
                                    "    num_heads: 16\n    kv_heads: 2\n    dtype: int8\n"
                                    "  llama3.1-8b:\n    num_layers: 16\n    hidden_dim: 4096\n    num_heads: 32\n"
                                    "    kv_heads: 8\n    dtype: float32\n");
    SimConfig c;
    load_yaml_config(p, c);
    fs::remove(p);
    c.model = "my-int8";
    EXPECT_EQ(bytes_per_token(resolve_model(c)), 10u * 2 * 128 * 2 * 1);  // int8 = 1 byte
    c.model = "llama3.1-8b";
    EXPECT_EQ(bytes_per_token(resolve_model(c)), 16u * 8 * 128 * 2 * 4);  // overridden
    c.model = "mistral-7b";                                               // untouched built-in
    EXPECT_EQ(bytes_per_token(resolve_model(c)), 131072u);
    c.model = "nope";
    try {
        resolve_model(c);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("my-int8"), std::string::npos) << e.what();
    }
}

// docs/simulate.md's flag section is flag_table_markdown(), so the docs cannot drift from the code.
TEST(ServingConfig, DocsFlagSectionMatchesTable) {
    const char* path = "docs/simulate.md";
    std::string doc;
    {
        std::ifstream in(path);
        ASSERT_TRUE(in) << path << " is missing";
        std::stringstream ss;
        ss << in.rdbuf();
        doc = ss.str();
    }
    const std::string b = "<!-- flags:begin -->\n", e = "<!-- flags:end -->";
    const auto i = doc.find(b), j = doc.find(e);
    ASSERT_NE(i, std::string::npos);
    ASSERT_NE(j, std::string::npos);
    if (const char* u = std::getenv("KVIO_UPDATE_DOCS"); u && std::string(u) == "1") {
        doc.replace(i + b.size(), j - i - b.size(), flag_table_markdown());
        std::ofstream(path) << doc;
        return;
    }
    EXPECT_EQ(doc.substr(i + b.size(), j - i - b.size()), flag_table_markdown())
        << "docs/simulate.md's flag table is stale: rewrite it with KVIO_UPDATE_DOCS=1 build/kvio_unit_tests "
           "--gtest_filter=ServingConfig.DocsFlagSectionMatchesTable";
    const std::string md = flag_table_markdown();
    for (const auto& f : flag_table()) EXPECT_NE(md.find(std::string("`") + f.name + "`"), std::string::npos);
}

// argparse's float() accepts "nan" and "inf"; a nan capacity compared false everywhere and became "unlimited".
TEST(SimConfig, NonFiniteFloatsAreRefused) {
    for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
        SimConfig c;
        c.storage_capacity_gb = bad;
        c.gpu_mem_gb = bad;
        auto e = errors_of(c);
        EXPECT_TRUE(has(e, "--gpu-mem-gb must be a finite number"));
        EXPECT_TRUE(has(e, "--storage-capacity-gb must be a finite number"));
    }
}

/// A results document print_report() takes: a 4.5 s run of a 60 s duration with `cache` as kvio.cache.
nlohmann::ordered_json report_results(const nlohmann::ordered_json& cache) {
    nlohmann::ordered_json lat = {{"mean", 1.0}, {"p50", 1.0}, {"p95", 2.0}, {"p99", 3.0}};
    return {{"requests_completed", 3},
            {"summary",
             {{"elapsed_time", 4.5},
              {"end_to_end_latency_ms", lat},
              {"storage_io_latency_ms", lat},
              {"generation_latency_ms", lat},
              {"cache_stats", nlohmann::ordered_json::object()},
              {"multi_turn_stats", nlohmann::ordered_json::object()},
              {"qos_metrics", nlohmann::ordered_json::object()}}},
            {"kvio", {{"cache", cache}, {"config", {{"flags", {{"duration", 60}}}}}}}};
}

// The console report's storage part names the write chunks that fell back to the gather path (every noise-pool copy
// taken), and a run a signal stopped says so at its top; neither line when there is nothing to say.
TEST(ServingReport, ConsoleNamesGatherFallbacksAndASignalStop) {
    using kvio::serving::print_report;
    nlohmann::ordered_json doc =
        report_results({{"failed_writes", 0}, {"failed_reads", 0}, {"gather_fallbacks", 0}, {"noise_pool_copies", 4}});
    doc["kvio"]["stop"] = {{"reason", "duration"}, {"signal", 0}, {"stop_requested_at_s", 4.5}};
    std::ostringstream quiet;
    print_report(quiet, doc);
    EXPECT_EQ(quiet.str().find("gather path"), std::string::npos) << quiet.str();
    EXPECT_EQ(quiet.str().find("Stopped by signal"), std::string::npos) << quiet.str();
    doc["kvio"]["cache"]["gather_fallbacks"] = 17;
    doc["kvio"]["stop"] = {{"reason", "signal Terminated"}, {"signal", 15}, {"stop_requested_at_s", 4.31}};
    std::ostringstream os;
    print_report(os, doc);
    EXPECT_NE(os.str().find("NOTE: 17 storage write chunks took the slower gather path (iovecs per 4 KiB block): all 4 "
                            "noise-pool copies were in use\n"),
              std::string::npos)
        << os.str();
    EXPECT_NE(os.str().find(std::string(80, '=') +
                            "\nStopped by signal 15 after 4.3 s of 60 s: figures cover the part that ran\n"),
              std::string::npos)
        << os.str();
}

// Failed writes, failed reads and corrupted reads each print their own first error (a write's ENOSPC does not explain
// a read's EIO); a clean --verify-reads run says how many bytes were checked.
TEST(ServingReport, ConsoleNamesEachKindsFirstErrorAndACleanReadCheck) {
    using kvio::serving::print_report;
    nlohmann::ordered_json doc = report_results({{"failed_writes", 2},
                                                 {"failed_reads", 5},
                                                 {"corrupted_reads", 1},
                                                 {"first_error", "write A: No space left on device"},
                                                 {"first_write_error", "write A: No space left on device"},
                                                 {"first_read_error", "read B: Input/output error"},
                                                 {"first_corruption", "read C: payload mismatch"}});
    std::ostringstream os;
    print_report(os, doc);
    const std::string out = os.str();
    // A file of a kvio that did not split the kinds: every failed write counts as an I/O error.
    EXPECT_NE(out.find("WARNING: 2 storage writes failed: 0 capacity refusals, 2 I/O errors (first: write A: No space "
                       "left on device) (not counted as done)\n"),
              std::string::npos)
        << out;
    // The two kinds apart, as kvio.cache counts them.
    nlohmann::ordered_json split = report_results({{"failed_writes", 3},
                                                   {"capacity_refusals", 1},
                                                   {"capacity_refused_bytes", 5000},
                                                   {"write_io_errors", 2},
                                                   {"first_write_error", "write A: No space left on device"}});
    std::ostringstream os2;
    print_report(os2, split);
    EXPECT_NE(os2.str().find("WARNING: 3 storage writes failed: 1 capacity refusal (5000 bytes in all, no tier could "
                             "hold them, refused unwritten), 2 I/O errors (first: write A: No space left on device) "
                             "(not counted as done)\n"),
              std::string::npos)
        << os2.str();
    // Refusals alone: no I/O error's "first" beside a count of 0, and the refusal's own first entry named.
    nlohmann::ordered_json refusals =
        report_results({{"failed_writes", 2},
                        {"capacity_refusals", 2},
                        {"capacity_refused_bytes", 9000},
                        {"write_io_errors", 0},
                        {"first_error", "no tier can take entry 'k' of 5000 bytes"},
                        {"first_capacity_refusal", "no tier can take entry 'k' of 5000 bytes"}});
    std::ostringstream os3;
    print_report(os3, refusals);
    EXPECT_NE(os3.str().find("WARNING: 2 storage writes failed: 2 capacity refusals (9000 bytes in all, no tier could "
                             "hold them, refused unwritten; first: no tier can take entry 'k' of 5000 bytes), 0 I/O "
                             "errors (not counted as done)\n"),
              std::string::npos)
        << os3.str();
    EXPECT_NE(out.find("WARNING: 4 reads failed (not counted as done); first error: read B: Input/output error\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("ERROR: 1 reads returned other bytes than were written (--verify-reads); first: read C: "
                       "payload mismatch\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("Read check"), std::string::npos) << out;
    EXPECT_EQ(out.find("were cut at the end"), std::string::npos) << out;
    doc["kvio"]["cache"]["cut_ops"] = 2;
    doc["kvio"]["cache"]["cut_bytes_moved"] = 4096;
    std::ostringstream cut;
    print_report(cut, doc);
    EXPECT_NE(cut.str().find("NOTE: 2 cache ops were cut at the end of the run (in flight when it stopped; 4096 bytes "
                             "moved by them): counted in kvio.cache.cut_ops, not as done\n"),
              std::string::npos)
        << cut.str();
    doc["kvio"]["cache"] = {{"failed_writes", 0}, {"failed_reads", 0}, {"verify_reads", {{"checked_bytes", 123456}}}};
    std::ostringstream clean;
    print_report(clean, doc);
    EXPECT_NE(
        clean.str().find("Read check (--verify-reads): 123456 bytes read back from storage were the bytes written"),
        std::string::npos)
        << clean.str();
    EXPECT_EQ(clean.str().find("WARNING"), std::string::npos) << clean.str();
}

// The assessment prints its figures as benchmark.py does (ratios as percentages, numbers with two decimals and
// the unit), not as raw JSON floats ("0.6268115942028986 ratio (target 0.3)" before).
TEST(ServingReport, AssessmentCriteriaAreFormattedAsTheBenchmarkDoes) {
    using kvio::serving::format_criterion;
    EXPECT_EQ(format_criterion(
                  {{"name", "Cache Hit Rate"}, {"target", 0.3}, {"actual", 0.6268115942028986}, {"unit", "ratio"}}),
              "Cache Hit Rate: 62.7% (target: 30.0%)");
    EXPECT_EQ(format_criterion(
                  {{"name", "Storage Write P95 Latency"}, {"target", 500}, {"actual", 9728.7312}, {"unit", "ms"}}),
              "Storage Write P95 Latency: 9728.73ms (target: 500.00ms)");
    EXPECT_EQ(
        format_criterion({{"name", "Storage Read Bandwidth"}, {"target", 0}, {"actual", 0.16421}, {"unit", "GB/s"}}),
        "Storage Read Bandwidth: 0.16GB/s (target: 0.00GB/s)");
}

// The console report has the newest benchmark's sections in its order (benchmark.py _print_summary, then the
// device tracing and the fio job; docs/simulate.md "Console"), with figures from the results: block sizes from the
// live entries, KV ops/s over the configured duration, per-tier P95s, cache-type hits, prefix caching only when it
// hit, and the traced histograms' percentile buckets.
TEST(ServingReport, ConsoleHasTheBenchmarksSectionsInItsOrder) {
    using J = nlohmann::ordered_json;
    J lat = {{"mean", 10.0}, {"p50", 9.0}, {"p95", 20.0}, {"p99", 30.0}};
    J cs = {{"cache_hit_rate", 0.5},
            {"total_read_gb", 2.0},
            {"total_write_gb", 1.0},
            {"read_write_ratio", 2.0},
            {"read_iops", 40},
            {"write_iops", 20},
            {"gpu_entries", 0},
            {"gpu_memory_used_gb", 0.0},
            {"cpu_entries", 3},
            {"cpu_memory_used_gb", 1.5},
            {"storage_entries", 7},
            {"tier_storage_kv_bytes_read_gb", 2.0},
            {"cpu_write_p95_ms", 0.42},
            {"storage_read_p95_ms", 86.7},
            {"storage_read_device_p95_ms", 86.6},
            {"storage_read_host_p95_ms", 0.06},
            {"system_prompt_hits", 6},
            {"common_phrase_hits", 0},
            {"user_cache_hits", 9},
            {"multi_turn_hits", 1}};
    J hist = {{"unit", "ns"}, {"count", 10}, {"buckets", {{1024, 2048, 5}, {2048, 4096, 4}, {65536, 131072, 1}}}};
    J doc = {{"requests_completed", 3},
             {"total_tokens_generated", 100},
             {"summary",
              {{"elapsed_time", 10.0},
               {"avg_throughput_tokens_per_sec", 10.0},
               {"end_to_end_latency_ms", lat},
               {"storage_io_latency_ms", lat},
               {"generation_latency_ms", lat},
               {"cache_stats", cs},
               {"prefix_cache_stats", {{"prefix_hits", 0}}},
               {"multi_turn_stats", {{"cache_hits", 1}, {"cache_misses", 1}, {"hit_rate", 0.5}}},
               {"qos_metrics", J::object()}}},
             {"device_latency_tracing",
              {{"device", "loop3"}, {"devices", {{{"disk", "loop3"}, {"histograms", {{"d2c_read", hist}}}}}}}},
             {"fio_workload", "[global]\nrw=randrw\n"},
             {"kvio",
              {{"model", {{"bytes_per_token", 24576}, {"generation_ms_per_token", 0.0}}},
               {"cache", {{"entry_sizes", kvio::serving::entry_sizes_json({1048576, 2097152, 3145728, 4194304})}}},
               {"config", {{"flags", {{"duration", 20}, {"generation_mode", "none"}}}}}}}};
    std::ostringstream os;
    kvio::serving::print_report(os, doc);
    const std::string out = os.str();
    size_t at = 0;
    for (const char* h : {"BENCHMARK RESULTS",
                          "Generation Mode: none (0.0ms/token)",
                          "Block size P95:   3.9MiB",
                          "### OVERALL PERFORMANCE ###",
                          "### END-TO-END LATENCY",
                          "### PER-REQUEST STORAGE LATENCY",
                          "### STORAGE PERFORMANCE ###",
                          "Storage KV Read Operations/sec: 2.00",
                          "Storage KV Write Operations/sec: 1.00",
                          "### CACHE TIER DISTRIBUTION ###",
                          "CPU Entries: 3 (1.50GiB)",
                          "### TIER-SPECIFIC KV BYTES ###",
                          "### STORAGE KV BANDWIDTH ###",
                          "### TIER-SPECIFIC LATENCIES (Total = Host + Device) ###",
                          "CPU Write P95 (Total): 0.42 ms",
                          "### STORAGE TIER LATENCY BREAKDOWN",
                          "Device P95 (Disk I/O): 86.60 ms",
                          "### CACHE TYPE BREAKDOWNS ###",
                          "User Cache Hits: 9",
                          "### MULTI-TURN CONVERSATIONS ###",
                          "Multi-turn Hit Rate: 50.0%",
                          "### QOS LATENCY METRICS",
                          "### DEVICE LATENCY TRACING (kvio trace) ###",
                          "D2C Read (device hardware time):",
                          "Samples: 10",
                          "P50: [1, 2) us",
                          "P95: [66, 131) us",
                          "P99: [66, 131) us",
                          "### GENERATED FIO WORKLOAD ###",
                          "  rw=randrw\n",
                          "NOTES:",
                          "Pure storage I/O benchmark"}) {
        size_t p = out.find(h, at);
        ASSERT_NE(p, std::string::npos) << "missing or out of order: " << h << "\n" << out;
        at = p;
    }
    EXPECT_EQ(out.find("### PREFIX CACHING ###"), std::string::npos) << "no prefix hits: no section";
    EXPECT_EQ(out.find("### TOKEN GENERATION LATENCY"), std::string::npos) << "generation mode none";
}

// Block-size figures of the live entries use numpy's percentile (linear interpolation); none gives nulls.
TEST(ServingReport, EntrySizesAreTheBenchmarksBlockSizeFigures) {
    auto j = kvio::serving::entry_sizes_json({100, 1, 3, 2, 4});
    EXPECT_EQ(j["count"], 5);
    EXPECT_EQ(j["min_bytes"].get<double>(), 1);
    EXPECT_EQ(j["max_bytes"].get<double>(), 100);
    EXPECT_DOUBLE_EQ(j["mean_bytes"].get<double>(), 22.0);
    EXPECT_DOUBLE_EQ(j["p95_bytes"].get<double>(), 4 + 0.8 * 96);  // index (5 - 1) × 0.95 = 3.8
    auto e = kvio::serving::entry_sizes_json({});
    EXPECT_EQ(e["count"], 0);
    EXPECT_TRUE(e["p95_bytes"].is_null());
}
