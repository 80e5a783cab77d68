// A 3-shard Redis Cluster for one test (docs/redis-cluster.md): three RedisServer masters (redis_server.h: loopback,
// free ports, --save '', bounded memory, killed by their destructors even when the test fails) with
// cluster-enabled yes and their cluster bus on a free port too, joined by `redis-cli --cluster create` with no
// replicas (the slots split in three ranges), and waited for until every node reports cluster_state:ok.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/redis_server.h"

namespace kvio::test {

class RedisCluster {
public:
    explicit RedisCluster(int maxmemory_mb_each = 256) {
        for (int i = 0; i < 3; ++i) {
            // The bus port defaults to port + 10000, which may be taken or past 65535: name a free one.
            const int bus = free_loopback_port();
            shards_.push_back(std::make_unique<RedisServer>(
                maxmemory_mb_each,
                std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-port", std::to_string(bus),
                                         "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}));
            if (!shards_.back()->ok()) {
                error_ = "redis-server " + std::to_string(i) + " did not start";
                return;
            }
        }
        std::string cmd = "redis-cli --cluster create";
        for (const auto& s : shards_) cmd += " 127.0.0.1:" + std::to_string(s->port());
        cmd += " --cluster-replicas 0 --cluster-yes 2>&1";
        CmdResult r = run(cmd);
        if (r.status != 0) {
            error_ = cmd + " failed: " + r.out;
            return;
        }
        for (int i = 0; i < 100 && !ok_; ++i) {
            ok_ = true;
            for (const auto& s : shards_)
                ok_ = ok_ && command(*s, {"CLUSTER", "INFO"}).str.find("cluster_state:ok") != std::string::npos;
            if (!ok_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!ok_) error_ = "the cluster did not reach cluster_state:ok within 10 s";
    }

    bool ok() const { return ok_; }
    /// Why ok() is false.
    const std::string& error() const { return error_; }
    RedisServer& shard(size_t i) { return *shards_.at(i); }
    size_t size() const { return shards_.size(); }
    /// The first shard's URL: the seed address.
    std::string seed_url() const { return shards_.at(0)->url(); }

    /// A shard's reply to one command (its own connection, no cluster routing).
    static redis::Reply command(const RedisServer& s, const std::vector<std::string>& args) {
        redis::Connection c(s.url_struct(), 5.0, redis::Routing::Single);
        return c.command(args);
    }
    static std::string info(const RedisServer& s, const std::string& section) {
        return command(s, {"INFO", section}).str;
    }
    /// Commands a shard refused over all commands (INFO commandstats' rejected_calls: a MOVED or ASK it answered
    /// counts there, not in calls).
    static long long rejected_calls(const RedisServer& s) {
        const std::string text = info(s, "commandstats"), field = "rejected_calls=";
        long long sum = 0;
        for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at + 1))
            sum += std::stoll(text.substr(at + field.size()));
        return sum;
    }
    /// A shard's cluster node id (CLUSTER MYID).
    static std::string id(const RedisServer& s) { return command(s, {"CLUSTER", "MYID"}).str; }

private:
    std::vector<std::unique_ptr<RedisServer>> shards_;
    bool ok_ = false;
    std::string error_;
};

}  // namespace kvio::test
