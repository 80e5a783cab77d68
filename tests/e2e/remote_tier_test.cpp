// The remote KV tier against a real redis-server each test starts (tests/e2e/redis_server.h; docs/simulate.md,
// "Remote tier"): the redis/ client's chunked, pipelined SET/GET/DEL and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "redis/client.h"
#include "tests/e2e/redis_server.h"
#include "tests/e2e/simulate_helpers.h"
#include "workload/serving/cache.h"
#include "workload/serving/conversation.h"
#include "workload/serving/prefix.h"

using namespace kvio::test;
namespace redis = kvio::redis;

TEST(RedisClient, ChunkedSetGetDelAgainstAServer) {
    RedisServer srv;
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    redis::Connection c(srv.url_struct(), 5.0);
    EXPECT_GT(c.max_bulk_len(), 0u);
    const uint64_t bytes = 10 * 1000 * 1000 + 123, chunk = 1 << 20;  // 10 chunks, the last one short
    auto byte_at = [](uint64_t off) { return char((off * 131 + 7) % 251); };
    c.set_chunks("run1:e1", bytes, chunk, [&](uint64_t off, char* dst, size_t len) {
        for (size_t i = 0; i < len; ++i) dst[i] = byte_at(off + i);
    });
    EXPECT_EQ(srv.dbsize(), 10);
    uint64_t seen = 0, wrong = 0;
    EXPECT_EQ(c.get_chunks("run1:e1", bytes, chunk,
                           [&](uint64_t off, const char* src, size_t len) {
                               for (size_t i = 0; i < len; ++i) wrong += src[i] != byte_at(off + i);
                               seen += len;
                           }),
              10u);
    EXPECT_EQ(seen, bytes);
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(srv.info("keyspace_hits"), 10);  // one GET per chunk, pipelined on one connection
    EXPECT_EQ(c.command({"STRLEN", "run1:e1:9"}).integer, long(bytes - 9 * chunk));
    EXPECT_EQ(c.del_chunks("run1:e1", bytes, chunk), 10);
    EXPECT_EQ(srv.dbsize(), 0);
    EXPECT_EQ(c.get_chunks("run1:e1", bytes, chunk, nullptr), 0u);  // absent: none found, not an error
    EXPECT_EQ(c.get_chunks("run1:e1", bytes, chunk, nullptr, "GETEX"), 0u);
    EXPECT_EQ(srv.calls("getex"), 10);  // counted apart from GET
}

TEST(RedisClient, ConnectErrorsAreOneLine) {
    RedisServer srv(64, {"--requirepass", "right"});
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    redis::Url u = srv.url_struct();
    u.password = "wrong";
    EXPECT_NE(error_of([&] { redis::Connection c(u, 2.0); }).find("AUTH refused"), std::string::npos);
    u.password = "right";
    EXPECT_EQ(error_of([&] { redis::Connection c(u, 2.0); }), "");
    redis::Url dead = redis::parse_url("redis://127.0.0.1:" + std::to_string(free_loopback_port()));
    std::string e = error_of([&] { redis::Connection c(dead, 2.0); });
    EXPECT_NE(e.find("cannot connect"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
}

// The remote tier as simulate's last tier (no --cache-dir, no CPU tier): every entry lives on the server, and what
// kvio reports is what the server counted: its SET and GET calls, the chunk GETs that found their key, the bytes it
// received and sent, and no key left behind at the end.
TEST(RemoteTier, SimulateOnRedisAgreesWithTheServer) {
    RedisServer srv(1024);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    SimRun r = simulate(dir,
                        "--model tiny-1b --num-users 2 --duration 10 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                        "--generation-mode none --max-concurrent-allocs 1 --disable-multi-turn --seed 3 "
                        "--remote-tier " +
                            srv.url() + " --remote-capacity-gb 0.4");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json* t = tier_section(r.results, "remote");
    ASSERT_NE(t, nullptr) << r.results["kvio"]["cache"].dump().substr(0, 600);
    EXPECT_EQ(tier_section(r.results, "storage"), nullptr);          // no --cache-dir: the remote tier is the last
    EXPECT_EQ((*tier_section(r.results, "cpu"))["limit_bytes"], 0);  // --cpu-mem-gb 0: every entry is remote
    const nlohmann::json& rs = (*t)["remote"];
    const nlohmann::json& cs = r.results["summary"]["cache_stats"];
    // kvio read and wrote through the tier.
    EXPECT_GT((*t)["hits"].get<uint64_t>(), 0u);
    EXPECT_GT((*t)["bytes_written"].get<uint64_t>(), 0u);
    EXPECT_GT((*t)["bytes_read"].get<uint64_t>(), 0u);
    EXPECT_GT(cs["tier_remote_kv_bytes_read_gb"].get<double>(), 0.0);
    EXPECT_TRUE(cs.contains("remote_read_p50_ms") && cs.contains("remote_read_p99_ms")) << cs.dump().substr(0, 400);
    EXPECT_EQ((*t)["bytes_written"].get<uint64_t>(), rs["bytes_sent"].get<uint64_t>());
    EXPECT_EQ((*t)["bytes_read"].get<uint64_t>(), rs["bytes_received"].get<uint64_t>());
    EXPECT_EQ(rs["errors"].get<uint64_t>(), 0u);
    // The time with a SET or GET in flight is the union of the connections' busy time: no more than their sum, no
    // less than their sum over the connections (each connection's ops run one after the other), within the run (1 ms
    // an op for the clock reads around the spans' ends).
    const double infl = rs["in_flight_s"].get<double>(),
                 busy = rs["busy_s"]["set"].get<double>() + rs["busy_s"]["get"].get<double>();
    const double slack = 1e-3 * double(rs["commands"]["set"].get<long long>() + rs["commands"]["get"].get<long long>());
    EXPECT_GT(infl, 0.0);
    EXPECT_LE(infl, busy + slack);
    EXPECT_GE(infl, busy / rs["connections"].get<double>() - slack);
    EXPECT_LE(infl, r.results["summary"]["elapsed_time"].get<double>() + slack);
    // The server counted the same commands: every chunk SET, GET and GETEX. A GET reads an entry this client wrote
    // and always finds it (no errors, no lost reads). A GETEX looks for a shared entry this client's tiers do not
    // hold: with one client that is an entry another user is still writing (two users of one prefix race), so it
    // may miss; the server's hits and misses are the chunks kvio counted found and not found.
    EXPECT_EQ(srv.calls("set"), rs["commands"]["set"].get<long long>());
    EXPECT_EQ(srv.calls("get"), rs["commands"]["get"].get<long long>());
    EXPECT_EQ(srv.calls("getex"), rs["commands"]["getex"].get<long long>());
    EXPECT_EQ(srv.info("keyspace_hits"), rs["chunk_get_hits"].get<long long>());
    EXPECT_EQ(srv.info("keyspace_misses"), rs["chunk_get_misses"].get<long long>());
    EXPECT_LE(rs["chunk_get_misses"].get<long long>(), rs["commands"]["getex"].get<long long>());
    EXPECT_EQ(rs["lost_reads"].get<long long>(), 0);
    // It received the bytes kvio sent and sent the bytes kvio read (plus RESP framing: < 256 bytes a command).
    const long long in = srv.info("total_net_input_bytes"), out = srv.info("total_net_output_bytes");
    const long long cmds = srv.calls("set") + srv.calls("get") + srv.calls("del") + 64;
    EXPECT_GE(in, rs["bytes_sent"].get<long long>());
    EXPECT_LE(in, rs["bytes_sent"].get<long long>() + 256 * cmds + (1 << 20));
    EXPECT_GE(out, rs["bytes_received"].get<long long>());
    EXPECT_LE(out, rs["bytes_received"].get<long long>() + 256 * cmds + (1 << 20));
    // The limit (--remote-capacity-gb) held in the server's memory at the end (before the run deleted its keys): the
    // entries within the tier's limit, the connections within what was set aside for them. An idle connection is
    // some 37 KB (Redis 7.0: its query and reply buffers); a reserve left out would be passed by that much, and by a
    // chunk more for each connection whose last command was a SET.
    const long long grew =
        rs["server"]["used_memory_now"].get<long long>() - rs["server"]["used_memory_start"].get<long long>();
    const long long conn = rs["connection_bytes"].get<long long>();
    EXPECT_GT(conn, 0);
    EXPECT_LE(rs["connections"].get<long long>(), rs["connections_planned"].get<long long>());
    EXPECT_EQ(rs["connections_mode"], "shared");  // the default: one connection per worker thread
    EXPECT_EQ(rs["connections_planned"].get<long long>(), 2);
    EXPECT_FALSE(rs.contains("connections_write"));
    // A connection whose last command was a chunk's SET keeps a query buffer of a chunk (Redis allocates the next
    // one of the argument's size): set aside too, for the connections that SET.
    const long long qbuf = rs["connection_query_buffer_bytes"].get<long long>();
    EXPECT_GE(qbuf, rs["chunk_bytes"].get<long long>());
    EXPECT_EQ(rs["connections_planned_set"].get<long long>(), 2);
    EXPECT_EQ((*t)["limit_bytes"].get<long long>() + conn * rs["connections_planned"].get<long long>() +
                  qbuf * rs["connections_planned_set"].get<long long>(),
              (long long)(0.4 * double(1ull << 30)));
    EXPECT_LE(grew, (long long)(0.4 * double(1ull << 30)));
    // The footprint is the keys' and values' allocations; the connections' input buffers (up to a chunk each while
    // a SET streams in) come on top.
    EXPECT_LE(grew, (*t)["used_bytes"].get<long long>() +
                        rs["connections"].get<long long>() * rs["chunk_bytes"].get<long long>() + (1 << 20));
    // ... and nothing of the run is left on the server.
    EXPECT_EQ(srv.dbsize(), 0);
}

namespace {

/// The clients' own results files next to DIR/r.json (r.rank<i>.json), parsed (null when absent).
std::vector<nlohmann::json> rank_files(const TempDir& dir, int n) {
    std::vector<nlohmann::json> v;
    for (int i = 0; i < n; ++i) {
        const std::string f = dir.file("r.rank" + std::to_string(i) + ".json");
        v.push_back(std::filesystem::exists(f) ? nlohmann::json::parse(slurp(f)) : nlohmann::json());
    }
    return v;
}

long long sum_of(const std::vector<nlohmann::json>& remotes, const std::string& field) {
    long long s = 0;
    for (const auto& r : remotes) s += r.at(field).get<long long>();
    return s;
}

}  // namespace

// Two clients (--num-clients 2) on one server share one run id: the system-prompt entries one client wrote are hits
// for the other. Reads of entries the client does not hold go out as GETEX (GET for its own), so the server's
// commandstats and keyspace counters tell them apart, and the clients' counts must equal the server's exactly.
TEST(RemoteTier, TwoClientsShareSystemPromptEntries) {
    RedisServer srv(1024);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    // Every request starts with one of the 3 system prompts: a client's first request on each is the only one that
    // may miss, so foreign hits do not hang on how many requests a loaded machine completes.
    {
        std::ofstream y(dir.file("prefix.yaml"));
        y << "prefix_cache:\n  system_prompt_hit_probability: 1.0\n";
    }
    SimRun r = simulate(dir, "--config " + dir.file("prefix.yaml") +
                                 " --model tiny-1b --num-users 4 --duration 5 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                                 "--generation-mode none --max-concurrent-allocs 2 --disable-multi-turn --seed 3 "
                                 "--progress-interval 0 --num-clients 2 --remote-tier " +
                                 srv.url() + " --remote-capacity-gb 0.3");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const std::vector<nlohmann::json> clients = rank_files(dir, 2);
    std::vector<nlohmann::json> remotes;
    long long limits = 0, conns = 0, used_start = -1;
    for (int i = 0; i < 2; ++i) {
        ASSERT_FALSE(clients[i].is_null()) << "client " << i;
        const nlohmann::json* t = tier_section(clients[i], "remote");
        ASSERT_NE(t, nullptr) << "client " << i;
        const nlohmann::json& rs = (*t)["remote"];
        EXPECT_EQ(rs["client"], i);
        EXPECT_EQ(rs["errors"].get<long long>(), rs["lost_reads"].get<long long>()) << "client " << i;
        // The server never refused: a write fails only for an entry larger than the tier's limit (a few of the
        // benchmark's request sizes pass 0.3 GiB), never with a server error.
        const std::string first = clients[i]["kvio"]["cache"].value("first_error", "");
        EXPECT_TRUE(first.empty() || first.rfind("no tier can take", 0) == 0) << "client " << i << ": " << first;
        EXPECT_TRUE((*t)["read_latency_ms"].contains("p95")) << (*t)["read_latency_ms"].dump();
        remotes.push_back(rs);
        limits += (*t)["limit_bytes"].get<long long>();
        conns += rs["connections"].get<long long>();
        const long long s = rs["server"]["used_memory_start"].get<long long>();
        used_start = used_start < 0 ? s : std::min(used_start, s);
    }
    // One namespace: both clients got the run id the launcher chose.
    EXPECT_EQ(remotes[0]["run_id"], remotes[1]["run_id"]);
    // Hits on entries the other client wrote: some, and what the server saw. Every read of an entry a client did not
    // hold was a GETEX of one chunk (a system prompt is a few KiB); the server's misses are those that found
    // nothing plus the chunks of a client's own entries another client deleted (lost_reads).
    const long long foreign = sum_of(remotes, "foreign_hits");
    EXPECT_GT(foreign, 0);
    std::cout << "foreign hits " << remotes[0]["foreign_hits"] << " + " << remotes[1]["foreign_hits"] << ", misses "
              << remotes[0]["foreign_misses"] << " + " << remotes[1]["foreign_misses"] << ", lost "
              << sum_of(remotes, "lost_reads") << "\n";
    for (const auto& rs : remotes)
        EXPECT_LE(rs["foreign_hit_bytes"].get<long long>(),
                  rs["foreign_hits"].get<long long>() * rs["chunk_bytes"].get<long long>());
    EXPECT_EQ(srv.calls("getex"), sum_of(remotes, "foreign_hits") + sum_of(remotes, "foreign_misses"));
    EXPECT_EQ(srv.calls("get"), [&] {
        long long g = 0;
        for (const auto& rs : remotes) g += rs["commands"]["get"].get<long long>();
        return g;
    }());
    EXPECT_EQ(srv.info("keyspace_hits"), sum_of(remotes, "chunk_get_hits"));
    EXPECT_EQ(srv.info("keyspace_misses"), sum_of(remotes, "chunk_get_misses"));
    EXPECT_EQ(srv.calls("getex") - (srv.info("keyspace_misses") - sum_of(remotes, "lost_reads")), foreign);
    // The merged result's remote tier sums the clients'.
    EXPECT_GT(r.results["summary"]["cache_stats"].value("tier_remote_kv_bytes_read_gb", 0.0), 0.0);
    // Capacity: the server's peak growth stayed within the clients' limits (plus the connections' input buffers,
    // up to a chunk each while a SET streams in); nothing of the run is left.
    const long long peak = srv.info("used_memory_peak");
    EXPECT_LE(peak - used_start, limits + conns * remotes[0]["chunk_bytes"].get<long long>() + (1 << 20));
    EXPECT_EQ(srv.dbsize(), 0);
}

namespace {

// A short run with every entry on the remote tier (no CPU tier, no storage): each op is a server round trip.
std::string remote_only_args(const std::string& url, int duration_s) {
    return "--model tiny-1b --num-users 2 --duration " + std::to_string(duration_s) +
           " --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --max-concurrent-allocs 1 --disable-multi-turn "
           "--seed 3 --progress-interval 0 --remote-tier " +
           url;
}

/// The remote tier's `remote` section of a results document (null when absent).
nlohmann::json remote_of(const nlohmann::json& results) {
    const nlohmann::json* t = tier_section(results, "remote");
    return t ? (*t)["remote"] : nlohmann::json();
}

}  // namespace

// The default limit (--remote-capacity-gb 0) is each client's share of the server's free memory: before, every
// client of a run took the whole maxmemory and two of them over-committed one server into OOM. An explicit limit
// the server cannot hold gets one warning line naming both figures (docs/simulate.md, "Remote tier").
TEST(RemoteTier, AutoCapacityIsEachClientsShareAndAnOverlargeLimitWarns) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    const std::string common =
        "--model tiny-1b --num-users 2 --duration 2 --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none "
        "--max-concurrent-allocs 1 --disable-multi-turn --seed 3 --progress-interval 0 --remote-tier " +
        srv.url();
    SimRun r = simulate(dir, common + " --num-clients 2");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const std::vector<nlohmann::json> clients = rank_files(dir, 2);
    for (int i = 0; i < 2; ++i) {
        ASSERT_FALSE(clients[i].is_null()) << "client " << i;
        const nlohmann::json* t = tier_section(clients[i], "remote");
        ASSERT_NE(t, nullptr) << "client " << i;
        const nlohmann::json& rs = (*t)["remote"];
        EXPECT_EQ(rs["auto_capacity_clients"], 2);
        const long long maxmem = rs["server"]["maxmemory"].get<long long>();
        const long long used = rs["server"]["used_memory_start"].get<long long>();
        EXPECT_EQ(maxmem, 256LL << 20);
        EXPECT_EQ(rs["auto_capacity_bytes"].get<long long>(), (maxmem - used) / 2) << rs.dump();
        EXPECT_LE((*t)["limit_bytes"].get<long long>(), (maxmem - used) / 2);
    }
    EXPECT_EQ(r.cmd.err.find("exceeds the server's free memory"), std::string::npos) << r.cmd.err;
    TempDir dir2;
    SimRun big = simulate(dir2, common + " --remote-capacity-gb 1");
    ASSERT_EQ(big.cmd.status, 0) << big.cmd.err;
    EXPECT_NE(big.cmd.err.find("kvio: warning: --remote-capacity-gb 1 x 1 client(s) = 1 GiB exceeds the server's "
                               "free memory at start (maxmemory less used_memory): 0.2"),
              std::string::npos)
        << big.cmd.err;
}

// The logical mode (--io-trace-log: no I/O) with a remote tier asks no server (the URL here is a port nobody
// listens on) and logs the remote tier's ops as Tier-3 rows beside the others; without --remote-capacity-gb it is
// refused (exit 2), as nothing could tell the tier's size.
TEST(RemoteTier, TraceModeLogsRemoteRowsWithoutAServer) {
    TempDir dir;
    const std::string dead = "redis://127.0.0.1:" + std::to_string(free_loopback_port());
    const std::string log = dir.file("t.csv");
    SimRun r = simulate(dir,
                        "--model tiny-1b --num-users 4 --duration 2 --gpu-mem-gb 0 --cpu-mem-gb 0.05 "
                        "--generation-mode none --seed 3 --progress-interval 0 --remote-tier " +
                            dead + " --remote-capacity-gb 0.1 --cache-dir " + dir.file("c") + " --io-trace-log " + log);
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    std::map<std::string, uint64_t> rows;
    uint64_t remote_written = 0;  // Object_Size_Bytes of the Tier-3 Write rows
    std::ifstream in(log);
    for (std::string l; std::getline(in, l);) {
        const size_t a = l.find(",Tier-");
        if (a == std::string::npos) continue;
        rows[l.substr(a + 1, 6)] += 1;
        const size_t op = l.find(',') + 1, size = l.find(',', op) + 1;
        if (l.compare(a + 1, 6, "Tier-3") == 0 && l.compare(op, 6, "Write,") == 0)
            remote_written += std::stoull(l.substr(size, a - size));
    }
    EXPECT_GT(rows["Tier-3"], 0u) << "remote rows";
    EXPECT_GT(rows["Tier-1"], 0u) << "cpu rows";
    EXPECT_GT(rows["Tier-2"], 0u) << "storage rows: the remote tier's victims";
    const nlohmann::json* t = tier_section(r.results, "remote");
    ASSERT_NE(t, nullptr);
    EXPECT_GT((*t)["bytes_written"].get<uint64_t>(), 0u);
    // The results count from the end of the warm-up; the log has every op.
    EXPECT_LE((*t)["bytes_written"].get<uint64_t>(), remote_written);
    SimRun no = simulate(dir, "--model tiny-1b --duration 1 --remote-tier " + dead + " --io-trace-log " + log);
    EXPECT_EQ(no.cmd.status, 2) << no.cmd.err;  // kvio's own flags given wrong: a usage error
    EXPECT_NE(no.cmd.err.find("needs --remote-capacity-gb"), std::string::npos) << no.cmd.err;
}

// Faults (docs/simulate.md, "Remote tier"): an unreachable server or a wrong password fails the run at start in one
// line (exit status 1, the project's rule for an error that is not a command-line one); no results file.
TEST(RemoteTierFaults, UnreachableOrWrongPasswordFailsAtStartInOneLine) {
    TempDir dir;
    const std::string dead = "redis://127.0.0.1:" + std::to_string(free_loopback_port());
    SimRun r = simulate(dir, remote_only_args(dead, 2));
    EXPECT_EQ(r.cmd.status, 1) << r.cmd.err;
    EXPECT_NE(r.cmd.err.find("--remote-tier " + dead), std::string::npos) << r.cmd.err;
    EXPECT_NE(r.cmd.err.find("cannot connect"), std::string::npos) << r.cmd.err;
    EXPECT_EQ(std::count(r.cmd.err.begin(), r.cmd.err.end(), '\n'), 1) << r.cmd.err;
    EXPECT_TRUE(r.results.is_null());

    RedisServer srv(64, {"--requirepass", "right"});
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    SimRun w = simulate(dir, remote_only_args("redis://:wrong@127.0.0.1:" + std::to_string(srv.port()), 2));
    EXPECT_EQ(w.cmd.status, 1) << w.cmd.err;
    EXPECT_NE(w.cmd.err.find("AUTH refused"), std::string::npos) << w.cmd.err;
    EXPECT_EQ(w.cmd.err.find("wrong"), std::string::npos) << "the password is printed: " << w.cmd.err;
    EXPECT_EQ(std::count(w.cmd.err.begin(), w.cmd.err.end(), '\n'), 1) << w.cmd.err;
}

// --remote-connections split: each worker thread writes on one connection and reads on another (docs/simulate.md,
// "Remote tier"); by default one connection carries both. The server's CLIENT LIST, sampled
// all through a run, names each connection's role (CLIENT SETNAME) and its last command: a write connection only ever
// SET, a read connection only GET or DEL; the results count the two kinds as the server saw them.
TEST(RemoteTier, SplitConnectionsWriteAndReadOnSeparateNamedConnections) {
    RedisServer srv(1024);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    const std::string list = dir.file("clients.txt");
    SimRun r = simulate(dir, remote_only_args(srv.url(), 6) + " --remote-capacity-gb 0.4 --remote-connections split",
                        "& p=$!; while kill -0 $p 2>/dev/null; do redis-cli -p " + std::to_string(srv.port()) +
                            " CLIENT LIST >> " + list + " 2>/dev/null; sleep 0.05; done; wait $p");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    EXPECT_EQ(rs["errors"].get<long long>(), 0);
    ASSERT_TRUE(rs.contains("connections_write") && rs.contains("connections_read")) << rs.dump();
    // Two users, two worker threads: a write and a read connection each at most, the control connection apart.
    const long long nw = rs["connections_write"].get<long long>(), nr = rs["connections_read"].get<long long>();
    EXPECT_EQ(rs["connections"].get<long long>(), nw + nr);
    EXPECT_GE(nw, 1);
    EXPECT_LE(nw, 2);
    EXPECT_GE(nr, 1);
    EXPECT_LE(nr, 2);
    EXPECT_EQ(rs["connections_planned"].get<long long>(), 4);
    EXPECT_EQ(rs["connections_mode"], "split");
    auto field = [](const std::string& line, const std::string& name) {
        const size_t at = line.find(" " + name + "=");
        if (at == std::string::npos) return std::string();
        const size_t from = at + name.size() + 2;
        return line.substr(from, line.find(' ', from) - from);
    };
    std::map<std::string, std::set<std::string>> ids;        // name -> connection ids seen
    std::map<std::string, std::map<std::string, int>> cmds;  // name -> last command -> samples
    std::ifstream in(list);
    for (std::string line; std::getline(in, line);) {
        const std::string name = field(line, "name"), cmd = field(line, "cmd");
        if (cmd == "client|list") continue;  // the sampler's own connection
        ids[name].insert(line.substr(0, line.find(' ')));
        cmds[name][cmd] += 1;
    }
    auto dump = [&] {
        std::string d;
        for (const auto& [n, m] : cmds)
            for (const auto& [c, k] : m) d += "'" + n + "' " + c + " x" + std::to_string(k) + "; ";
        return d;
    };
    // Every data command the samples caught ran on a connection of its role; none on an unnamed one.
    for (const auto& [c, k] : cmds["kvio-write"]) EXPECT_TRUE(c == "set" || c == "client|setname") << dump();
    for (const auto& [c, k] : cmds["kvio-read"])
        EXPECT_TRUE(c == "get" || c == "del" || c == "client|setname") << dump();
    EXPECT_EQ(cmds[""].count("set") + cmds[""].count("get") + cmds[""].count("del"), 0u) << dump();
    // ... and the samples did catch both roles at work, on no more connections than the results count.
    EXPECT_GT(cmds["kvio-write"]["set"], 0) << dump();
    EXPECT_GT(cmds["kvio-read"]["get"], 0) << dump();
    EXPECT_LE((long long)ids["kvio-write"].size(), nw) << dump();
    EXPECT_LE((long long)ids["kvio-read"].size(), nr) << dump();
    EXPECT_EQ(ids["kvio-control"].size(), 1u) << dump();
    EXPECT_EQ(srv.calls("set"), rs["commands"]["set"].get<long long>());
    EXPECT_EQ(srv.dbsize(), 0);
}

namespace {

/// A remote-only run (remote_only_args) that ends after `requests` completed requests, the clock only a cap
/// (`cap_s`): a run that ends on a condition still has requests to serve after a server's kill however long a busy
/// machine took to reach it, where a run on a clock could end first.
std::string until_requests(const std::string& url, int requests, int cap_s) {
    return remote_only_args(url, cap_s) + " --max-requests " + std::to_string(requests);
}

/// Seconds from `t` to now (steady clock).
double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// The server killed once the server has answered a GET: kvio reads only an entry whose whole write the server
// acknowledged, so a write was done (bytes_sent counts whole entries). The ops after the kill fail fast (connection
// refused on every reconnect), are counted with the first error, and the run ends with valid results. It ends after
// 6 requests (the 60 s clock a cap): when the server answers its first GET no request has completed yet (each one
// reads after its write), so the run still has requests whose ops meet the dead server.
TEST(RemoteTierFaults, ServerKilledMidRunIsCountedAndTheRunEnds) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    KillOnCalls killer(srv, "get", 1);
    SimRun r = simulate(dir, until_requests(srv.url(), 6, 60));
    killer.join();
    ASSERT_TRUE(killer.killed()) << "the server answered no GET: " << r.cmd.err;
    const double after_kill = seconds_since(killer.at());
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    ASSERT_FALSE(r.results.is_null());
    EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "max_requests");  // it ended on its own, not at the cap
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    EXPECT_GT(rs["errors"].get<long long>(), 0);
    EXPECT_GT(rs["bytes_sent"].get<long long>(), 0);  // it worked before the kill
    const nlohmann::json& cache = r.results["kvio"]["cache"];
    EXPECT_GT(cache["failed_writes"].get<long long>() + cache["failed_reads"].get<long long>(), 0);
    EXPECT_NE(cache.value("first_error", "").find("redis 127.0.0.1:"), std::string::npos)
        << cache.dump().substr(0, 400);
    // After the kill the ops fail at once and the requests left complete with them (0.15 s on the quiet VM); a hang
    // would wait out the per-reply timeout (5 s) op after op: less than two of them.
    EXPECT_LT(after_kill, 10.0);
}

// The server killed under a run with storage below it: the first ops to meet the fault fail (counted), the tier is
// marked down once a reconnect is refused, and the run goes on through storage: new entries and the CPU tier's
// victims skip the remote tier, its entries become misses. Before, every op that chose the remote tier after the
// kill failed (each allocation tried it first while it had room): hundreds in 4 s. The kill comes at the server's
// first GET (a remote entry read, its request still reading); the run ends after 10 requests (the 60 s clock a
// cap), so requests that write remote entries come after the kill: with seed 3 every request of user 0 fits the
// tier (9-24 MB) and every third request or so is one of user 0's.
TEST(RemoteTierFaults, ServerKilledMidRunMarksTheTierDownAndStorageCarriesOn) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    KillOnCalls killer(srv, "get", 1);
    // 0.058 GiB: some 51 MiB for the entries once two connections' reserve (idle + a chunk's query buffer) is out.
    SimRun r =
        simulate(dir, until_requests(srv.url(), 10, 60) + " --remote-capacity-gb 0.058 --cache-dir " + dir.file("c"));
    killer.join();
    ASSERT_TRUE(killer.killed()) << "the server answered no GET: " << r.cmd.err;
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    ASSERT_TRUE(rs.contains("down")) << rs.dump();
    EXPECT_TRUE(rs["down"]["entries_lost"].get<bool>()) << rs.dump();
    EXPECT_NE(rs["down"]["reason"].get<std::string>().find("cannot be reached again"), std::string::npos) << rs.dump();
    const nlohmann::json& cache = r.results["kvio"]["cache"];
    const long long failed = cache["failed_writes"].get<long long>() + cache["failed_reads"].get<long long>();
    // At most each of the two users' op on its broken connection and its next one, whose reconnect is refused, and
    // a demotion of each in between.
    EXPECT_LE(failed, 8) << cache.dump().substr(0, 600);
    bool warned = false;
    for (const auto& w : r.results["kvio"]["warnings"])
        warned = warned || w.get<std::string>().find("remote tier was marked down") != std::string::npos;
    EXPECT_TRUE(warned) << r.results["kvio"]["warnings"].dump();
    const nlohmann::json* st = tier_section(r.results, "storage");
    ASSERT_NE(st, nullptr);
    EXPECT_GT((*st)["bytes_written"].get<uint64_t>(), 0u);
}

// A stopped server (SIGSTOP once it answered a SET, as a hung or swapped-out server): its socket still accepts
// connections, but no reply comes. The first reply not sent within the 5 s timeout marks the tier down for good
// (docs/simulate.md, "Remote tier"), so the run ends within its duration plus two timeouts; before, every failing
// writer waited out the silence again on the shared control connection, in turn, and a 45 s pause held a 5 s run
// for 47 s. The server stays stopped until the run has ended: a run that waited for it would not end at all.
TEST(RemoteTierFaults, StoppedServerEndsTheRunInBoundedTimeWithFailuresCounted) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    std::atomic<bool> stopped{false};
    // At the server's first SET: the run's first entries are written at once, while a first GET may not come within
    // the 5 s on a loaded machine (each user's first request writes before it reads).
    KillOnCalls pauser(srv, "set", 1, 60, [&] { stopped = kill(srv.pid(), SIGSTOP) == 0; });
    const int duration = 5;
    const std::string args = "--model tiny-1b --num-users 4 --duration " + std::to_string(duration) +
                             " --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --disable-multi-turn --seed 3 "
                             "--progress-interval 0 --remote-tier " +
                             srv.url();
    SimRun r = simulate(dir, args);
    pauser.join();
    const double after_stop = pauser.killed() ? seconds_since(pauser.at()) : -1;
    if (stopped) kill(srv.pid(), SIGCONT);  // the destructor then stops it
    ASSERT_TRUE(pauser.killed()) << "the server answered no SET: " << r.cmd.err;
    ASSERT_TRUE(stopped.load());
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    // The run's clock started before the stop: at most its duration, then an op in flight meets one timeout and
    // the end of the run none (the tier is down) -- two timeouts as the bound, plus the results' writing.
    EXPECT_LE(after_stop, duration + 2 * 5.0 + 3) << r.cmd.err;
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    EXPECT_GT(rs["errors"].get<long long>(), 0);
    ASSERT_TRUE(rs.contains("down")) << rs.dump();
    EXPECT_TRUE(rs["down"]["entries_lost"].get<bool>());
    EXPECT_NE(rs["down"]["reason"].get<std::string>().find("did not answer within 5 s"), std::string::npos)
        << rs["down"].dump();
    const nlohmann::json& cache = r.results["kvio"]["cache"];
    EXPECT_GT(cache["failed_writes"].get<long long>() + cache["failed_reads"].get<long long>(), 0)
        << cache.dump().substr(0, 600);
}

// CLIENT KILL of kvio's connections once the server answered a GET: the op on a killed connection fails and is
// counted, the thread connects again, and the run goes on reading and writing.
TEST(RemoteTierFaults, ClientKillIsCountedAndTheTierReconnects) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    // CLIENT KILL once the server answered a GET, the run ending on a count (as the kill tests below): requests are
    // left to meet the dropped connections however late a busy machine reaches that point.
    const std::string kill = "redis-cli -p " + std::to_string(srv.port()) + " CLIENT KILL TYPE normal >/dev/null";
    KillOnCalls killer(srv, "get", 1, 60, [&] { run(kill); });
    SimRun r = simulate(dir, until_requests(srv.url(), 6, 60));
    killer.join();
    ASSERT_TRUE(killer.killed()) << "the server answered no GET: " << r.cmd.err;
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "max_requests");
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    EXPECT_GT(rs["errors"].get<long long>(), 0);
    EXPECT_GT(srv.info("total_connections_received"), rs["connections"].get<long long>() + 1);  // reconnected
    // After the reconnect the server keeps counting kvio's commands: the clients' SETs exceed what failed.
    EXPECT_GT(srv.calls("set"), 0);
    EXPECT_EQ(srv.dbsize(), 0);  // the end-of-run cleanup ran on a fresh connection
}

// A full server (maxmemory 16 MiB, noeviction) under a tier that claims 0.5 GiB: the server refuses SETs with OOM;
// every refusal is a failed write with the server's error, and the run ends with valid results.
TEST(RemoteTierFaults, FullServerRefusalsAreFailedWrites) {
    RedisServer srv(16);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    SimRun r = simulate(dir, remote_only_args(srv.url(), 4) + " --remote-capacity-gb 0.5");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    const nlohmann::json& cache = r.results["kvio"]["cache"];
    EXPECT_GT(cache["failed_writes"].get<long long>(), 0);
    EXPECT_NE(cache.value("first_error", "").find("OOM"), std::string::npos) << cache.dump().substr(0, 400);
    EXPECT_GT(rs["errors"].get<long long>(), 0);
    // maxmemory, plus what the server accepts once below it: one chunk (4 MiB) and its input buffer, twice over
    EXPECT_LE(srv.info("used_memory_peak"), (16 << 20) + (16 << 20));
}

namespace {

/// The remote tier's write latency percentiles (ms) of a results document, as one line.
std::string write_latency_text(const nlohmann::json& results) {
    const nlohmann::json* t = tier_section(results, "remote");
    if (!t) return "no remote tier";
    const nlohmann::json& w = (*t)["write_latency_ms"];
    char b[160];
    std::snprintf(b, sizeof b, "p50 %.3f p95 %.3f p99 %.3f ms over %s", w.value("p50", -1.0), w.value("p95", -1.0),
                  w.value("p99", -1.0), (*t)["bytes_written"].dump().c_str());
    return b;
}

}  // namespace

// Write-through and write-back on one server, one after the other (docs/simulate.md, "Remote tier"): both report
// the mode, write-back its queue figures; the queue never held more than its bound; at the end every queued write
// reached the server (the server's SET calls are the tier's), nothing was lost and nothing of the run is left. The
// latencies are printed, not compared: the machine's load decides their ratio.
TEST(RemoteTierWriteBack, BothModesMeasuredAndTheQueueBoundHolds) {
    RedisServer srv(1024);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    const std::string args =
        "--model tiny-1b --num-users 6 --duration 5 --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none "
        "--disable-multi-turn --seed 3 --progress-interval 0 --remote-capacity-gb 0.6 --remote-tier " +
        srv.url();
    SimRun through = simulate(dir, args);
    ASSERT_EQ(through.cmd.status, 0) << through.cmd.err;
    const nlohmann::json rt = remote_of(through.results);
    ASSERT_FALSE(rt.is_null());
    EXPECT_EQ(rt["write_mode"], "through");
    EXPECT_FALSE(rt.contains("writeback_lost"));
    const long long sets_through = srv.calls("set");
    EXPECT_EQ(sets_through, rt["commands"]["set"].get<long long>());

    const int bound = 2;
    SimRun back = simulate(dir, args + " --remote-write-mode back --remote-writeback-queue " + std::to_string(bound));
    ASSERT_EQ(back.cmd.status, 0) << back.cmd.err;
    const nlohmann::json rb = remote_of(back.results);
    ASSERT_FALSE(rb.is_null());
    EXPECT_EQ(rb["write_mode"], "back");
    EXPECT_EQ(rb["writeback_queue_bound"], bound);
    EXPECT_GT(rb["writeback_written"].get<long long>(), 0);
    EXPECT_LE(rb["writeback_queued_max"].get<long long>(), bound);
    EXPECT_GE(rb["writeback_queued_max"].get<long long>(), 1);
    EXPECT_EQ(rb["writeback_lost"].get<long long>(), 0) << rb.dump();
    EXPECT_EQ(rb["writeback_queued"].get<long long>(), rb["writeback_written"].get<long long>());
    EXPECT_EQ(rb["writeback_lost_at_stop"].get<long long>(), 0);
    EXPECT_EQ(rb["errors"].get<long long>(), 0);
    EXPECT_EQ(back.results["kvio"]["cache"]["failed_writes"].get<long long>(), 0);
    // Every queued write reached the server: its SET calls (this run's) are the tier's chunk SETs.
    EXPECT_EQ(srv.calls("set") - sets_through, rb["commands"]["set"].get<long long>());
    EXPECT_LT(rb["writeback_drain_s"].get<double>(), 30.0);
    EXPECT_TRUE(rb["writeback_set_latency_ms"].contains("p50")) << rb.dump();
    const nlohmann::json* t = tier_section(back.results, "remote");
    EXPECT_TRUE((*t)["write_latency_ms"].contains("p99")) << (*t).dump().substr(0, 400);
    EXPECT_GT((*t)["hits"].get<long long>(), 0);  // reads of entries written back found them
    std::cout << "write-through: " << write_latency_text(through.results) << "\n"
              << "write-back (queue " << bound << "): " << write_latency_text(back.results) << "; background SETs p50 "
              << rb["writeback_set_latency_ms"].value("p50", -1.0) << " ms, queue full " << rb["writeback_full_waits"]
              << " times (" << rb["writeback_full_wait_s"] << " s)\n";
    EXPECT_EQ(srv.dbsize(), 0);
}

// Write-back with the server killed once the run writes, storage below: the writes queued or written after the kill
// never reach the server and are counted lost; a read of a lost entry is a miss (not a hit, not a failed read);
// the tier is marked down and the run goes on through storage to the end. Every queued write is accounted for:
// written or lost. That some are lost is printed, not asserted: on a loaded machine the reads after the kill can
// mark the tier down before any write is queued to it (0 lost in 3 of 5 runs at load 10-18). The kill and the end
// are those of ServerKilledMidRunMarksTheTierDownAndStorageCarriesOn: at the server's first GET (a read waits for
// its entry's queued write, so a write-back write was done), and after 10 requests.
TEST(RemoteTierFaults, WriteBackServerKilledCountsLostWritesAndTheRunGoesOn) {
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    KillOnCalls killer(srv, "get", 1);
    SimRun r = simulate(dir, until_requests(srv.url(), 10, 60) +
                                 " --remote-capacity-gb 0.058 --remote-write-mode back --remote-writeback-queue 4 "
                                 "--cache-dir " +
                                 dir.file("c"));
    killer.join();
    ASSERT_TRUE(killer.killed()) << "the server answered no GET: " << r.cmd.err;
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json rs = remote_of(r.results);
    ASSERT_FALSE(rs.is_null());
    EXPECT_EQ(rs["write_mode"], "back");
    EXPECT_GT(rs["writeback_written"].get<long long>(), 0) << rs.dump();  // it worked before the kill
    EXPECT_EQ(rs["writeback_queued"].get<long long>(),
              rs["writeback_written"].get<long long>() + rs["writeback_lost"].get<long long>())
        << rs.dump();
    EXPECT_EQ(rs["writeback_lost"].get<long long>() > 0, rs.contains("writeback_first_lost")) << rs.dump();
    EXPECT_LE(rs["writeback_queued_max"].get<long long>(), 4);
    ASSERT_TRUE(rs.contains("down")) << rs.dump();
    EXPECT_TRUE(rs["down"]["entries_lost"].get<bool>()) << rs.dump();
    const nlohmann::json& cache = r.results["kvio"]["cache"];
    // Reads of lost entries were misses: counted apart, never as failed reads or hits of the tier.
    const nlohmann::json* t = tier_section(r.results, "remote");
    EXPECT_LE(rs["writeback_lost_reads"].get<long long>(), (*t)["misses"].get<long long>() + 0LL);
    EXPECT_LE(cache["failed_writes"].get<long long>() + cache["failed_reads"].get<long long>(), 8)
        << cache.dump().substr(0, 600);
    const nlohmann::json* st = tier_section(r.results, "storage");
    ASSERT_NE(st, nullptr);
    EXPECT_GT((*st)["bytes_written"].get<uint64_t>(), 0u);  // the run went on below the tier
    std::cout << "lost " << rs["writeback_lost"] << " (at stop " << rs["writeback_lost_at_stop"] << "), lost reads "
              << rs["writeback_lost_reads"] << ", written " << rs["writeback_written"] << ", failed ops "
              << cache["failed_writes"] << " + " << cache["failed_reads"] << "\n";
}

// Conversation handoff (--remote-handoff-probability 0.5, two clients): before a later turn the user returns to the
// other client half the time, which takes the conversation from its list on the server and reads the earlier turns from
// the remote tier (GETEX: reads of entries another client wrote). What the clients counted is what the server counted:
// the RPUSHes are the conversations handed off, the LPOPs the polls, the GETEX and keyspace counts the clients' sums;
// a client takes over only what the other handed off. Every request finds a system prompt (hit probability 1), so a
// turn's entry is smaller than its request drew: a turn handed off before its prefill sized it (counted,
// turns_handed_unsized) is not read by the taker, and every turn read is read at the size its writer wrote — a read at
// the drawn size found a chunk of another size, a failed read (errors 1 in 2 of 2 runs before the fix). A client's
// own turns are read from its own tiers only (AnOwnTurnBeingWrittenIsNotReadFromTheServerAtItsDrawnSize).
TEST(RemoteTier, ConversationHandoffReadsEarlierTurnsWrittenByTheOtherClient) {
    RedisServer srv(1024);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    TempDir dir;
    {
        std::ofstream y(dir.file("conv.yaml"));
        // A micro model (512 bytes a token, entries of at most ~13 MB): requests keep up with the users' think times
        // on a loaded machine, so turns reach their prefill before the user moves on and are handed over sized.
        y << "model_configs:\n  micro: {name: \"Micro\", num_layers: 4, hidden_dim: 256, num_heads: 8, kv_heads: 1, "
             "dtype: \"float16\"}\n"
             "conversation:\n  end_conversation_probability: 0.0\n"
             "prefix_cache:\n  system_prompt_hit_probability: 1.0\n";
    }
    SimRun r = simulate(dir, "--config " + dir.file("conv.yaml") +
                                 " --model micro --num-users 4 --duration 10 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                                 "--generation-mode none --seed 3 --progress-interval 0 --num-clients 2 "
                                 "--remote-handoff-probability 0.5 --remote-tier " +
                                 srv.url() + " --remote-capacity-gb 0.4");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const std::vector<nlohmann::json> clients = rank_files(dir, 2);
    std::vector<nlohmann::json> remotes, handoffs;
    for (int i = 0; i < 2; ++i) {
        ASSERT_FALSE(clients[i].is_null()) << "client " << i;
        const nlohmann::json rs = remote_of(clients[i]);
        ASSERT_FALSE(rs.is_null()) << "client " << i;
        // No read failed: every chunk read had the size its reader expected (get_chunks fails a read on a chunk of
        // another size), none was lost, no I/O error.
        EXPECT_EQ(rs["errors"].get<long long>(), 0) << "client " << i << ": " << clients[i]["kvio"]["cache"].dump();
        EXPECT_EQ(rs["lost_reads"].get<long long>(), 0) << "client " << i;
        EXPECT_EQ(clients[i]["kvio"]["cache"]["failed_reads"].get<long long>(), 0) << "client " << i;
        remotes.push_back(rs);
        handoffs.push_back(clients[i]["kvio"]["conversations"]["handoff"]);
        ASSERT_TRUE(handoffs.back().is_object()) << clients[i]["kvio"]["conversations"].dump();
    }
    long long handed = 0, polls = 0, getex = 0, unsized = 0;
    for (int i = 0; i < 2; ++i) {
        unsized += handoffs[i]["turns_handed_unsized"].get<long long>();
        // A turn handed over unsized is skipped by every read of it, and only such turns are.
        EXPECT_LE(handoffs[i]["unsized_turn_reads_skipped"].get<long long>() > 0,
                  handoffs[1 - i]["turns_handed_unsized"].get<long long>() > 0);
        handed += handoffs[i]["handed_off"].get<long long>();
        polls += handoffs[i]["polls"].get<long long>();
        getex += remotes[i]["commands"]["getex"].get<long long>();
        // Messages to client i come from the other client only.
        EXPECT_LE(handoffs[i]["taken_over"].get<long long>(), handoffs[1 - i]["handed_off"].get<long long>());
        std::cout << "client " << i << ": handed off " << handoffs[i]["handed_off"] << ", took over "
                  << handoffs[i]["taken_over"] << " (" << handoffs[i]["turns_taken_over"]
                  << " turns), hits on turns the other wrote " << remotes[i]["foreign_turn_hits"] << ", misses "
                  << remotes[i]["foreign_turn_misses"] << ", handed unsized " << handoffs[i]["turns_handed_unsized"]
                  << ", reads of unsized turns skipped " << handoffs[i]["unsized_turn_reads_skipped"] << "\n";
    }
    EXPECT_GT(handed, 0);
    // Whether a turn is handed over before its prefill sized it depends on the host's pace: the micro model makes it
    // rare (0 in a fresh-clone CI run, 2026-12-06). The message's sized flag is unit-tested
    // (Conversation.HandoffMessageCarriesWhetherEachTurnIsSized); here, when it happens, its reads are skipped (above).
    std::cout << "turns handed over unsized: " << unsized << "\n";
    // Conversations came back to the client that handed them off, with the turns the other added: taken over again.
    long long taken = 0, turns_taken = 0;
    for (const auto& h : handoffs)
        taken += h["taken_over"].get<long long>(), turns_taken += h["turns_taken_over"].get<long long>();
    EXPECT_GT(turns_taken, taken);
    EXPECT_EQ(srv.calls("rpush"), handed);
    EXPECT_EQ(srv.calls("lpop"), polls);
    EXPECT_EQ(srv.calls("getex"), getex);
    EXPECT_EQ(srv.info("keyspace_hits"), sum_of(remotes, "chunk_get_hits"));
    EXPECT_EQ(srv.info("keyspace_misses"), sum_of(remotes, "chunk_get_misses"));
    EXPECT_GT(sum_of(remotes, "foreign_turn_hits"), 0);
    EXPECT_LE(sum_of(remotes, "foreign_turn_hits"), sum_of(remotes, "foreign_hits"));  // the rest: system prompts
    EXPECT_LE(sum_of(remotes, "foreign_turn_hit_bytes"), sum_of(remotes, "foreign_hit_bytes"));
    EXPECT_EQ(srv.dbsize(), 0);  // the entries and the lists nobody emptied are gone
}

namespace {

/// A client of a run whose only tier is the remote one on `srv` (run id `run`), as one --num-clients client sees it.
kvio::serving::SimConfig remote_only_client(const RedisServer& srv, const std::string& run, int client) {
    kvio::serving::SimConfig c;
    c.seed = 3;
    c.num_users = 1;
    c.gpu_mem_gb = 0;
    c.cpu_mem_gb = 0;
    c.remote_tier = srv.url();
    c.remote_capacity_gb = 0.2;
    c.remote_run_id = run;
    c.client_count = 2;
    c.client_index = client;
    return c;
}

/// The remote tier's section (RemoteTier::stats_json) of a cache's kvio_json().
nlohmann::ordered_json remote_stats(const kvio::serving::MultiTierCache& cache) {
    const nlohmann::ordered_json j = cache.kvio_json();
    for (const auto& t : j["tiers"])
        if (t["tier"] == "remote") return t["remote"];
    return nullptr;
}

}  // namespace

// The race behind a handoff run's failed GETEX ("chunk 0 holds 3612672 bytes, expected 3649536": 882 tokens written,
// 891 read), made deterministic: a request reads the earlier turns of its conversation from a copy taken while an
// earlier turn's request was still queued (its drawn size), and that turn's prefill, on another worker, writes it
// with the system prompt's 9 tokens off. Between the server's answer to that write and the write's commit the
// client's tiers do not hold the turn; `writer` (same run, same client) holds the server's side of that moment. A
// read of the turn at its drawn size from the server fails on the chunk's size; an own turn is read from the
// client's own tiers only (TurnRead::Local), a turn handed over sized from the server at the size written.
TEST(RemoteTier, AnOwnTurnBeingWrittenIsNotReadFromTheServerAtItsDrawnSize) {
    using namespace kvio::serving;
    RedisServer srv(256);
    ASSERT_TRUE(srv.ok()) << "redis-server did not start";
    const SimConfig cfg = remote_only_client(srv, "run-race", 1);
    // 4096 bytes a token, as the failed run's tiny-1b over 4 GPUs: a turn is one chunk.
    MultiTierCache writer(cfg, 4096, nullptr), reader(cfg, 4096, nullptr), old_reader(cfg, 4096, nullptr);
    ConversationManager convs(1000, "hconv_c0_");
    const std::string conv = convs.start_conversation("user_0003");
    const Turn t1 = *convs.add_turn(conv, 891);  // drawn; its request waits in the queue
    const Turn t2 = *convs.add_turn(conv, 500);
    const std::vector<Turn> seen = convs.previous_turns(conv, t2.cache_key);  // turn 2's request reads turn 1
    ASSERT_EQ(seen.size(), 1u);
    convs.set_turn_tokens(conv, t1.cache_key, 891 - system_prompt(1).tokens);  // turn 1's prefill, 9 tokens off
    ASSERT_TRUE(writer.allocate(t1.cache_key, 882).ok);                        // on the server now

    // Before: the copy's drawn size was asked of the server.
    const uint64_t drawn = reader.entry_bytes(seen[0].context_tokens), written = reader.entry_bytes(882);
    ASSERT_NE(drawn, written);
    EXPECT_FALSE(old_reader.access(t1.cache_key, CachePhase::Decode, CacheType::MultiTurn, drawn).ok);
    const nlohmann::ordered_json old_stats = old_reader.kvio_json();
    EXPECT_NE(old_stats.value("first_error", "")
                  .find("holds " + std::to_string(written) + " bytes, expected " + std::to_string(drawn)),
              std::string::npos)
        << old_stats.dump().substr(0, 600);
    EXPECT_EQ(srv.calls("getex"), 1);
    EXPECT_EQ(remote_stats(old_reader)["commands"]["getex"].get<long long>(), 1);  // counted as the server did

    // Now: the turn is this client's own, read from its own tiers only: a miss, no GETEX, no error.
    EXPECT_EQ(turn_read(seen[0]), TurnRead::Local);
    const AccessResult own = reader.access(t1.cache_key, CachePhase::Decode, CacheType::MultiTurn, 0);
    EXPECT_FALSE(own.hit);
    EXPECT_EQ(srv.calls("getex"), 1);
    // Handed to the other client after its prefill: sized, read from the server at the size written.
    const std::optional<HandedConversation> h = parse_handoff_message(handoff_message(conv, convs.turns(conv)));
    ASSERT_TRUE(h);
    ASSERT_EQ(turn_read(h->turns[0]), TurnRead::Shared);
    EXPECT_EQ(turn_read(h->turns[1]), TurnRead::Skip);  // turn 2: its prefill has not run
    const AccessResult other = reader.access(h->turns[0].cache_key, CachePhase::Decode, CacheType::MultiTurn,
                                             reader.entry_bytes(h->turns[0].context_tokens));
    EXPECT_TRUE(other.ok);
    EXPECT_EQ(other.bytes, written);
    EXPECT_EQ(srv.calls("getex"), 2);
    const nlohmann::ordered_json st = reader.kvio_json();
    EXPECT_EQ(st.value("first_error", ""), "");
    EXPECT_EQ(remote_stats(reader)["errors"].get<long long>(), 0);
    EXPECT_EQ(remote_stats(reader)["foreign_turn_hits"].get<long long>(), 1);
}
