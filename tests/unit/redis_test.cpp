// The redis/ library's pure parts: the server URL parser (good URLs and each kind of bad one, with the error naming
// the problem) and the chunk naming. The client against a real server: tests/e2e/remote_tier_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "redis/client.h"
#include "redis/url.h"

using kvio::redis::parse_url;

namespace {

std::string error_of(const std::string& text) {
    try {
        parse_url(text);
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(RedisUrl, HostPortOnly) {
    auto u = parse_url("redis://127.0.0.1:7001");
    EXPECT_EQ(u.host, "127.0.0.1");
    EXPECT_EQ(u.port, 7001);
    EXPECT_EQ(u.db, 0);
    EXPECT_TRUE(u.user.empty());
    EXPECT_TRUE(u.password.empty());
}

TEST(RedisUrl, DefaultPortAndDatabase) {
    auto u = parse_url("redis://cache.example/3");
    EXPECT_EQ(u.host, "cache.example");
    EXPECT_EQ(u.port, 6379);
    EXPECT_EQ(u.db, 3);
    EXPECT_EQ(parse_url("redis://h:1/").db, 0);
}

TEST(RedisUrl, Credentials) {
    auto u = parse_url("redis://alice:s3cr@t@h:6380/2");
    EXPECT_EQ(u.user, "alice");
    EXPECT_EQ(u.password, "s3cr@t");  // the last '@' ends the credentials
    EXPECT_EQ(u.host, "h");
    EXPECT_EQ(u.port, 6380);
    EXPECT_EQ(u.db, 2);
    auto d = parse_url("redis://:pw@h:1");
    EXPECT_EQ(d.user, "");
    EXPECT_EQ(d.password, "pw");
    EXPECT_EQ(u.safe_text(), "redis://alice@h:6380/2");  // never the password
}

TEST(RedisUrl, Ipv6InBrackets) {
    auto u = parse_url("redis://[::1]:7000");
    EXPECT_EQ(u.host, "::1");
    EXPECT_EQ(u.port, 7000);
    EXPECT_EQ(u.safe_text(), "redis://[::1]:7000/0");
}

TEST(RedisUrl, BadUrlsSayWhatIsWrong) {
    EXPECT_NE(error_of("http://h:1").find("expected redis://"), std::string::npos);
    EXPECT_NE(error_of("h:6379").find("expected redis://"), std::string::npos);
    EXPECT_NE(error_of("redis://").find("no host"), std::string::npos);
    EXPECT_NE(error_of("redis://:6379").find("no host"), std::string::npos);
    EXPECT_NE(error_of("redis://h:").find("empty port"), std::string::npos);
    EXPECT_NE(error_of("redis://h:abc").find("port 'abc' is not a number in 1..65535"), std::string::npos);
    EXPECT_NE(error_of("redis://h:0").find("port '0'"), std::string::npos);
    EXPECT_NE(error_of("redis://h:65536").find("port '65536'"), std::string::npos);
    EXPECT_NE(error_of("redis://h:1/x").find("database 'x' is not a number"), std::string::npos);
    EXPECT_NE(error_of("redis://h:1/-1").find("database '-1'"), std::string::npos);
    EXPECT_NE(error_of("redis://user@h:1").find("user:password"), std::string::npos);
    EXPECT_NE(error_of("redis://u:@h:1").find("empty password"), std::string::npos);
    EXPECT_NE(error_of("redis://::1:7000").find("brackets"), std::string::npos);
    EXPECT_NE(error_of("redis://[::1:7000").find("without ']'"), std::string::npos);
    EXPECT_NE(error_of("redis://[::1]x").find("':PORT'"), std::string::npos);
    // The error quotes the URL it read.
    EXPECT_EQ(error_of("redis://h:abc").rfind("'redis://h:abc': ", 0), 0u);
}

TEST(RedisUrl, ErrorsAndRecordsMaskThePassword) {
    using kvio::redis::mask_password;
    using kvio::redis::recorded_url;
    const std::string e = error_of("redis://:s3cret@h:99999");
    EXPECT_EQ(e, "'redis://:***@h:99999': port '99999' is not a number in 1..65535");
    EXPECT_EQ(error_of("redis://al:p@ss@h:1/x").find("p@ss"), std::string::npos);
    EXPECT_EQ(mask_password("redis://alice:s3cr@t@h:6380/2"), "redis://alice:***@h:6380/2");
    EXPECT_EQ(mask_password("redis://h:1"), "redis://h:1");
    EXPECT_EQ(mask_password("http://x"), "http://x");
    EXPECT_EQ(mask_password("redis://user@h:1"), "redis://user@h:1");
    EXPECT_EQ(recorded_url("redis://:goodpw@127.0.0.1:31003"), "redis://127.0.0.1:31003/0");
    EXPECT_EQ(recorded_url("redis://:goodpw@h:0"), "redis://:***@h:0");  // unparsable: masked
}

TEST(RedisChunks, NamesAndCounts) {
    EXPECT_EQ(kvio::redis::chunk_key("run7:e1", 0), "run7:e1:0");
    EXPECT_EQ(kvio::redis::chunk_key("run7:e1", 12), "run7:e1:12");
    EXPECT_EQ(kvio::redis::chunk_count(0, 4096), 1u);
    EXPECT_EQ(kvio::redis::chunk_count(1, 4096), 1u);
    EXPECT_EQ(kvio::redis::chunk_count(4096, 4096), 1u);
    EXPECT_EQ(kvio::redis::chunk_count(4097, 4096), 2u);
    EXPECT_EQ(kvio::redis::chunk_count(10 * 4096, 4096), 10u);
}
