// `kvio simulate`'s options: an MLPerf command line parses unchanged, and the benchmark's refusals hold.
#include <gtest/gtest.h>

#include <sstream>

#include "common/error.h"
#include "cli/simulate_options.h"

using namespace kvio;
using kvio::serving::SimConfig;

namespace {
// Parses `args` after "simulate" into a fresh SimConfig, then finishes it; returns the warnings printed.
std::string parse(std::vector<std::string> args, SimConfig& c) {
    CLI::App app{"kvio"};
    auto* sub = app.add_subcommand("simulate");
    cli::add_simulate_options(sub, c);
    args.insert(args.begin(), "simulate");
    std::reverse(args.begin(), args.end());  // CLI11's vector form takes arguments last-first
    app.parse(args);
    std::ostringstream warn;
    cli::finish_simulate_options(c, warn);
    return warn.str();
}
std::string refusal(std::vector<std::string> args) {
    SimConfig c;
    try {
        parse(std::move(args), c);
    } catch (const Error& e) {
        return e.what();
    } catch (const CLI::ParseError& e) {
        return std::string("parse: ") + e.what();
    }
    return "";
}
}  // namespace

TEST(SimulateOptions, MlperfCommandLine) {
    SimConfig c;
    const std::string w = parse({"--model",
                                 "llama3.1-8b",
                                 "--num-users",
                                 "200",
                                 "--duration",
                                 "300",
                                 "--gpu-mem-gb",
                                 "0",
                                 "--cpu-mem-gb",
                                 "0",
                                 "--max-concurrent-allocs",
                                 "16",
                                 "--generation-mode",
                                 "none",
                                 "--cache-dir",
                                 "/tmp/x",
                                 "--seed",
                                 "42",
                                 "--output",
                                 "r.json"},
                                c);
    EXPECT_EQ(w, "");
    EXPECT_EQ(c.model, "llama3.1-8b");
    EXPECT_EQ(c.num_users, 200);
    EXPECT_EQ(c.duration, 300);
    EXPECT_EQ(c.gpu_mem_gb, 0);
    EXPECT_EQ(c.cpu_mem_gb, 0);
    EXPECT_EQ(c.max_concurrent_allocs, 16);
    EXPECT_EQ(c.generation_mode, "none");
    EXPECT_EQ(c.cache_dir, "/tmp/x");
    ASSERT_TRUE(c.seed.has_value());
    EXPECT_EQ(*c.seed, 42);
    EXPECT_EQ(c.output, "r.json");
    // Untouched flags keep the benchmark's defaults.
    EXPECT_EQ(c.performance_profile, "latency");
    EXPECT_FALSE(c.disable_multi_turn);
    EXPECT_EQ(c.trace_speedup, 1.0);
}

TEST(SimulateOptions, EveryFlagParses) {
    SimConfig c;
    parse({"--log-level",
           "DEBUG",
           "--disable-multi-turn",
           "--disable-prefix-caching",
           "--enable-rag",
           "--rag-num-docs",
           "3",
           "--enable-autoscaling",
           "--autoscaler-mode",
           "capacity",
           "--target-saturation",
           "0.5",
           "--performance-profile",
           "throughput",
           "--num-gpus",
           "4",
           "--tensor-parallel",
           "2",
           "--storage-io",
           "io_uring",
           "--storage-qd",
           "16",
           "--max-io-bytes",
           "1048576",
           "--gpu-tier",
           "model",
           "--gpu-bandwidth-gbps",
           "25",
           "--enable-latency-tracing",
           "--trace-dir",
           "/tmp/t",
           "--prefill-only",
           "--config",
           "tests/fixtures/mlperf-kv-config.yaml",
           "--model",
           "tiny-1b",
           "--quiet",
           "--progress-interval",
           "0"},
          c);
    EXPECT_EQ(c.log_level, "DEBUG");
    EXPECT_TRUE(c.disable_multi_turn && c.disable_prefix_caching && c.enable_rag && c.enable_autoscaling);
    EXPECT_EQ(c.rag_num_docs, 3);
    EXPECT_EQ(c.autoscaler_mode, "capacity");
    EXPECT_EQ(c.tensor_parallel, 2);
    EXPECT_EQ(c.storage_io, "io_uring");
    EXPECT_EQ(c.storage_qd, 16u);
    EXPECT_EQ(c.max_io_bytes, 1048576u);
    EXPECT_EQ(c.gpu_tier, "model");
    EXPECT_EQ(c.gpu_bandwidth_gbps, 25);
    EXPECT_TRUE(c.enable_latency_tracing && c.prefill_only && c.quiet);
    EXPECT_EQ(c.trace_dir, "/tmp/t");
    EXPECT_EQ(c.progress_interval_s, 0);
    EXPECT_EQ(c.yaml.gpu_memory_fraction, 0.9);  // --config applied
    EXPECT_FALSE(SimConfig{}.seed.has_value());
}

TEST(SimulateOptions, Refusals) {
    EXPECT_NE(refusal({"--prefill-only", "--decode-only"}).find("mutually exclusive"), std::string::npos);
    std::string e = refusal({"--num-users", "0", "--duration", "0"});
    EXPECT_NE(e.find("invalid arguments:\n  --num-users must be positive"), std::string::npos) << e;
    EXPECT_NE(e.find("\n  --duration must be positive"), std::string::npos) << e;
    e = refusal({"--num-users", "-5", "--gpu-mem-gb=-1"});  // negative values reach the benchmark's checks
    EXPECT_NE(e.find("--num-users must be positive (got -5)"), std::string::npos) << e;
    EXPECT_NE(e.find("--gpu-mem-gb cannot be negative"), std::string::npos) << e;
    EXPECT_NE(refusal({"--generation-mode", "slow"}).find("parse:"), std::string::npos);
    EXPECT_NE(refusal({"--num-users", "many"}).find("parse:"), std::string::npos);
    EXPECT_NE(refusal({"--rag-top-k", "5"}).find("parse:"), std::string::npos);  // not a benchmark flag
    EXPECT_NE(refusal({"--cache-dir", "/etc/kv"}).find("cannot be a system directory"), std::string::npos);
    EXPECT_NE(refusal({"--tensor-parallel", "2"}).find("cannot exceed --num-gpus"), std::string::npos);
    EXPECT_EQ(refusal({"--model", "gpt-9"}).rfind("Unknown model 'gpt-9'. Available models: ", 0), 0u);
    EXPECT_NE(refusal({"--config", "/nonexistent.yaml"}).find("cannot open"), std::string::npos);
    SimConfig c;
    EXPECT_NE(parse({"--num-gpus", "3", "--tensor-parallel", "3"}, c)
                  .find("warning: --tensor-parallel 3 is not a power of 2"),
              std::string::npos);
}

TEST(SimulateOptions, HelpShowsBenchmarkDefaults) {
    SimConfig c;
    CLI::App app{"kvio"};
    auto* sub = app.add_subcommand("simulate");
    cli::add_simulate_options(sub, c);
    const std::string h = sub->help();
    EXPECT_NE(h.find("--generation-mode"), std::string::npos);
    EXPECT_NE(h.find("realistic"), std::string::npos);
    EXPECT_NE(h.find("benchmark_results_<YYYYmmdd_HHMMSS>.json"), std::string::npos);
    EXPECT_NE(h.find("none,fast,realistic"), std::string::npos) << h;
}

// argparse keeps the last of a repeated option (wrappers append their own --seed/--output after the user's).
TEST(SimulateOptions, RepeatedOptionTakesTheLast) {
    SimConfig c;
    parse({"--num-users", "10", "--seed", "1", "--num-users", "3", "--seed", "42"}, c);
    EXPECT_EQ(c.num_users, 3);
    ASSERT_TRUE(c.seed.has_value());
    EXPECT_EQ(*c.seed, 42);
}
