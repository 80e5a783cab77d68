// A redis-server for one test (Debian's redis-server): loopback, a free port, its own temporary directory, no
// persistence (--save '' --appendonly no), bounded memory, started in the foreground as this process' child and
// killed by the destructor; PR_SET_PDEATHSIG kills it too when the test binary itself is killed.
#pragma once
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tests/error_of.h"
#include "redis/client.h"
#include "tests/e2e/helpers.h"

namespace kvio::test {

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and closed).
inline int free_loopback_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

class RedisServer {
public:
    /// Starts a server (maxmemory `maxmemory_mb` MiB, noeviction: a full server refuses writes) and waits up to
    /// 10 s for it to answer PING. `extra` = more "--name value" arguments. ok() false when it never answered.
    explicit RedisServer(int maxmemory_mb = 256, std::vector<std::string> extra = {}) : dir_("/var/tmp") {
        for (int attempt = 0; attempt < 5 && !ok_; ++attempt) {
            port_ = free_loopback_port();
            std::vector<std::string> args{"redis-server",
                                          "--port",
                                          std::to_string(port_),
                                          "--bind",
                                          "127.0.0.1",
                                          "--save",
                                          "",
                                          "--appendonly",
                                          "no",
                                          "--dir",
                                          dir_.path,
                                          "--maxmemory",
                                          std::to_string(maxmemory_mb) + "mb",
                                          "--maxmemory-policy",
                                          "noeviction",
                                          "--logfile",
                                          dir_.file("redis.log")};
            args.insert(args.end(), extra.begin(), extra.end());
            pid_ = fork();
            if (pid_ == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                std::vector<char*> argv;
                for (auto& s : args) argv.push_back(s.data());
                argv.push_back(nullptr);
                execvp("redis-server", argv.data());
                _exit(127);
            }
            for (int i = 0; i < 100 && !ok_; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                int st = 0;
                if (waitpid(pid_, &st, WNOHANG) == pid_) {
                    pid_ = -1;
                    break;  // exited (the port was taken meanwhile): try another
                }
                try {
                    redis::Connection c(url_struct(), 1.0, redis::Routing::Single);
                    c.command({"PING"});  // PONG, or NOAUTH from a server with a password: up either way
                    ok_ = true;
                } catch (const std::exception&) {}
            }
            if (!ok_) stop();
        }
    }
    ~RedisServer() { stop(); }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    bool ok() const { return ok_; }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    redis::Url url_struct() const { return redis::parse_url(url()); }
    /// Kills the server now (SIGKILL) and reaps it.
    void stop() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        pid_ = -1;
    }
    /// One field of INFO (e.g. "used_memory", "keyspace_hits"); -1 when absent.
    long long info(const std::string& field) const {
        redis::Connection c(url_struct(), 5.0, redis::Routing::Single);
        std::string text = c.command({"INFO", "all"}).str;
        size_t at = text.find("\n" + field + ":");
        if (at == std::string::npos) return -1;
        return std::stoll(text.substr(at + field.size() + 2));
    }
    /// `calls` of one command in INFO commandstats (e.g. "set"); 0 when never called.
    long long calls(const std::string& cmd) const {
        redis::Connection c(url_struct(), 5.0, redis::Routing::Single);
        return calls_in(c.command({"INFO", "commandstats"}).str, cmd);
    }
    /// `calls` of `cmd` in the text of an INFO commandstats reply; 0 when never called.
    static long long calls_in(const std::string& text, const std::string& cmd) {
        size_t at = text.find("cmdstat_" + cmd + ":calls=");
        if (at == std::string::npos) return 0;
        return std::stoll(text.substr(at + cmd.size() + 15));
    }
    long long dbsize() const {
        redis::Connection c(url_struct(), 5.0, redis::Routing::Single);
        return c.command({"DBSIZE"}).integer;
    }

private:
    TempDir dir_;
    pid_t pid_ = -1;
    int port_ = -1;
    bool ok_ = false;
};

/// Kills a server (SIGKILL, RedisServer::stop; or runs `act` instead, e.g. a CLIENT KILL) from a thread of its own as
/// soon as its INFO commandstats counts at least `calls` calls of `cmd`, asked every 10 ms on one connection: a
/// trigger on what the server did rather than on a clock, so a busy machine meets it at the same point of a run.
/// Gives up after `timeout_s`. join() (or the destructor) ends the thread: declare it after the server, so that it is
/// gone before the server's destructor.
class KillOnCalls {
public:
    KillOnCalls(RedisServer& srv, std::string cmd, long long calls, double timeout_s = 60,
                std::function<void()> act = nullptr)
        : act_(std::move(act)),
          th_([this, &srv, cmd = std::move(cmd), calls, timeout_s] { poll(srv, cmd, calls, timeout_s); }) {}
    ~KillOnCalls() { join(); }
    KillOnCalls(const KillOnCalls&) = delete;
    KillOnCalls& operator=(const KillOnCalls&) = delete;

    /// Stops polling (a server not killed yet stays up) and waits for the thread.
    void join() {
        done_ = true;
        if (th_.joinable()) th_.join();
    }
    /// Whether the server was killed; the steady-clock time of the kill, and the count that triggered it.
    bool killed() const { return killed_; }
    std::chrono::steady_clock::time_point at() const { return at_; }
    long long seen() const { return seen_; }

private:
    void poll(RedisServer& srv, const std::string& cmd, long long calls, double timeout_s) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        std::unique_ptr<redis::Connection> c;
        while (!done_ && std::chrono::steady_clock::now() < end) {
            try {
                if (!c) c = std::make_unique<redis::Connection>(srv.url_struct(), 5.0, redis::Routing::Single);
                const long long n = RedisServer::calls_in(c->command({"INFO", "commandstats"}).str, cmd);
                if (n >= calls) {
                    c.reset();  // not left to a CLIENT KILL `act` may send
                    if (act_)
                        act_();
                    else
                        srv.stop();
                    at_ = std::chrono::steady_clock::now();
                    seen_ = n;
                    killed_ = true;
                    return;
                }
            } catch (const std::exception&) {
                c.reset();  // asked again on a new connection
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    std::function<void()> act_;
    std::atomic<bool> done_{false}, killed_{false};
    std::chrono::steady_clock::time_point at_{};
    long long seen_ = 0;
    std::thread th_;  // last: started once the members above exist
};

/// results' kvio.cache.tiers[] entry of tier `name` ("remote", "storage", ...), or nullptr.
inline const nlohmann::json* tier_section(const nlohmann::json& results, const std::string& name) {
    for (const auto& t : results["kvio"]["cache"]["tiers"])
        if (t["tier"] == name) return &t;
    return nullptr;
}

}  // namespace kvio::test
