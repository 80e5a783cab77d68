// The remote KV tier against a real redis-server each test starts (tests/e2e/redis_server.h; docs/simulate.md,
// "Remote tier"): the redis/ client's chunked, pipelined SET/GET/DEL and its errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "redis/client.h"
#include "tests/e2e/redis_server.h"

using namespace kvio::test;
namespace redis = kvio::redis;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

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
    c.get_chunks("run1:e1", bytes, chunk, [&](uint64_t off, const char* src, size_t len) {
        for (size_t i = 0; i < len; ++i) wrong += src[i] != byte_at(off + i);
        seen += len;
    });
    EXPECT_EQ(seen, bytes);
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(srv.info("keyspace_hits"), 10);  // one GET per chunk, pipelined on one connection
    EXPECT_EQ(c.command({"STRLEN", "run1:e1:9"}).integer, long(bytes - 9 * chunk));
    EXPECT_EQ(c.del_chunks("run1:e1", bytes, chunk), 10);
    EXPECT_EQ(srv.dbsize(), 0);
    EXPECT_NE(error_of([&] { c.get_chunks("run1:e1", bytes, chunk, nullptr); }).find("chunk 0 is missing"),
              std::string::npos);
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
