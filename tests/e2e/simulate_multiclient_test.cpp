// End-to-end tests of `kvio simulate` with many clients (docs/simulate.md "Many clients"): --num-clients N
// processes on this host and `mpirun -np N kvio simulate --mpi`. Each run's merged result is checked against the
// same clients' own results files merged here by a reference merge written independently of merge_results.cpp
// (sums, numpy-style percentiles over the concatenated lists, the MLCommons aggregation figures); plus the
// per-client cache directories and seeds, a SIGINT reaching every client, and the build's MPI line in --help.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

double pct(std::vector<double> v, double q) {  // numpy.percentile, 'linear'
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = double(v.size() - 1) * q / 100.0;
    const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

void append(std::vector<double>& to, const json& list) {
    for (const auto& x : list) to.push_back(x.get<double>());
}

void expect_close(double got, double want, const std::string& what) {
    EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::fabs(want))) << what;
}

/// The reference merge of the clients' own results (docs/mlperf-benchmark.md, "Multi-client runs"'s method: concatenate
/// the per-request lists, sum the counters; MLCommons: Σ read bandwidth, max storage P95), compared key by key with
/// kvio's merged result.
void expect_merged_like_reference(const json& merged, const std::vector<json>& clients) {
    uint64_t requests = 0, tokens = 0, read_bytes = 0, write_bytes = 0, read_ops = 0, write_ops = 0, entries = 0,
             hits = 0;
    double elapsed = 0, bw_sum = 0, p95_max = 0, read_gb = 0;
    std::vector<double> e2e, storage, gen, dev_reads, storage_writes;
    std::map<std::string, uint64_t> per_class;
    for (const auto& c : clients) {
        const json& s = c["summary"];
        const json& cs = s["cache_stats"];
        requests += c["requests_completed"].get<uint64_t>();
        tokens += c["total_tokens_generated"].get<uint64_t>();
        read_bytes += cs["total_read_bytes"].get<uint64_t>();
        write_bytes += cs["total_write_bytes"].get<uint64_t>();
        read_ops += cs["read_iops"].get<uint64_t>();
        write_ops += cs["write_iops"].get<uint64_t>();
        entries += cs["storage_entries"].get<uint64_t>();
        hits += cs["cache_hits"].get<uint64_t>();
        read_gb += cs["tier_storage_kv_bytes_read_gb"].get<double>();
        elapsed = std::max(elapsed, s["elapsed_time"].get<double>());
        bw_sum += cs["tier_storage_read_bandwidth_gbps"].get<double>();
        p95_max = std::max(p95_max, s["storage_io_latency_ms"]["p95"].get<double>());
        append(e2e, c["end_to_end_latencies"]);
        append(storage, c["storage_latencies"]);
        append(gen, c["generation_latencies"]);
        append(dev_reads, c["kvio"]["merge_state"]["cache_stats"]["storage_read_device"]);
        append(storage_writes, c["kvio"]["merge_state"]["cache_stats"]["write_lat"][2]);
        for (const auto& q : c["kvio"]["requests"]["qos"]) ++per_class[q.get<std::string>()];
    }
    ASSERT_GT(requests, 0u) << "the clients completed no request: nothing to compare";
    ASSERT_FALSE(dev_reads.empty()) << "no storage reads: the per-op percentiles are not exercised";
    EXPECT_EQ(merged["requests_completed"].get<uint64_t>(), requests);
    EXPECT_EQ(merged["total_tokens_generated"].get<uint64_t>(), tokens);
    EXPECT_EQ(merged["end_to_end_latencies"].size(), e2e.size());
    const json& s = merged["summary"];
    EXPECT_EQ(s["total_requests"].get<uint64_t>(), requests);
    expect_close(s["elapsed_time"].get<double>(), elapsed, "elapsed_time");
    expect_close(s["avg_throughput_tokens_per_sec"].get<double>(), double(tokens) / elapsed, "tokens/s");
    expect_close(s["requests_per_second"].get<double>(), double(requests) / elapsed, "requests/s");
    for (double q : {50.0, 95.0, 99.0}) {
        const std::string k = q == 50 ? "p50" : q == 95 ? "p95" : "p99";
        expect_close(s["end_to_end_latency_ms"][k].get<double>(), pct(e2e, q) * 1000, "e2e " + k);
        expect_close(s["storage_io_latency_ms"][k].get<double>(), pct(storage, q) * 1000, "storage " + k);
        expect_close(s["generation_latency_ms"][k].get<double>(), pct(gen, q) * 1000, "generation " + k);
    }
    const json& cs = s["cache_stats"];
    EXPECT_EQ(cs["total_read_bytes"].get<uint64_t>(), read_bytes);
    EXPECT_EQ(cs["total_write_bytes"].get<uint64_t>(), write_bytes);
    EXPECT_EQ(cs["read_iops"].get<uint64_t>(), read_ops);
    EXPECT_EQ(cs["write_iops"].get<uint64_t>(), write_ops);
    EXPECT_EQ(cs["storage_entries"].get<uint64_t>(), entries);
    EXPECT_EQ(cs["cache_hits"].get<uint64_t>(), hits);
    expect_close(cs["tier_storage_kv_bytes_read_gb"].get<double>(), read_gb, "storage GiB read");
    expect_close(cs["tier_storage_read_bandwidth_gbps"].get<double>(), read_gb / elapsed, "storage read GiB/s");
    expect_close(cs["storage_read_device_p95_ms"].get<double>(), pct(dev_reads, 95) * 1000, "device read P95");
    expect_close(cs["storage_write_p50_ms"].get<double>(), pct(storage_writes, 50) * 1000, "storage write P50");
    for (const auto& [cls, n] : per_class) EXPECT_EQ(s["qos_metrics"][cls]["total_requests"].get<uint64_t>(), n) << cls;
    const json& a = merged["kvio"]["mlcommons_aggregation"];
    expect_close(a["aggregated_bandwidth_gbps"].get<double>(), bw_sum, "aggregated_bandwidth_gbps");
    expect_close(a["aggregated_p95_latency_ms"].get<double>(), p95_max, "aggregated_p95_latency_ms");
    EXPECT_EQ(a["total_ranks"].get<size_t>(), clients.size());
    EXPECT_FALSE(a["partial_failure"].get<bool>());
    ASSERT_EQ(merged["kvio"]["clients"].size(), clients.size());
}

/// The clients' own results files next to `out` (<out without .json>.rank<i>.json), parsed.
std::vector<json> client_files(const TempDir& dir, int n) {
    std::vector<json> v;
    for (int i = 0; i < n; ++i) {
        const std::string f = dir.file("r.rank" + std::to_string(i) + ".json");
        EXPECT_TRUE(std::filesystem::exists(f)) << f;
        v.push_back(std::filesystem::exists(f) ? json::parse(slurp(f)) : json());
    }
    return v;
}

// Storage-only (every entry on the storage tier), small model, no generation sleep: a few seconds of real I/O.
std::string sim_args(const TempDir& dir, int duration) {
    return "--model tiny-1b --num-users 4 --duration " + std::to_string(duration) +
           " --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 7 --progress-interval 0 --cache-dir " +
           dir.file("cache") + " --output " + dir.file("r.json");
}

void expect_clients_own_dirs_and_seeds(const TempDir& dir, const std::vector<json>& clients) {
    for (size_t i = 0; i < clients.size(); ++i) {
        EXPECT_EQ(clients[i]["kvio"]["seed_used"].get<int64_t>(), 7 + int64_t(i)) << "client " << i;
        EXPECT_EQ(clients[i]["kvio"]["config"]["flags"]["cache_dir"].get<std::string>(),
                  dir.file("cache") + "/rank_" + std::to_string(i));
        EXPECT_TRUE(std::filesystem::is_directory(dir.file("cache/rank_" + std::to_string(i))));
    }
}

}  // namespace

TEST(SimulateMultiClient, ThreeProcessesMergeLikeTheReference) {
    TempDir dir;
    CmdResult r = run(kvio_bin() + " simulate " + sim_args(dir, 3) + " --num-clients 3");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("MLCommons aggregation: storage read bandwidth"), std::string::npos) << r.out;
    const json merged = json::parse(slurp(dir.file("r.json")));
    EXPECT_EQ(merged["kvio"]["merged"]["launcher"], "processes");
    EXPECT_EQ(merged["kvio"]["config"]["flags"]["num_clients"], 3);
    std::vector<json> clients = client_files(dir, 3);
    expect_clients_own_dirs_and_seeds(dir, clients);
    expect_merged_like_reference(merged, clients);
}

TEST(SimulateMultiClient, SigintReachesEveryClientAndTheMergeIsWritten) {
    TempDir dir;
    CmdResult r = run(kvio_bin() + " simulate " + sim_args(dir, 120) +
                      " --num-clients 2 --quiet & p=$!; sleep 3; kill -INT $p; wait $p");
    EXPECT_EQ(r.status, 130) << r.err;
    ASSERT_TRUE(std::filesystem::exists(dir.file("r.json"))) << r.err;
    const json merged = json::parse(slurp(dir.file("r.json")));
    std::vector<json> clients = client_files(dir, 2);
    for (size_t i = 0; i < clients.size(); ++i) {
        EXPECT_EQ(clients[i]["kvio"]["stop"]["signal"].get<int>(), 2) << "client " << i << " did not get SIGINT";
        EXPECT_LT(clients[i]["summary"]["elapsed_time"].get<double>(), 60.0);
    }
    expect_merged_like_reference(merged, clients);
}

// The launcher killed outright (SIGKILL: nothing forwarded) must not leave its clients running to the end of the
// duration: each gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and writes its own results, flagged stopped.
TEST(SimulateMultiClient, KilledLauncherLeavesNoClientRunning) {
    TempDir dir;
    CmdResult r =
        run(kvio_bin() + " simulate " + sim_args(dir, 120) + " --num-clients 2 --quiet 2>" + dir.file("err.txt") +
            " & p=$!; for i in $(seq 100); do [ $(pgrep -P $p | wc -l) = 2 ] && break; sleep 0.1; done; "
            "sleep 2; kids=$(pgrep -P $p); kill -KILL $p; wait $p; echo \"clients: $kids\"; "
            "for i in $(seq 300); do n=0; for k in $kids; do [ -d /proc/$k ] && n=$((n+1)); done; "
            "[ $n = 0 ] && break; sleep 0.1; done; echo \"left: $n\"");
    EXPECT_NE(r.out.find("left: 0"), std::string::npos) << r.out << slurp(dir.file("err.txt"));
    EXPECT_EQ(r.out.find("clients: \n"), std::string::npos) << "no client was seen running: " << r.out;
    std::vector<json> clients = client_files(dir, 2);
    for (size_t i = 0; i < clients.size(); ++i) {
        EXPECT_EQ(clients[i]["kvio"]["stop"]["signal"].get<int>(), 15) << "client " << i;
        EXPECT_LT(clients[i]["summary"]["elapsed_time"].get<double>(), 60.0);
    }
}

TEST(SimulateMultiClient, MpirunThreeRanksGatherLikeTheReference) {
    TempDir dir;
    CmdResult r = run("mpirun --allow-run-as-root --oversubscribe -np 3 " + kvio_bin() + " simulate " +
                      sim_args(dir, 3) + " --mpi");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const json merged = json::parse(slurp(dir.file("r.json")));
    EXPECT_EQ(merged["kvio"]["merged"]["launcher"], "mpi");
    EXPECT_EQ(merged["kvio"]["config"]["flags"]["mpi"], true);
    std::vector<json> clients = client_files(dir, 3);
    expect_clients_own_dirs_and_seeds(dir, clients);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(merged["kvio"]["clients"][i]["rank"].get<int>(), i);
    expect_merged_like_reference(merged, clients);
}

// Every rank parses the same command line: a refused one is said once (by rank 0), not once per rank.
TEST(SimulateMultiClient, MpirunRefusalIsSaidOnce) {
    TempDir dir;
    CmdResult r = run("mpirun --allow-run-as-root --oversubscribe -np 3 " + kvio_bin() + " simulate " +
                      sim_args(dir, 3) + " --mpi --num-clients 2 2>&1");
    EXPECT_NE(r.status, 0);
    size_t said = 0;
    for (size_t at = r.out.find("instead of --num-clients"); at != std::string::npos;
         at = r.out.find("instead of --num-clients", at + 1))
        ++said;
    EXPECT_EQ(said, 1u) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir.file("r.json")));
}

// Ctrl-C to mpirun: it sends SIGTERM to every rank; each stops and the gather and the merge still happen.
TEST(SimulateMultiClient, SigintToMpirunStillGathersTheMerge) {
    TempDir dir;
    CmdResult r = run("mpirun --allow-run-as-root --oversubscribe -np 2 " + kvio_bin() + " simulate " +
                      sim_args(dir, 120) + " --mpi --quiet & p=$!; sleep 4; kill -INT $p; wait $p");
    EXPECT_NE(r.status, 0);
    ASSERT_TRUE(std::filesystem::exists(dir.file("r.json"))) << r.err;
    const json merged = json::parse(slurp(dir.file("r.json")));
    std::vector<json> clients = client_files(dir, 2);
    for (const auto& c : merged["kvio"]["clients"]) {
        EXPECT_EQ(c["stop"]["signal"].get<int>(), 15) << c.dump();
        EXPECT_LT(c["summary"]["elapsed_time"].get<double>(), 60.0);
    }
    expect_merged_like_reference(merged, clients);
}

TEST(SimulateMultiClient, HelpNamesTheMpiBuildAndMpiRefusesNumClients) {
    CmdResult h = run(kvio_bin() + " simulate --help");
    ASSERT_EQ(h.status, 0);
    // scripts/deps.sh installs libopenmpi-dev, so the test build has MPI.
    EXPECT_NE(h.out.find("MPI: built with Open MPI"), std::string::npos) << h.out;
    TempDir dir;
    CmdResult r = run(kvio_bin() + " simulate " + sim_args(dir, 3) + " --mpi --num-clients 2");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--mpi runs one client per rank"), std::string::npos) << r.err;
}
