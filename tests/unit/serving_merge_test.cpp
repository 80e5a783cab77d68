// merge_client_results (workload/serving/merge_results.h), the one merge behind --num-clients and --mpi: sums,
// exact percentiles over every client's requests and ops (not averages of the clients' percentiles), the MLCommons
// aggregation figures, per-client sections, failed clients, and the merge state's round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/results/stats_util.h"

using namespace kvio::serving;
using Json = nlohmann::ordered_json;

namespace {

// numpy.percentile 'linear', written here independently of stats_util.
double np_percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    double pos = (double(v.size()) - 1) * q / 100.0;
    size_t i = size_t(pos);
    if (i + 1 >= v.size()) return v.back();
    return v[i] + (v[i + 1] - v[i]) * (pos - double(i));
}

CacheStats stats_with(std::vector<double> storage_reads, uint64_t read_bytes, uint64_t entries) {
    CacheStats s;
    s.cache_hits = storage_reads.size();
    s.cache_misses = 1;
    s.read_operations = storage_reads.size();
    s.write_operations = 2;
    s.total_read_bytes = read_bytes;
    s.total_write_bytes = 1000;
    s.tier_bytes_read[2] = read_bytes;
    s.tier_bytes_written[2] = 1000;
    s.entries[2] = entries;
    s.tier_present[1] = s.tier_present[2] = true;
    s.limit_bytes[0] = 0;
    s.limit_bytes[1] = 1 << 20;
    s.limit_bytes[2] = std::numeric_limits<uint64_t>::max();
    s.read_lat[2] = storage_reads;
    s.storage_read_device = storage_reads;
    s.storage_read_host = std::vector<double>(storage_reads.size(), 0.0001);
    s.write_lat[2] = {0.01, 0.02};
    return s;
}

// A client's results document as run_simulation writes it (the keys the merge reads), built from its lists.
Json client_doc(const std::vector<double>& e2e, const std::vector<double>& storage, const std::vector<std::string>& qos,
                const CacheStats& cs, double elapsed, int64_t seed) {
    Json d;
    d["requests_completed"] = e2e.size();
    d["total_tokens_generated"] = 10 * e2e.size();
    double st = 0;
    for (double x : storage) st += x;
    d["total_storage_io_latency"] = st;
    d["total_generation_latency"] = 0.0;
    d["end_to_end_latencies"] = e2e;
    d["storage_latencies"] = storage;
    d["generation_latencies"] = std::vector<double>(e2e.size(), 0.0);
    d["throughput_timeline"] = Json::array();
    d["prefill_latencies"] = storage;
    d["decode_latencies"] = Json::array();
    d["multi_turn_cache_hits"] = 3;
    d["multi_turn_cache_misses"] = 1;
    d["seed"] = seed;
    Json s;
    s["total_requests"] = e2e.size();
    s["elapsed_time"] = elapsed;
    s["end_to_end_latency_ms"] = latency_summary_ms(e2e);
    s["storage_io_latency_ms"] = latency_summary_ms(storage);
    s["cache_stats"] = cache_stats_json(cs, elapsed, "latency");
    s["qos_metrics"] = {{"interactive", {{"total_requests", 1}, {"sla", {{"target_p95_ms", 50.0}}}}},
                        {"responsive", {{"no_data", true}}},
                        {"batch", {{"total_requests", 1}, {"sla", {{"target_p95_ms", 1000.0}}}}}};
    s["prefix_cache_stats"] = {{"prefix_hits", 2}, {"prefix_misses", 5}, {"bytes_saved", 100}};
    d["summary"] = s;
    d["kvio"] = {
        {"seed_used", seed},
        {"stop", {{"reason", "duration"}, {"signal", 0}, {"requests_issued", e2e.size() + 1}}},
        {"requests", {{"qos", qos}, {"user_id", std::vector<std::string>(qos.size(), "u")}}},
        {"config", {{"flags", {{"cache_dir", "/x/rank_" + std::to_string(seed)}, {"performance_profile", "latency"}}}}},
        {"merge_state", merge_state_json(cs)}};
    return d;
}

ClientResult client(int rank, Json doc) {
    ClientResult r;
    r.rank = rank;
    r.host = "h" + std::to_string(rank);
    r.output_path = "out.rank" + std::to_string(rank) + ".json";
    r.doc = std::move(doc);
    return r;
}

}  // namespace

TEST(ServingMerge, MergeStateRoundTrips) {
    CacheStats s = stats_with({0.001, 0.002, 0.003}, 4096, 2);
    s.demotion_lat[1] = {0.5};
    s.first_error = "EIO on x";
    s.storage_tokens_processed = 12.5;
    CacheStats back = cache_stats_from_state(merge_state_json(s), "client 0");
    EXPECT_EQ(back.cache_hits, s.cache_hits);
    EXPECT_EQ(back.tier_bytes_read[2], 4096u);
    EXPECT_EQ(back.limit_bytes[2], std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(back.limit_bytes[1], 1u << 20);
    EXPECT_EQ(back.storage_read_device, s.storage_read_device);
    EXPECT_EQ(back.demotion_lat[1], s.demotion_lat[1]);
    EXPECT_EQ(back.first_error, s.first_error);
    EXPECT_DOUBLE_EQ(back.storage_tokens_processed, 12.5);
    EXPECT_TRUE(back.tier_present[2]);
    EXPECT_FALSE(back.tier_present[0]);
}

TEST(ServingMerge, SumsAndExactPercentilesOverAllClients) {
    // Client 0: many fast requests; client 1: few slow ones. The merged P95 is the P95 of all requests, which is
    // neither client's P95 nor their average.
    std::vector<double> e0, s0, e1 = {1.0, 2.0, 3.0}, s1 = {0.5, 0.6, 0.7};
    std::vector<std::string> q0, q1 = {"batch", "batch", "interactive"};
    for (int i = 0; i < 40; ++i) {
        e0.push_back(0.01 * (i + 1));
        s0.push_back(0.001 * (i + 1));
        q0.push_back(i % 4 == 0 ? "interactive" : "batch");
    }
    CacheStats c0 = stats_with({0.001, 0.002, 0.004}, 3u << 30, 5), c1 = stats_with({0.1, 0.2}, 1u << 30, 0);
    Json d0 = client_doc(e0, s0, q0, c0, 10.0, 42), d1 = client_doc(e1, s1, q1, c1, 8.0, 43);
    Json m = merge_client_results({client(0, d0), client(1, d1)}, "processes");

    EXPECT_EQ(m["requests_completed"].get<uint64_t>(), 43u);
    EXPECT_EQ(m["total_tokens_generated"].get<uint64_t>(), 430u);
    EXPECT_EQ(m["multi_turn_cache_hits"].get<uint64_t>(), 6u);
    EXPECT_EQ(m["end_to_end_latencies"].size(), 43u);
    EXPECT_EQ(m["seed"].get<int64_t>(), 42);
    const Json& s = m["summary"];
    EXPECT_DOUBLE_EQ(s["elapsed_time"].get<double>(), 10.0);  // the longest client
    EXPECT_DOUBLE_EQ(s["avg_throughput_tokens_per_sec"].get<double>(), 43.0);

    std::vector<double> all_s = s0;
    all_s.insert(all_s.end(), s1.begin(), s1.end());
    const double p95 = s["storage_io_latency_ms"]["p95"].get<double>();
    EXPECT_DOUBLE_EQ(p95, np_percentile(all_s, 95) * 1000);
    const double avg_of_p95 = (d0["summary"]["storage_io_latency_ms"]["p95"].get<double>() +
                               d1["summary"]["storage_io_latency_ms"]["p95"].get<double>()) /
                              2;
    EXPECT_GT(std::fabs(p95 - avg_of_p95), 1.0) << "the merge must not average the clients' percentiles";

    // cache_stats: per-op percentiles over both clients' ops, bytes summed, bandwidth over the merged elapsed time.
    const Json& cs = s["cache_stats"];
    EXPECT_DOUBLE_EQ(cs["storage_read_device_p50_ms"].get<double>(),
                     np_percentile({0.001, 0.002, 0.004, 0.1, 0.2}, 50) * 1000);
    EXPECT_EQ(cs["total_read_bytes"].get<uint64_t>(), uint64_t(4) << 30);
    EXPECT_EQ(cs["read_iops"].get<uint64_t>(), 5u);
    EXPECT_EQ(cs["storage_entries"].get<uint64_t>(), 5u);
    EXPECT_DOUBLE_EQ(cs["tier_storage_read_bandwidth_gbps"].get<double>(), 4.0 / 10.0);

    // QoS per class from each request's class and end-to-end latency.
    EXPECT_EQ(s["qos_metrics"]["interactive"]["total_requests"].get<uint64_t>(), 11u);
    EXPECT_EQ(s["qos_metrics"]["batch"]["total_requests"].get<uint64_t>(), 32u);
    EXPECT_TRUE(s["qos_metrics"]["responsive"]["no_data"].get<bool>());
    EXPECT_DOUBLE_EQ(s["qos_metrics"]["interactive"]["latency_ms"]["max"].get<double>(), 3000.0);
    EXPECT_EQ(s["prefix_cache_stats"]["prefix_hits"].get<uint64_t>(), 4u);

    // MLCommons: Σ of the clients' storage read bandwidths, max of their per-request storage P95s.
    const Json& a = m["kvio"]["mlcommons_aggregation"];
    EXPECT_DOUBLE_EQ(a["aggregated_bandwidth_gbps"].get<double>(), 3.0 / 10.0 + 1.0 / 8.0);
    EXPECT_DOUBLE_EQ(a["aggregated_p95_latency_ms"].get<double>(),
                     d1["summary"]["storage_io_latency_ms"]["p95"].get<double>());
    EXPECT_EQ(a["ranks_served_from_cpu_tier"], Json::array({1}));
    EXPECT_FALSE(a["partial_failure"].get<bool>());

    const Json& k = m["kvio"];
    ASSERT_EQ(k["clients"].size(), 2u);
    EXPECT_EQ(k["clients"][1]["seed_used"].get<int64_t>(), 43);
    EXPECT_EQ(k["clients"][1]["host"].get<std::string>(), "h1");
    EXPECT_EQ(k["clients"][0]["summary"]["total_requests"].get<uint64_t>(), 40u);
    EXPECT_EQ(k["requests"]["client"].size(), 43u);
    EXPECT_EQ(k["requests"]["client"][42].get<int>(), 1);
    EXPECT_EQ(k["requests"]["user_id"].size(), 43u);
    EXPECT_EQ(k["stop"]["requests_issued"].get<uint64_t>(), 45u);
}

TEST(ServingMerge, FailedClientIsNamedAndAddsNothing) {
    CacheStats c0 = stats_with({0.001}, 100, 1);
    ClientResult bad;
    bad.rank = 1;
    bad.error = "cannot create cache directory";
    bad.exit_code = 1;
    Json m = merge_client_results({client(0, client_doc({0.5}, {0.1}, {"batch"}, c0, 2.0, 1)), bad}, "mpi");
    EXPECT_EQ(m["requests_completed"].get<uint64_t>(), 1u);
    EXPECT_TRUE(m["kvio"]["merged"]["partial_failure"].get<bool>());
    EXPECT_EQ(m["kvio"]["merged"]["failed_ranks"], Json::array({1}));
    EXPECT_EQ(m["kvio"]["merged"]["launcher"].get<std::string>(), "mpi");
    EXPECT_EQ(m["kvio"]["clients"][1]["error"].get<std::string>(), "cannot create cache directory");
}

// The merged results say why the run stopped (a client stopped by a signal names it over another's duration) and
// carry every client's warnings, named by rank, plus one per failed rank; each kind of first error is kept.
TEST(ServingMerge, StopReasonSignalWarningsAndFirstErrorsAreMerged) {
    CacheStats c0 = stats_with({0.001}, 100, 1), c1 = stats_with({0.002}, 100, 1);
    c1.failed_writes = 2;
    c1.first_error = c1.first_write_error = "write: No space left on device";
    c1.corrupted_reads = c1.failed_reads = 1;
    c1.first_read_error = c1.first_corruption = "payload mismatch in entry k at payload byte 0";
    Json d0 = client_doc({0.5}, {0.1}, {"batch"}, c0, 2.0, 1), d1 = client_doc({0.4}, {0.1}, {"batch"}, c1, 2.0, 2);
    d0["kvio"]["warnings"] = {"the first"};
    d1["kvio"]["stop"] = {{"reason", "signal Interrupt"}, {"signal", 2}, {"drain_s", 1.5}, {"requests_issued", 2}};
    d1["kvio"]["warnings"] = {"2 storage writes failed"};
    ClientResult bad;
    bad.rank = 2;
    bad.error = "no results";
    Json m = merge_client_results({client(0, d0), client(1, d1), bad}, "processes");
    const Json& k = m["kvio"];
    EXPECT_EQ(k["stop"]["reason"], "signal Interrupt") << k["stop"].dump();
    EXPECT_EQ(k["stop"]["signal"], 2) << k["stop"].dump();
    EXPECT_EQ(k["stop"]["drain_s"], 1.5) << k["stop"].dump();
    EXPECT_EQ(k["warnings"], Json::array({"rank 0: the first", "rank 1: 2 storage writes failed",
                                          "rank 2: no results (see kvio.clients)"}));
    EXPECT_EQ(k["cache"]["first_write_error"], "write: No space left on device");
    EXPECT_EQ(k["cache"]["first_corruption"], "payload mismatch in entry k at payload byte 0");
    EXPECT_EQ(k["cache"]["corrupted_reads"], 1);
}

TEST(ServingMerge, MalformedClientNamesRankAndField) {
    CacheStats c0 = stats_with({0.001}, 100, 1);
    Json d = client_doc({0.5}, {0.1}, {"batch"}, c0, 2.0, 1);
    d["kvio"].erase("merge_state");
    try {
        merge_client_results({client(3, d)}, "processes");
        FAIL() << "no error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("client rank 3 (out.rank3.json): field 'kvio.merge_state': missing"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ServingMerge, ClientOutputPath) {
    EXPECT_EQ(client_output_path("/r/results.json", 2), "/r/results.rank2.json");
    EXPECT_EQ(client_output_path("run", 0), "run.rank0.json");
}
