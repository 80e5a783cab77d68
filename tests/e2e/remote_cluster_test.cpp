// The remote KV tier on a real 3-shard Redis Cluster (tests/e2e/redis_cluster.h; docs/redis-cluster.md): keys spread
// over every shard and kvio's counts equal the shards' sums; MOVED and ASK redirections of a slot moved by hand are
// followed, counted, and bounded; the handoff lists' single-key commands go to their own shards.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
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

// Single-key commands (the handoff lists' RPUSH, LPOP and DEL) go to the shard owning the key's slot, not to the seed:
// each list is on its owner and nowhere else, no shard refused a command (a MOVED counts in rejected_calls), and a
// MOVED from a stale map is followed.
TEST(RemoteCluster, KeyCommandsGoToTheShardOwningTheKey) {
    RedisCluster cl(64);
    ASSERT_TRUE(cl.ok()) << cl.error();
    redis::Connection c(redis::parse_url(cl.seed_url()), 5.0);
    ASSERT_NE(c.cluster(), nullptr);
    const redis::Cluster& rc = *c.cluster();
    std::vector<int> lists_on(cl.size(), 0);
    for (int i = 0; i < 12; ++i) {
        const std::string list = "kc:handoff:" + std::to_string(i);
        EXPECT_EQ(c.key_command(list, {"RPUSH", list, "m1"}).integer, 1);
        EXPECT_EQ(c.key_command(list, {"RPUSH", list, "m2"}).integer, 2);
        const size_t owner = shard_at(cl, rc.node_of_slot(redis::key_slot(list)));
        ASSERT_LT(owner, cl.size());
        ++lists_on[owner];
        // On its owner (asked directly, no routing) and, as a cluster node refuses another's key, only there.
        EXPECT_EQ(RedisCluster::command(cl.shard(owner), {"LLEN", list}).integer, 2) << list;
        EXPECT_EQ(c.key_command(list, {"LPOP", list}).str, "m1");
    }
    long long rpush = 0, lpop = 0, keys = 0;
    for (size_t s = 0; s < cl.size(); ++s) {
        EXPECT_GT(lists_on[s], 0) << "shard " << s << " owns none of the 12 lists";
        EXPECT_EQ(cl.shard(s).calls("rpush"), 2 * lists_on[s]) << "shard " << s;
        EXPECT_EQ(cl.shard(s).calls("lpop"), lists_on[s]) << "shard " << s;
        EXPECT_EQ(cl.shard(s).dbsize(), lists_on[s]) << "shard " << s;  // each list (one message left) on its owner
        EXPECT_EQ(RedisCluster::rejected_calls(cl.shard(s)), 0) << "shard " << s;
        rpush += cl.shard(s).calls("rpush"), lpop += cl.shard(s).calls("lpop"), keys += cl.shard(s).dbsize();
    }
    EXPECT_EQ(rpush, 24);
    EXPECT_EQ(lpop, 12);
    EXPECT_EQ(keys, 12);
    EXPECT_EQ(rc.stats().moved + rc.stats().ask, 0u);

    // The slot of one list moved to another shard behind the client's back: MOVED, followed, the map read again.
    const std::string list = "kc:handoff:0";
    const int slot = redis::key_slot(list);
    const size_t a = shard_at(cl, rc.node_of_slot(slot)), b = (a + 1) % cl.size();
    RedisServer &from = cl.shard(a), &to = cl.shard(b);
    const std::string s = std::to_string(slot), to_id = RedisCluster::id(to);
    const long long to_lpops = to.calls("lpop");
    ASSERT_EQ(RedisCluster::command(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", RedisCluster::id(from)}).str, "OK");
    ASSERT_EQ(RedisCluster::command(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}).str, "OK");
    ASSERT_EQ(RedisCluster::command(from, {"MIGRATE", "127.0.0.1", std::to_string(to.port()), list, "0", "5000"}).str,
              "OK");
    for (size_t i = 0; i < cl.size(); ++i)
        ASSERT_EQ(RedisCluster::command(cl.shard(i), {"CLUSTER", "SETSLOT", s, "NODE", to_id}).str, "OK");
    EXPECT_EQ(c.key_command(list, {"LPOP", list}).str, "m2");
    EXPECT_EQ(rc.stats().moved, 1u);
    EXPECT_EQ(rc.stats().map_reloads, 1u);
    EXPECT_EQ(RedisCluster::rejected_calls(from), 1);
    EXPECT_EQ(to.calls("lpop"), to_lpops + 1);
}

// `kvio simulate` with conversation handoff over a cluster (two clients, --remote-handoff-probability 1): the run id
// puts both clients' lists on shards other than the seed, so a list command sent to the seed would be answered MOVED
// (an error, the conversation kept). Each shard served exactly the RPUSHes and LPOPs of the lists it owns, no shard
// refused a command, no read failed, and nothing is left on any shard.
TEST(RemoteCluster, ConversationHandoffOverAClusterRoutesTheLists) {
    RedisCluster cl(1024);
    ASSERT_TRUE(cl.ok()) << cl.error();
    const std::string run_id = "cl-handoff";
    std::vector<size_t> list_shard;
    {
        redis::Connection c(redis::parse_url(cl.seed_url()), 5.0);
        ASSERT_NE(c.cluster(), nullptr);
        for (int i = 0; i < 2; ++i) {
            const std::string list = run_id + ":handoff:" + std::to_string(i);
            list_shard.push_back(shard_at(cl, c.cluster()->node_of_slot(redis::key_slot(list))));
            ASSERT_LT(list_shard.back(), cl.size());
            ASSERT_NE(list_shard.back(), 0u) << list << " is on the seed: the test would not see a misrouted list";
        }
    }
    TempDir dir;
    {
        std::ofstream y(dir.file("conv.yaml"));
        y << "conversation:\n  end_conversation_probability: 0.0\n";
    }
    SimRun r = simulate(dir, "--config " + dir.file("conv.yaml") +
                                 " --model tiny-1b --num-gpus 4 --tensor-parallel 4 --num-users 4 --duration 8 "
                                 "--gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 3 --progress-interval 0 "
                                 "--num-clients 2 --remote-handoff-probability 1 --remote-run-id " +
                                 run_id + " --remote-tier " + cl.seed_url() + " --remote-capacity-gb 0.8");
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    std::vector<long long> rpush(cl.size(), 0), lpop(cl.size(), 0);
    long long handed = 0;
    for (int i = 0; i < 2; ++i) {
        const std::string f = dir.file("r.rank" + std::to_string(i) + ".json");
        ASSERT_TRUE(std::filesystem::exists(f)) << f;
        const nlohmann::json j = nlohmann::json::parse(slurp(f));
        const nlohmann::json& k = j["kvio"];
        EXPECT_FALSE(k["cache"].contains("first_error")) << "client " << i << ": " << k["cache"]["first_error"];
        const nlohmann::json& h = k["conversations"]["handoff"];
        ASSERT_TRUE(h.is_object()) << k["conversations"].dump();
        const nlohmann::json* t = tier_section(j, "remote");
        ASSERT_NE(t, nullptr);
        EXPECT_EQ((*t)["remote"]["errors"].get<long long>(), 0) << "client " << i;
        EXPECT_EQ((*t)["remote"]["cluster"]["moved"].get<long long>(), 0) << "client " << i;
        // Client i sends to client i+1's list and polls its own.
        rpush[list_shard[size_t((i + 1) % 2)]] += h["handed_off"].get<long long>();
        lpop[list_shard[size_t(i)]] += h["polls"].get<long long>();
        handed += h["handed_off"].get<long long>();
        std::cout << "client " << i << ": handed off " << h["handed_off"] << ", polls " << h["polls"] << ", took over "
                  << h["taken_over"] << "\n";
    }
    EXPECT_GT(handed, 0);
    for (size_t s = 0; s < cl.size(); ++s) {
        EXPECT_EQ(cl.shard(s).calls("rpush"), rpush[s]) << "shard " << s;
        EXPECT_EQ(cl.shard(s).calls("lpop"), lpop[s]) << "shard " << s;
        EXPECT_EQ(RedisCluster::rejected_calls(cl.shard(s)), 0) << "shard " << s;
        EXPECT_EQ(cl.shard(s).dbsize(), 0) << "shard " << s;
    }
}
