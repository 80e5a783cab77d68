// The connection's own SET writer and reply reader (redis/client.h send_set, receive_direct: the chunked SET/GET path
// that bypasses hiredis' buffers, docs/performance.md "Remote tier") against a scripted server on loopback: the exact
// bytes SET sends, replies cut at every awkward place, nil, error and wrong-sized chunks, garbage, and a server that
// closes mid-value.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "redis/client.h"

using namespace kvio::redis;

namespace {

/// A one-connection server on 127.0.0.1: `script` runs in a thread with the accepted socket.
class ScriptedServer {
public:
    explicit ScriptedServer(std::function<void(int fd)> script) {
        lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        EXPECT_EQ(::bind(lfd_, reinterpret_cast<sockaddr*>(&a), len), 0);
        EXPECT_EQ(::listen(lfd_, 1), 0);
        EXPECT_EQ(::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this, script] {
            int fd = ::accept(lfd_, nullptr, nullptr);
            if (fd < 0) return;
            script(fd);
            ::close(fd);
        });
    }
    ~ScriptedServer() {
        ::shutdown(lfd_, SHUT_RDWR);
        thread_.join();
        ::close(lfd_);
    }
    Url url() const {
        Url u;
        u.host = "127.0.0.1";
        u.port = port_;
        return u;
    }

private:
    int lfd_ = -1;
    int port_ = 0;
    std::thread thread_;
};

/// Reads exactly n bytes (or fewer at EOF).
std::string read_n(int fd, size_t n) {
    std::string s(n, '\0');
    size_t got = 0;
    while (got < n) {
        ssize_t r = ::recv(fd, s.data() + got, n - got, 0);
        if (r <= 0) break;
        got += size_t(r);
    }
    s.resize(got);
    return s;
}

/// Sends `s` in pieces of `piece` bytes, each its own write (the reader sees the reply cut at every boundary).
void send_pieces(int fd, const std::string& s, size_t piece) {
    for (size_t i = 0; i < s.size(); i += piece) {
        ::send(fd, s.data() + i, std::min(piece, s.size() - i), MSG_NOSIGNAL);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

std::string bulk(const std::string& v) { return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n"; }
std::string get_cmd(const std::string& k) { return "*2\r\n$3\r\nGET\r\n" + bulk(k); }

TEST(RedisDirect, SetSendsExactRespAndReadsTheReplies) {
    const std::string v1(10000, 'a'), v2 = "xy";  // a 2-chunk value of 10002 bytes in 10000-byte chunks
    std::string seen;
    ScriptedServer srv([&](int fd) {
        const std::string want =
            "*3\r\n$3\r\nSET\r\n" + bulk("k:0") + bulk(v1) + "*3\r\n$3\r\nSET\r\n" + bulk("k:1") + bulk(v2);
        seen = read_n(fd, want.size());
        send_pieces(fd, "+OK\r\n+OK\r\n", 1);  // each reply cut into single bytes
    });
    Connection c(srv.url(), 5, Routing::Single);
    c.set_chunks("k", 10002, 10000, [&](uint64_t off, char* dst, size_t len) {
        const std::string& src = off == 0 ? v1 : v2;
        std::copy(src.begin(), src.begin() + long(len), dst);
    });
    EXPECT_EQ(seen, "*3\r\n$3\r\nSET\r\n" + bulk("k:0") + bulk(v1) + "*3\r\n$3\r\nSET\r\n" + bulk("k:1") + bulk(v2));
    EXPECT_FALSE(c.broken());
}

TEST(RedisDirect, SetErrorReplyIsThrownWithItsText) {
    ScriptedServer srv([&](int fd) {
        read_n(fd, std::string("*3\r\n$3\r\nSET\r\n" + bulk("k:0") + bulk("abc")).size());
        send_pieces(fd, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", 7);
    });
    Connection c(srv.url(), 5, Routing::Single);
    try {
        c.set_chunks("k", 3, 100, [](uint64_t, char* dst, size_t) { std::copy_n("abc", 3, dst); });
        FAIL() << "no error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("OOM command not allowed"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(c.broken()) << "an error reply is a reply: the connection stays usable";
}

// Three GETs answered in one stream cut into 3-byte writes: headers split inside the length and between \r and \n.
TEST(RedisDirect, GetReassemblesRepliesCutAnywhere) {
    const std::string a(4096, 'p'), b(4096, 'q'), tail = "rs";
    ScriptedServer srv([&](int fd) {
        read_n(fd, (get_cmd("v:0") + get_cmd("v:1") + get_cmd("v:2")).size());
        send_pieces(fd, bulk(a) + bulk(b) + bulk(tail), 3);
        read_n(fd, std::string("*1\r\n$4\r\nPING\r\n").size());
        send_pieces(fd, "+PONG\r\n", 64);
    });
    Connection c(srv.url(), 5, Routing::Single);
    std::string got;
    uint64_t found = c.get_chunks("v", 8194, 4096, [&](uint64_t off, const char* p, size_t n) {
        EXPECT_EQ(off, got.size());
        got.append(p, n);
    });
    EXPECT_EQ(found, 3u);
    EXPECT_EQ(got, a + b + tail);
    EXPECT_FALSE(c.broken());
    // The connection is still in step: a plain command (through hiredis) after the direct reads gets its own reply.
    Reply r = c.command({"PING"});
    EXPECT_EQ(r.type, Reply::Type::Status);
    EXPECT_EQ(r.str, "PONG");
}

TEST(RedisDirect, NilIsAMissingChunkAndAWrongSizeIsAnError) {
    ScriptedServer srv([&](int fd) {
        read_n(fd, (get_cmd("v:0") + get_cmd("v:1")).size());
        send_pieces(fd, bulk("12") + "$-1\r\n", 2);
        read_n(fd, (get_cmd("w:0")).size());
        send_pieces(fd, bulk("123"), 64);  // 3 bytes where the chunk holds 2
    });
    Connection c(srv.url(), 5, Routing::Single);
    EXPECT_EQ(c.get_chunks("v", 4, 2, nullptr), 1u);  // chunk 1 is missing: found 1 of 2, no throw
    try {
        c.get_chunks("w", 2, 2, nullptr);
        FAIL() << "no error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("holds 3 bytes, expected 2"), std::string::npos) << e.what();
    }
}

TEST(RedisDirect, GarbageIsAProtocolErrorAndBreaksTheConnection) {
    ScriptedServer srv([&](int fd) {
        read_n(fd, get_cmd("v:0").size());
        send_pieces(fd, "*1\r\n$1\r\nx\r\n", 64);  // an array is no reply to GET
    });
    Connection c(srv.url(), 5, Routing::Single);
    EXPECT_THROW(c.get_chunks("v", 1, 1, nullptr), kvio::Error);
    EXPECT_TRUE(c.broken());
    EXPECT_THROW(c.get_chunks("v", 1, 1, nullptr), kvio::Error);
}

TEST(RedisDirect, ServerClosingMidValueIsAnIoError) {
    ScriptedServer srv([&](int fd) {
        read_n(fd, get_cmd("v:0").size());
        send_pieces(fd, "$100\r\n0123456789", 64);  // 10 of 100 bytes, then close
    });
    Connection c(srv.url(), 5, Routing::Single);
    try {
        c.get_chunks("v", 100, 100, nullptr);
        FAIL() << "no error";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("Server closed the connection"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(c.broken());
}

TEST(RedisDirect, SilentServerTimesOut) {
    ScriptedServer srv([&](int fd) {
        read_n(fd, get_cmd("v:0").size());
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // far longer than the client's 0.2 s
    });
    Connection c(srv.url(), 0.2, Routing::Single);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(c.get_chunks("v", 1, 1, nullptr), kvio::Error);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1200)) << "waited for the server";
    EXPECT_TRUE(c.broken());
}

}  // namespace

namespace {

void send_all(int fd, const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const ssize_t w = ::send(fd, s.data() + i, s.size() - i, MSG_NOSIGNAL);
        if (w <= 0) return;
        i += size_t(w);
    }
}

}  // namespace

/// Whether the client's next command reaches `fd` within `ms` milliseconds (peeked: nothing is consumed).
bool next_command_within(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

std::string set_cmd(const std::string& k, const std::string& v) { return "*3\r\n$3\r\nSET\r\n" + bulk(k) + bulk(v); }

// SETs of values of redis' big-argument size or more go one at a time (set_window): a SET pipelined behind a big value
// makes redis-server copy that value (docs/performance.md, "Remote tier: where the time goes"); smaller values stay
// pipelined kPipelineWindow deep. The scripted server reads each SET and, before its reply, looks whether the next one
// came: for big chunks within 100 ms (it cannot have, one is in flight), for small ones within 5 s (it must have:
// the window lets all three go before any reply).
TEST(RedisDirect, SetsOfBigChunksAreNotPipelined) {
    EXPECT_EQ(set_window(4190208), 1u);  // simulate's chunk: 4 MiB - 4 KiB
    EXPECT_EQ(set_window(kServerBigArgBytes), 1u);
    EXPECT_EQ(set_window(kServerBigArgBytes - 1), kPipelineWindow);
    EXPECT_EQ(set_window(4096), kPipelineWindow);
    for (const uint64_t chunk : {uint64_t(4190208), uint64_t(4096)}) {
        const bool big = chunk >= kServerBigArgBytes;
        const std::string value(chunk, 'v');
        int early = 0;
        std::string wrong;
        ScriptedServer srv([&](int fd) {
            for (int i = 0; i < 3; ++i) {
                const std::string want = set_cmd("s:" + std::to_string(i), value);
                if (read_n(fd, want.size()) != want) {
                    wrong = "SET " + std::to_string(i) + " is not the RESP expected";
                    return;
                }
                if (i < 2 && next_command_within(fd, big ? 100 : 5000)) ++early;
                send_all(fd, "+OK\r\n");
            }
        });
        Connection c(srv.url(), 10, Routing::Single);
        c.set_chunks("s", 3 * chunk, chunk, [&](uint64_t, char* dst, size_t len) { std::fill_n(dst, len, 'v'); });
        EXPECT_EQ(wrong, "") << chunk;
        EXPECT_EQ(early, big ? 0 : 2) << chunk << "-byte chunks: SETs sent before the reply to the one before";
    }
}

// GETs of chunks of megabytes go one at a time (get_window): the server builds the reply of every GET it has read
// before writing them, in fresh buffers (docs/performance.md, "Remote tier: where the time goes"). The scripted
// server answers each GET 100 ms after reading it and looks whether the next one came before its reply: with one in
// flight it cannot have; pipelined 4 deep (the window before), all three came in the first write.
TEST(RedisDirect, GetsOfLargeChunksAreNotPipelined) {
    EXPECT_EQ(get_window(4190208), 1u);  // simulate's chunk: 4 MiB - 4 KiB
    EXPECT_EQ(get_window(4u << 20), 1u);
    EXPECT_EQ(get_window(2u << 20), 2u);
    EXPECT_EQ(get_window(1u << 20), 4u);
    EXPECT_EQ(get_window(4096), kPipelineWindow);
    EXPECT_EQ(get_window(64u << 20), 1u);
    const uint64_t chunk = 4190208;
    int early = 0;
    ScriptedServer srv([&](int fd) {
        const std::string value(chunk, 'v');
        for (int i = 0; i < 3; ++i) {
            if (read_n(fd, get_cmd("big:" + std::to_string(i)).size()).empty()) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            char b[64];
            if (::recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT) > 0) ++early;
            send_all(fd, bulk(value));
        }
    });
    Connection c(srv.url(), 5, Routing::Single);
    uint64_t bytes = 0;
    EXPECT_EQ(c.get_chunks("big", 3 * chunk, chunk, [&](uint64_t, const char*, size_t n) { bytes += n; }), 3u);
    EXPECT_EQ(bytes, 3 * chunk);
    EXPECT_EQ(early, 0) << "a GET was sent before the reply to the one before it";
}
