// The remote KV tier on a real 3-shard Redis Cluster (tests/e2e/redis_cluster.h; docs/redis-cluster.md): keys spread
// over every shard and kvio's counts equal the shards' sums; MOVED and ASK redirections of a slot moved by hand are
// followed, counted, and bounded.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "redis/client.h"
#include "redis/cluster.h"
#include "tests/e2e/redis_cluster.h"
#include "tests/e2e/simulate_helpers.h"

using namespace kvio::test;
namespace redis = kvio::redis;

// `kvio simulate --remote-tier redis://SEED` with the seed one node of a cluster: detected (INFO cluster), every
// chunk key goes to its slot's shard, each shard serves SETs and GETs, the shards' command counts add up to kvio's,
// every GET found its key on the shard asked (no redirection on a stable cluster), and no key is left behind. The
// run stops after one completed request (--max-requests; 60 s is only a cap), whatever the load, and the run id and
// seed are fixed: the same chunk keys, and so the same slots, every run (about 50 SETs, 15-20 on each shard, then
// about 90 GETs, measured).
TEST(RemoteCluster, SimulateSpreadsKeysOverEveryShard) {
    RedisCluster cl(512);
    ASSERT_TRUE(cl.ok()) << cl.error();
    TempDir dir;
    SimRun r = simulate(dir,
                        "--model tiny-1b --num-users 2 --duration 60 --max-requests 1 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                        "--generation-mode none --max-concurrent-allocs 1 --disable-multi-turn --seed 3 "
                        "--remote-run-id cluster-e2e --remote-tier " +
                            cl.seed_url() + " --remote-capacity-gb 0.4");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const nlohmann::json* t = tier_section(r.results, "remote");
    ASSERT_NE(t, nullptr) << r.results["kvio"]["cache"].dump().substr(0, 600);
    const nlohmann::json& rs = (*t)["remote"];
    EXPECT_EQ(rs["errors"].get<uint64_t>(), 0u);
    long long sets = 0, gets = 0, hits = 0, misses = 0;
    for (size_t i = 0; i < cl.size(); ++i) {
        const RedisServer& s = cl.shard(i);
        EXPECT_GT(s.calls("set"), 0) << "shard " << i << " served no SET";
        EXPECT_GT(s.calls("get"), 0) << "shard " << i << " served no GET";
        sets += s.calls("set"), gets += s.calls("get");
        hits += s.info("keyspace_hits"), misses += s.info("keyspace_misses");
        EXPECT_EQ(s.dbsize(), 0) << "shard " << i << " kept keys";
        // A chunk key sent to the wrong shard would be a rejected call there (answered MOVED).
        EXPECT_EQ(RedisCluster::rejected_calls(s), 0) << "shard " << i;
    }
    EXPECT_GT((*t)["hits"].get<uint64_t>(), 0u);
    EXPECT_EQ(sets, rs["commands"]["set"].get<long long>());
    EXPECT_EQ(gets, rs["commands"]["get"].get<long long>());
    EXPECT_EQ(hits, rs["chunk_get_hits"].get<long long>());
    EXPECT_EQ(misses, 0);
    // The results say the tier ran over a cluster: no slot moved during the run, so nothing was redirected.
    ASSERT_TRUE(rs.contains("cluster")) << rs.dump();
    EXPECT_EQ(rs["cluster"]["moved"], 0u);
    EXPECT_EQ(rs["cluster"]["ask"], 0u);
}

namespace {

/// The shard (index) whose address is HOST:PORT.
size_t shard_at(RedisCluster& cl, const std::string& endpoint) {
    for (size_t i = 0; i < cl.size(); ++i)
        if ("127.0.0.1:" + std::to_string(cl.shard(i).port()) == endpoint) return i;
    return cl.size();
}

void fill_bytes(uint64_t off, char* dst, size_t len) {
    for (size_t i = 0; i < len; ++i) dst[i] = char((off + i) * 7 + 1);
}

}  // namespace

// A slot moved by hand between two shards, the way redis-cli --cluster reshard moves it (CLUSTER SETSLOT IMPORTING /
// MIGRATING, MIGRATE of its keys, SETSLOT NODE): a key already moved while the slot migrates is an ASK (followed
// with ASKING at the importing shard), a key read after the move through the client's old map is a MOVED (followed,
// the map read again, the next read goes straight to the new owner); a migration the importing side does not accept
// redirects forever and fails after the bound with one clear error.
TEST(RemoteCluster, MovedAndAskAreFollowedAndCounted) {
    RedisCluster cl(64);
    ASSERT_TRUE(cl.ok()) << cl.error();
    redis::Connection c(redis::parse_url(cl.seed_url()), 5.0);
    ASSERT_NE(c.cluster(), nullptr) << "the seed was not detected as a cluster node";
    const redis::Cluster& rc = *c.cluster();
    EXPECT_EQ(rc.nodes(), 3u);
    // Two entries whose chunk keys share a slot (the hash tag {rt}), 1000 bytes each in one chunk.
    const int slot = redis::key_slot("rt");
    const size_t a = shard_at(cl, rc.node_of_slot(slot));
    ASSERT_LT(a, cl.size());
    const size_t b = (a + 1) % cl.size();
    RedisServer &from = cl.shard(a), &to = cl.shard(b);
    const std::string from_id = RedisCluster::id(from), to_id = RedisCluster::id(to), s = std::to_string(slot);
    c.set_chunks("{rt}a", 1000, 4096, fill_bytes);
    c.set_chunks("{rt}b", 1000, 4096, fill_bytes);
    EXPECT_EQ(from.dbsize(), 2);
    uint64_t wrong = 0;
    auto check = [&](uint64_t off, const char* src, size_t len) {
        for (size_t i = 0; i < len; ++i) wrong += src[i] != char((off + i) * 7 + 1);
    };
    // Migration under way, {rt}a:0 already moved: ASK.
    ASSERT_EQ(RedisCluster::command(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}).str, "OK");
    ASSERT_EQ(RedisCluster::command(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}).str, "OK");
    ASSERT_EQ(
        RedisCluster::command(from, {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "{rt}a:0", "0", "5000"}).str,
        "OK");
    c.get_chunks("{rt}a", 1000, 4096, check);
    EXPECT_EQ(rc.stats().ask, 1u);
    EXPECT_EQ(rc.stats().moved, 0u);
    c.get_chunks("{rt}b", 1000, 4096, check);  // still on the migrating shard: served there
    EXPECT_EQ(rc.stats().ask, 1u);
    EXPECT_EQ(to.calls("get"), 1);
    EXPECT_EQ(from.calls("get"), 1);
    // Migration done: the client's map still names the old owner, which answers MOVED.
    ASSERT_EQ(
        RedisCluster::command(from, {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "{rt}b:0", "0", "5000"}).str,
        "OK");
    for (size_t i = 0; i < cl.size(); ++i)
        ASSERT_EQ(RedisCluster::command(cl.shard(i), {"CLUSTER", "SETSLOT", s, "NODE", to_id}).str, "OK");
    c.get_chunks("{rt}b", 1000, 4096, check);
    EXPECT_EQ(rc.stats().moved, 1u);
    EXPECT_EQ(rc.stats().map_reloads, 1u);
    EXPECT_EQ(rc.node_of_slot(slot), "127.0.0.1:" + std::to_string(to.port()));
    c.get_chunks("{rt}a", 1000, 4096, check);  // the map knows the new owner: no redirection
    EXPECT_EQ(rc.stats().moved, 1u);
    EXPECT_EQ(rc.stats().ask, 1u);
    EXPECT_EQ(to.calls("get"), 3);
    EXPECT_EQ(from.calls("get"), 1);
    EXPECT_EQ(RedisCluster::rejected_calls(from), 2);  // the ASK and the MOVED it answered
    EXPECT_EQ(RedisCluster::rejected_calls(to), 0);
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(c.del_chunks("{rt}a", 1000, 4096) + c.del_chunks("{rt}b", 1000, 4096), 2);
    EXPECT_EQ(to.dbsize(), 0);

    // A slot the new owner says it migrates to a shard that does not import it: ASK there, MOVED back, again ...
    ASSERT_EQ(RedisCluster::command(to, {"CLUSTER", "SETSLOT", s, "MIGRATING", from_id}).str, "OK");
    const std::string e = error_of([&] { c.get_chunks("{rt}a", 1000, 4096, nullptr); });
    EXPECT_NE(e.find("still redirected after " + std::to_string(redis::kMaxRedirections)), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
    // The connection stays usable after the error.
    ASSERT_EQ(RedisCluster::command(to, {"CLUSTER", "SETSLOT", s, "STABLE"}).str, "OK");
    c.set_chunks("{rt}c", 1000, 4096, fill_bytes);
    EXPECT_EQ(c.del_chunks("{rt}c", 1000, 4096), 1);
}
