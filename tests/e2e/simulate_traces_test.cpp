// End-to-end tests of kvio simulate's trace-driven arrivals (docs/mlperf-benchmark.md, "Trace replay and special
// modes") and XLSX export ("Metrics and the results JSON"): a finite BurstGPT replay drains its queue and completes
// every request (the benchmark drops them: docs/mlperf-benchmark.md, "Upstream bugs kvio fixes or keeps"), pacing by
// --trace-speedup and --request-rate, ShareGPT in every flag combination (with --disable-multi-turn the
// benchmark's workers all die, docs/mlperf-benchmark.md, "Upstream bugs kvio fixes or keeps"), one-line FILE:LINE
// errors for bad traces, and the workbook read back with openpyxl (Debian python3-openpyxl) against the results JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

/// A 12-row BurstGPT fixture: 1 s apart, 10-87 context tokens (tiny-1b: 24 KiB/token, so 0.2-2 MiB entries).
std::string write_burst_fixture(const TempDir& d) {
    std::ofstream f(d.file("burst.csv"));
    f << "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
    for (int i = 0; i < 12; ++i)
        f << i << ",ChatGPT," << 10 + 7 * i << "," << (i % 4 == 1 ? 0 : 10 + 11 * i) << ",0,Conversation log\n";
    return d.file("burst.csv");
}

/// Two conversations, three human → gpt pairs (one pair skipped: system → gpt).
std::string write_sharegpt_fixture(const TempDir& d) {
    std::ofstream(d.file("sharegpt.json")) << R"([
 {"id": "a", "conversations": [
   {"from": "human", "value": "Tell me about the KV cache of a transformer and why it grows with context."},
   {"from": "gpt", "value": "Each token's keys and values are kept per layer, so the cache grows linearly."},
   {"from": "human", "value": "And offloading?"},
   {"from": "gpt", "value": "Cold entries move to CPU memory, then to storage, and are read back on reuse."}]},
 {"id": "b", "conversations": [
   {"from": "system", "value": "be brief"}, {"from": "gpt", "value": "ok"},
   {"from": "human", "value": "Why NVMe?"}, {"from": "gpt", "value": "Capacity and bandwidth at low cost."}]}
])";
    return d.file("sharegpt.json");
}

struct TraceRun {
    CmdResult cmd;
    json results;
};

/// `kvio simulate` on a small directory tier (real I/O) unless `args` has its own --io-trace-log.
TraceRun simulate(const TempDir& d, const std::string& args) {
    TraceRun r;
    const std::string out = d.file("r.json");
    std::filesystem::remove(out);
    std::filesystem::remove_all(d.file("cache"));
    r.cmd = run(kvio_bin() +
                " simulate --model tiny-1b --num-users 4 --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none "
                "--seed 7 --progress-interval 0 --quiet --storage-capacity-gb 0.5 --cache-dir " +
                d.file("cache") + " --output " + out + " " + args);
    if (std::filesystem::exists(out)) r.results = json::parse(slurp(out));
    return r;
}

}  // namespace

// A finite replay ends when its last request completed, with every request of every pass done.
TEST(SimulateTraces, DrainedBurstReplayCompletesEveryRequest) {
    TempDir d;
    const std::string trace = write_burst_fixture(d);
    for (int cycles : {1, 3}) {
        TraceRun r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace +
                                     " --trace-speedup 0 --replay-cycles " + std::to_string(cycles));
        ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
        EXPECT_EQ(r.results["requests_completed"], 12 * cycles) << r.results["kvio"]["stop"].dump();
        const json& stop = r.results["kvio"]["stop"];
        EXPECT_EQ(stop["reason"], "replay_cycles") << stop.dump();
        EXPECT_EQ(stop["requests_issued"], 12 * cycles);
        EXPECT_EQ(stop["dropped_queued_at_stop"], 0);
        EXPECT_LT(r.results["summary"]["elapsed_time"].get<double>(), 30.0);  // ended by the drain, not --duration
        const json& t = r.results["kvio"]["trace"];
        EXPECT_EQ(t["source"], "burstgpt");
        EXPECT_EQ(t["rows"], 12);
        EXPECT_EQ(t["cycles_completed"], cycles);
        EXPECT_EQ(t["drained"], true);
        // Sizes are the trace's: context = Request tokens, generation = Response tokens.
        uint64_t gen = 0;
        for (const auto& g : r.results["kvio"]["requests"]["generate_tokens"]) gen += g.get<uint64_t>();
        uint64_t expect = 0;
        for (int i = 0; i < 12; ++i) expect += i % 4 == 1 ? 0 : 10 + 11 * i;
        EXPECT_EQ(gen, expect * uint64_t(cycles));
        EXPECT_GT(r.results["summary"]["cache_stats"]["tier_storage_kv_bytes_written_gb"].get<double>(), 0.0);
    }
}

// The arrivals follow the trace's timestamps / --trace-speedup: 11 s of trace at 10× take ~1.1 s; an infinite
// replay (--replay-cycles 0) runs to --duration.
TEST(SimulateTraces, BurstPacingFollowsTimestampsOverSpeedup) {
    TempDir d;
    const std::string trace = write_burst_fixture(d);
    TraceRun r = simulate(
        d, "--duration 60 --use-burst-trace --burst-trace-path " + trace + " --trace-speedup 10 --replay-cycles 1");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["requests_completed"], 12);
    const double t = r.results["summary"]["elapsed_time"].get<double>();
    EXPECT_GE(t, 1.1);
    EXPECT_LT(t, 10.0);
    r = simulate(d, "--duration 2 --use-burst-trace --burst-trace-path " + d.path + " --trace-speedup 20");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "duration");
    // 2 s at 20 trace-s/s = 40 trace-seconds: 3.6 passes of 12 rows (11 s each, no gap between passes). At least
    // 2 passes (load on the machine can delay the producer), at most the 4 passes begun (unpaced: millions).
    const int issued = r.results["kvio"]["stop"]["requests_issued"].get<int>();
    EXPECT_GE(issued, 24);
    EXPECT_LE(issued, 48);
}

// ShareGPT with every flag the benchmark combines it with, --disable-multi-turn included: each finite replay
// completes all of its 3 turns × cycles. Real I/O on a directory, except decode-only's prepopulation and RAG's
// documents (GiB of entries): those run logically (--io-trace-log).
TEST(SimulateTraces, ShareGptInEveryFlagCombination) {
    TempDir d;
    const std::string ds = write_sharegpt_fixture(d);
    for (const std::string& extra : std::vector<std::string>{
             "", "--disable-multi-turn", "--disable-prefix-caching --disable-multi-turn", "--prefill-only",
             "--decode-only --num-users 1 --io-trace-log " + d.file("ops.csv"),
             "--enable-rag --rag-num-docs 2 --io-trace-log " + d.file("ops.csv"), "--max-concurrent-allocs 1",
             "--use-burst-trace --burst-trace-path /nonexistent.csv"}) {
        TraceRun r = simulate(d, "--duration 60 --dataset-path " + ds + " --replay-cycles 2 " + extra);
        ASSERT_EQ(r.cmd.status, 0) << extra << ": " << r.cmd.err;
        EXPECT_EQ(r.results["requests_completed"], 6) << extra;
        EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "replay_cycles") << extra;
        const json& t = r.results["kvio"]["trace"];
        EXPECT_EQ(t["source"], "sharegpt") << extra;  // --dataset-path takes precedence over --use-burst-trace
        EXPECT_EQ(t["turns"], 3);
        EXPECT_EQ(t["pairs_skipped_not_human_gpt"], 1);
        for (const auto& u : r.results["kvio"]["requests"]["user_id"])
            EXPECT_EQ(u.get<std::string>().rfind("dataset_user_", 0), 0u) << u;
    }
    // --request-rate paces the replay: 6 requests at 5/s are 5 gaps of 0.2 s.
    TraceRun r = simulate(d, "--duration 60 --dataset-path " + ds + " --replay-cycles 2 --request-rate 5");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_GE(r.results["summary"]["elapsed_time"].get<double>(), 1.0);
    EXPECT_EQ(r.results["kvio"]["offered_load_req_per_s"], 5.0);
    // --max-requests still stops a replay.
    r = simulate(d, "--duration 60 --dataset-path " + ds + " --request-rate 50 --max-requests 4");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "max_requests");
    EXPECT_GE(r.results["requests_completed"].get<int>(), 4);
}

// Bad traces are refused before the run, in one line naming FILE:LINE and the field; no results are written.
TEST(SimulateTraces, BadTracesAreOneLineErrorsNamingFileLineAndField) {
    TempDir d;
    std::ofstream(d.file("bad.csv")) << "Timestamp,Model,Request tokens,Response tokens\n1,a,10,2\n2,a,ten,2\n";
    std::ofstream(d.file("bad.json")) << "[\n {\"conversations\": [\n   {\"from\": \"human\", \"value\": [\"x\"]}]}]";
    struct Case {
        std::string args, needle;
    };
    for (const Case& c :
         std::vector<Case>{{"--use-burst-trace --burst-trace-path " + d.file("bad.csv"),
                            d.file("bad.csv") + ":3: field 'Request tokens': 'ten'"},
                           {"--use-burst-trace --burst-trace-path " + d.path + "/none*.csv", "matches no file"},
                           {"--dataset-path " + d.file("bad.json"),
                            d.file("bad.json") + ":3: element 1: field 'value': expected a string"},
                           {"--dataset-path " + d.file("missing.json"), d.file("missing.json") + ": cannot open"}}) {
        TraceRun r = simulate(d, "--duration 5 " + c.args);
        EXPECT_EQ(r.cmd.status, 1) << c.args;
        EXPECT_NE(r.cmd.err.find(c.needle), std::string::npos) << c.args << ": " << r.cmd.err;
        size_t lines = 0;
        std::istringstream in(r.cmd.err);
        for (std::string l; std::getline(in, l);) lines += !l.empty();
        EXPECT_EQ(lines, 1u) << r.cmd.err;
        EXPECT_TRUE(r.results.is_null()) << c.args;
    }
}

namespace {
/// The workbook as JSON {sheet name: [[row cells]...]} read by openpyxl (/usr/bin/python3: Debian's python3-openpyxl).
json read_xlsx(const TempDir& d, const std::string& path) {
    std::ofstream(d.file("read_xlsx.py"))
        << "import json, sys, openpyxl\n"
           "wb = openpyxl.load_workbook(sys.argv[1], read_only=True)\n"
           "print(json.dumps({ws.title: [list(r) for r in ws.iter_rows(values_only=True)] for ws in wb}))\n";
    CmdResult r = run("/usr/bin/python3 " + d.file("read_xlsx.py") + " " + path);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out) : json();
}

void expect_same_number(const json& cell, const json& expected, const std::string& what) {
    ASSERT_TRUE(cell.is_number()) << what << ": " << cell.dump();
    ASSERT_TRUE(expected.is_number()) << what << ": " << expected.dump();
    const double a = cell.get<double>(), b = expected.get<double>();
    EXPECT_NEAR(a, b, std::abs(b) * 1e-15) << what;
}
}  // namespace

// --xlsx-output: the benchmark's sheets and columns (docs/mlperf-benchmark.md, "Metrics and the results JSON"), values
// equal to the results JSON.
TEST(SimulateTraces, XlsxHasTheBenchmarksSheetsWithTheResultsValues) {
    TempDir d;
    const std::string trace = write_burst_fixture(d);
    TraceRun r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace +
                                 " --trace-speedup 0 --replay-cycles 2 --performance-profile latency --xlsx-output " +
                                 d.file("r.xlsx"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json wb = read_xlsx(d, d.file("r.xlsx"));
    ASSERT_TRUE(wb.is_object());
    std::vector<std::string> names;
    for (auto it = wb.begin(); it != wb.end(); ++it) names.push_back(it.key());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"Performance Metrics", "QoS Metrics", "Run Parameters", "Summary"}));

    const json& s = r.results["summary"];
    const json& cs = s["cache_stats"];
    // Performance Metrics: Metric | Value, values from summary.
    std::map<std::string, json> metrics, params;
    ASSERT_EQ(wb["Performance Metrics"][0], json({"Metric", "Value"}));
    for (size_t i = 1; i < wb["Performance Metrics"].size(); ++i)
        metrics[wb["Performance Metrics"][i][0]] = wb["Performance Metrics"][i][1];
    EXPECT_EQ(metrics.size(), 72u);
    const std::vector<std::pair<std::string, json>> expect = {
        {"Total Requests", s["total_requests"]},
        {"Total Tokens", s["total_tokens"]},
        {"Elapsed Time (s)", s["elapsed_time"]},
        {"Avg Throughput (tok/s)", s["avg_throughput_tokens_per_sec"]},
        {"Storage Throughput (tok/s)", s["storage_throughput_tokens_per_sec"]},
        {"Requests/sec", s["requests_per_second"]},
        {"E2E Latency Mean (ms)", s["end_to_end_latency_ms"]["mean"]},
        {"E2E Latency P99.99 (ms)", s["end_to_end_latency_ms"]["p9999"]},
        {"Storage Latency P95 (ms)", s["storage_io_latency_ms"]["p95"]},
        {"Gen Latency P99 (ms)", s["generation_latency_ms"]["p99"]},
        {"Storage Tier Read Total P95 (ms)", cs["storage_read_p95_ms"]},
        {"Storage Tier Write Device P99.9 (ms)", cs["storage_write_device_p999_ms"]},
        {"Storage Tier Read Host P50 (ms)", cs["storage_read_host_p50_ms"]},
        {"Cache Hit Rate", cs["cache_hit_rate"]},
        {"Read/Write Ratio", cs["read_write_ratio"]},
        {"Total Read (GiB)", cs["total_read_gb"]},
        {"Total Write (GiB)", cs["total_write_gb"]},
        {"Tier Storage KV Bytes Written (GiB)", cs["tier_storage_kv_bytes_written_gb"]},
        {"Tier Storage KV Bytes Read (GiB)", cs["tier_storage_kv_bytes_read_gb"]},
        {"Tier Storage Read Bandwidth (GiB/s)", cs["tier_storage_read_bandwidth_gbps"]},
        {"Tier Storage Write Bandwidth (GiB/s)", cs["tier_storage_write_bandwidth_gbps"]},
        {"Storage Entries", cs["storage_entries"]},
        {"Multi-turn Hit Rate", s["multi_turn_stats"]["hit_rate"]},
    };
    for (const auto& [label, value] : expect) expect_same_number(metrics[label], value, label);
    EXPECT_EQ(metrics["Total Requests"], 24);
    EXPECT_GT(metrics["Storage Tier Read Total P95 (ms)"].get<double>(), 0.0);  // real I/O on the directory tier

    // Run Parameters: Parameter | Value, from the flags.
    ASSERT_EQ(wb["Run Parameters"][0], json({"Parameter", "Value"}));
    for (size_t i = 1; i < wb["Run Parameters"].size(); ++i)
        params[wb["Run Parameters"][i][0]] = wb["Run Parameters"][i][1];
    EXPECT_EQ(params.size(), 27u);
    const json& flags = r.results["kvio"]["config"]["flags"];
    EXPECT_EQ(params["Model"], "tiny-1b");
    EXPECT_EQ(params["Num Users"], flags["num_users"]);
    EXPECT_EQ(params["Duration (s)"], 60);
    EXPECT_EQ(params["Seed"], 7);
    EXPECT_EQ(params["Multi-turn"], true);
    EXPECT_EQ(params["Autoscaling"], false);
    EXPECT_EQ(params["Dataset Path"], "N/A");
    EXPECT_EQ(params["Cache Dir"], d.file("cache"));
    EXPECT_EQ(params["Replay Cycles"], 2);
    EXPECT_EQ(params["Trace Speedup"], 0);
    EXPECT_EQ(params["Storage Capacity (GiB)"], 0.5);
    EXPECT_TRUE(params["Timestamp"].is_string());

    // Summary: one row = the run parameters then the metrics, in the sheets' order.
    ASSERT_EQ(wb["Summary"].size(), 2u);
    const json& cols = wb["Summary"][0];
    const json& row = wb["Summary"][1];
    ASSERT_EQ(cols.size(), 27u + 72u);
    for (size_t i = 0; i < cols.size(); ++i) {
        const json& sheet = i < 27 ? wb["Run Parameters"] : wb["Performance Metrics"];
        const size_t k = i < 27 ? i + 1 : i - 27 + 1;
        EXPECT_EQ(cols[i], sheet[k][0]) << i;
        EXPECT_EQ(row[i], sheet[k][1]) << cols[i];
    }

    // QoS Metrics: one row per class with data.
    const json& q = wb["QoS Metrics"];
    ASSERT_EQ(q[0], json({"QoS Level", "Total Requests", "Latency P95 (ms)", "Latency P99 (ms)", "SLA Met",
                          "SLA Compliance"}));
    size_t classes = 0;
    for (auto it = s["qos_metrics"].begin(); it != s["qos_metrics"].end(); ++it) {
        if (it.value().contains("no_data")) continue;
        ++classes;
        const json* found = nullptr;
        for (size_t i = 1; i < q.size(); ++i)
            if (q[i][0] == it.key()) found = &q[i];
        ASSERT_TRUE(found) << it.key();
        EXPECT_EQ((*found)[1], it.value()["total_requests"]);
        expect_same_number((*found)[2], it.value()["latency_ms"]["p95"], it.key() + " P95");
        EXPECT_EQ((*found)[4], it.value()["sla"]["met"]);
        expect_same_number((*found)[5], it.value()["sla"]["compliance"], it.key() + " compliance");
    }
    EXPECT_EQ(q.size(), classes + 1);

    // A name without .xlsx gets the Summary row as CSV (the benchmark's fallback); the throughput profile shows
    // "N/A (throughput mode)" for the SLA columns.
    r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace +
                        " --trace-speedup 0 --replay-cycles 1 --xlsx-output " + d.file("summary"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const std::string csv = slurp(d.file("summary.csv"));
    EXPECT_EQ(csv.rfind("Timestamp,Model,Num Users,Duration (s),", 0), 0u) << csv.substr(0, 200);
    EXPECT_NE(csv.find(",tiny-1b,4,60,"), std::string::npos) << csv;
    r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace +
                        " --trace-speedup 0 --replay-cycles 1 --performance-profile throughput --xlsx-output " +
                        d.file("t.xlsx"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json wt = read_xlsx(d, d.file("t.xlsx"));
    ASSERT_GT(wt["QoS Metrics"].size(), 1u);
    EXPECT_EQ(wt["QoS Metrics"][1][4], "N/A (throughput mode)");
    // An --xlsx-output that cannot be written is refused before the run.
    r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace + " --xlsx-output " + d.path +
                        "/no/such/dir/r.xlsx");
    EXPECT_EQ(r.cmd.status, 1);
    EXPECT_NE(r.cmd.err.find("--xlsx-output"), std::string::npos) << r.cmd.err;
    EXPECT_TRUE(r.results.is_null());
}

// With --enable-latency-tracing the workbook also has the benchmark's Device Tracing and Trace Histograms sheets,
// from kvio's histograms of the traced disk (ns → us): samples = the histogram's count, every bucket listed.
TEST(SimulateTraces, XlsxDeviceTracingSheetsFromTheTracer) {
    Ext4Mount ext4(768ull << 20);
    TempDir d;
    const std::string trace = write_burst_fixture(d);
    TraceRun r = simulate(d, "--duration 60 --use-burst-trace --burst-trace-path " + trace +
                                 " --trace-speedup 0 --replay-cycles 1 "
                                 "--max-concurrent-allocs 1 --enable-latency-tracing --cache-dir " +
                                 ext4.mnt + "/cache --xlsx-output " + d.file("r.xlsx"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["requests_completed"], 12);
    const json& devs = r.results["device_latency_tracing"]["devices"];
    ASSERT_FALSE(devs.empty()) << r.results["device_latency_tracing"].dump();
    const json wb = read_xlsx(d, d.file("r.xlsx"));
    ASSERT_TRUE(wb.contains("Device Tracing")) << wb.dump().substr(0, 300);
    ASSERT_TRUE(wb.contains("Trace Histograms"));
    const json& dt = wb["Device Tracing"];
    ASSERT_EQ(dt[0], json({"Metric", "Description", "Samples", "P50", "P95", "P99", "Min Bucket", "Max Bucket"}));
    const json& h = devs[0]["histograms"]["d2c_write"];
    ASSERT_GT(h["count"].get<uint64_t>(), 0u) << devs[0].dump().substr(0, 500);
    const json* row = nullptr;
    for (size_t i = 1; i < dt.size(); ++i)
        if (dt[i][0] == "D2C Write (us)") row = &dt[i];
    ASSERT_TRUE(row) << dt.dump();
    EXPECT_EQ((*row)[2], h["count"]);
    expect_same_number((*row)[6], json(h["buckets"].front()[0].get<double>() / 1e3), "min bucket");
    expect_same_number((*row)[7], json(h["buckets"].back()[1].get<double>() / 1e3), "max bucket");
    size_t buckets = 0;
    for (const auto& b : wb["Trace Histograms"])
        if (b[0] == "D2C Write (us)") ++buckets;
    EXPECT_EQ(buckets, h["buckets"].size());
}
