// Redis Cluster routing's pure parts (redis/cluster.h, docs/redis-cluster.md): CRC16-XMODEM and the key-to-slot
// function against keys whose slots Redis itself reports (CLUSTER KEYSLOT on redis-server 7.0), the hash-tag rules,
// and the parsing of MOVED / ASK replies and of CLUSTER SLOTS. Against a real cluster:
// tests/e2e/remote_cluster_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "redis/client.h"
#include "redis/cluster.h"

namespace redis = kvio::redis;
using redis::key_slot;
using redis::Redirect;

TEST(RedisClusterSlot, Crc16Xmodem) {
    EXPECT_EQ(redis::crc16("123456789"), 0x31C3);  // the check value of CRC16-XMODEM
    EXPECT_EQ(redis::crc16(""), 0);
    EXPECT_EQ(key_slot("123456789"), 0x31C3 % 16384);
}

TEST(RedisClusterSlot, KnownKeys) {
    // CLUSTER KEYSLOT KEY on redis-server 7.0.15.
    EXPECT_EQ(key_slot("foo"), 12182);
    EXPECT_EQ(key_slot("bar"), 5061);
    EXPECT_EQ(key_slot("hello"), 866);
    EXPECT_EQ(key_slot(""), 0);
}

TEST(RedisClusterSlot, HashTags) {
    // Keys sharing a hash tag share a slot: the tag's slot.
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
    EXPECT_EQ(key_slot("foo{bar}{zap}"), 5061);  // the first tag only: "bar"
    EXPECT_EQ(key_slot("x{bar}"), key_slot("bar"));
    // An empty tag "{}" does not count: the whole key is hashed (CLUSTER KEYSLOT values).
    EXPECT_EQ(key_slot("{}"), 15257);
    EXPECT_EQ(key_slot("foo{}{bar}"), 8363);
    EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));
    // A '{' without a '}' after it: no tag.
    EXPECT_EQ(key_slot("{"), 4092);
    EXPECT_EQ(key_slot("{bar"), redis::crc16("{bar") % 16384);
    // The tag ends at the first '}' after the first '{': "foo{{bar}}zap" hashes "{bar".
    EXPECT_EQ(key_slot("foo{{bar}}zap"), 4015);
    EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
    // A hash tag in an entry key keeps all its chunk keys in one slot (the tier's keys have none: spread).
    EXPECT_EQ(key_slot(redis::chunk_key("{e}", 0)), key_slot(redis::chunk_key("{e}", 1)));
}

TEST(RedisClusterRedirect, MovedAndAsk) {
    Redirect m = redis::parse_redirect("MOVED 3999 127.0.0.1:6381");
    EXPECT_EQ(m.kind, Redirect::Kind::Moved);
    EXPECT_EQ(m.slot, 3999);
    EXPECT_EQ(m.host, "127.0.0.1");
    EXPECT_EQ(m.port, 6381);
    Redirect a = redis::parse_redirect("ASK 16383 node-2.example:7000");
    EXPECT_EQ(a.kind, Redirect::Kind::Ask);
    EXPECT_EQ(a.slot, 16383);
    EXPECT_EQ(a.host, "node-2.example");
    EXPECT_EQ(a.port, 7000);
    // An IPv6 endpoint: the port follows the last ':'; brackets, when written, are dropped.
    Redirect v6 = redis::parse_redirect("MOVED 1 ::1:7001");
    EXPECT_EQ(v6.host, "::1");
    EXPECT_EQ(v6.port, 7001);
    EXPECT_EQ(redis::parse_redirect("MOVED 1 [::1]:7001").host, "::1");
    // No host: the node that answered (a server that does not know its own address writes ":PORT").
    Redirect same = redis::parse_redirect("MOVED 7 :7002");
    EXPECT_EQ(same.kind, Redirect::Kind::Moved);
    EXPECT_EQ(same.host, "");
    EXPECT_EQ(same.port, 7002);
}

TEST(RedisClusterRedirect, OtherErrorsAreNotRedirections) {
    for (const char* e :
         {"ERR unknown command", "MOVED", "MOVED 12", "MOVED x 127.0.0.1:1", "MOVED 16384 h:1", "MOVED 1 h",
          "MOVED 1 h:", "MOVED 1 h:0", "MOVED 1 h:65536", "MOVED 1 h:7x", "ASK  h:1",
          "TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN Hash slot not served"})
        EXPECT_EQ(redis::parse_redirect(e).kind, Redirect::Kind::None) << e;
}

namespace {

redis::Reply integer(long long v) {
    redis::Reply r;
    r.type = redis::Reply::Type::Integer, r.integer = v;
    return r;
}
redis::Reply text(const std::string& s) {
    redis::Reply r;
    r.type = redis::Reply::Type::String, r.str = s;
    return r;
}
redis::Reply array(std::vector<redis::Reply> e) {
    redis::Reply r;
    r.type = redis::Reply::Type::Array, r.elements = std::move(e);
    return r;
}

}  // namespace

TEST(RedisClusterSlots, ParsesMastersAndSkipsReplicas) {
    redis::Reply r = array({
        array({integer(0), integer(5460), array({text("10.0.0.1"), integer(7000), text("id1")}),
               array({text("10.0.0.9"), integer(7009), text("replica")})}),
        array({integer(5461), integer(16383), array({text("?"), integer(7001), text("id2")})}),
    });
    auto s = redis::parse_cluster_slots(r, "seed.example");
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].first, 0);
    EXPECT_EQ(s[0].last, 5460);
    EXPECT_EQ(s[0].host, "10.0.0.1");
    EXPECT_EQ(s[0].port, 7000);
    EXPECT_EQ(s[1].host, "seed.example");  // "?": the node asked
    EXPECT_EQ(s[1].port, 7001);
}

TEST(RedisClusterSlots, BadShapesAreErrors) {
    auto error_of = [](const redis::Reply& r) {
        try {
            redis::parse_cluster_slots(r, "seed");
        } catch (const kvio::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    redis::Reply err;
    err.type = redis::Reply::Type::Error, err.str = "ERR This instance has cluster support disabled";
    EXPECT_NE(error_of(err).find("cluster support disabled"), std::string::npos);
    EXPECT_NE(error_of(text("x")).find("not an array"), std::string::npos);
    EXPECT_NE(error_of(array({array({integer(0), integer(1)})})).find("a row"), std::string::npos);
    EXPECT_NE(
        error_of(array({array({integer(9), integer(16384), array({text("h"), integer(1)})})})).find("out of range"),
        std::string::npos);
}
