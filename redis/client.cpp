// The hiredis connection and chunked SET/GET/DEL (client.h).
#include "redis/client.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "redis/cluster.h"

namespace kvio::redis {

namespace {

timeval to_tv(double s) {
    timeval tv;
    tv.tv_sec = time_t(s);
    tv.tv_usec = suseconds_t((s - double(tv.tv_sec)) * 1e6);
    return tv;
}

Reply convert(const redisReply* r) {
    Reply out;
    switch (r->type) {
        case REDIS_REPLY_STATUS:
            out.type = Reply::Type::Status, out.str.assign(r->str, r->len);
            break;
        case REDIS_REPLY_ERROR:
            out.type = Reply::Type::Error, out.str.assign(r->str, r->len);
            break;
        case REDIS_REPLY_INTEGER:
            out.type = Reply::Type::Integer, out.integer = r->integer;
            break;
        case REDIS_REPLY_STRING:
            out.type = Reply::Type::String, out.str.assign(r->str, r->len);
            break;
        case REDIS_REPLY_ARRAY:
            out.type = Reply::Type::Array;
            for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
            break;
        default:
            out.type = Reply::Type::Nil;
    }
    return out;
}

struct FreeReply {
    void operator()(void* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<void, FreeReply>;

}  // namespace

std::string chunk_key(const std::string& key, uint64_t i) { return key + ":" + std::to_string(i); }

size_t get_window(uint64_t chunk) {
    return size_t(std::clamp<uint64_t>(kGetPipelineBytes / std::max<uint64_t>(chunk, 1), 1, kPipelineWindow));
}

size_t set_window(uint64_t chunk) { return chunk >= kServerBigArgBytes ? 1 : kPipelineWindow; }

bool is_timeout(const std::string& error) {
    for (const char* t : {"Resource temporarily unavailable", "timed out", "Timeout"})
        if (error.find(t) != std::string::npos) return true;
    return false;
}

uint64_t chunk_count(uint64_t bytes, uint64_t chunk) { return bytes == 0 ? 1 : (bytes + chunk - 1) / chunk; }

Connection::Connection(const Url& url, double timeout_s, Routing routing) {
    endpoint_ =
        (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
    c_ = redisConnectWithTimeout(url.host.c_str(), url.port, to_tv(timeout_s));
    if (!c_) throw Error("redis " + endpoint_ + ": cannot allocate a connection");
    if (c_->err) {
        std::string e = c_->errstr;
        redisFree(c_);
        c_ = nullptr;
        throw Error("redis " + endpoint_ + ": cannot connect: " + e);
    }
    redisSetTimeout(c_, to_tv(timeout_s));
    auto checked = [&](const std::vector<std::string>& args, const std::string& what) {
        Reply r = command(args);
        if (r.type == Reply::Type::Error) throw Error("redis " + endpoint_ + ": " + what + ": " + r.str);
    };
    if (!url.password.empty()) {
        if (url.user.empty())
            checked({"AUTH", url.password}, "AUTH refused");
        else
            checked({"AUTH", url.user, url.password}, "AUTH refused");
    }
    if (url.db != 0) checked({"SELECT", std::to_string(url.db)}, "SELECT " + std::to_string(url.db) + " refused");
    if (routing == Routing::Detect) {
        // A server without cluster support answers INFO cluster with an empty section or an error: a single server.
        Reply info = command({"INFO", "cluster"});
        if (info.type == Reply::Type::String && info.str.find("cluster_enabled:1") != std::string::npos) {
            try {
                cluster_ = std::make_unique<Cluster>(*this, url, timeout_s);
            } catch (...) {
                redisFree(c_);  // the destructor does not run for a constructor that throws
                c_ = nullptr;
                throw;
            }
        }
    }
    // Last, so CLIENT LIST's `cmd` of a connection is its name or what it was used for. A server that refuses the
    // command (an ACL without it) leaves the connection unnamed: only the name is lost.
    if (!url.client_name.empty()) command({"CLIENT", "SETNAME", url.client_name});
}

Connection::~Connection() {
    cluster_.reset();
    if (c_) redisFree(c_);
}

bool Connection::broken() const { return !c_ || c_->err != 0; }

void Connection::fail_io(const std::string& what) {
    std::string e = c_ && c_->err ? std::string(c_->errstr) : std::string("connection broken");
    if (e.empty()) e = "I/O error";
    throw Error("redis " + endpoint_ + ": " + what + ": " + e);
}

void Connection::append(const std::vector<const char*>& argv, const std::vector<size_t>& len) {
    if (broken()) fail_io("cannot send");
    if (redisAppendCommandArgv(c_, int(argv.size()), const_cast<const char**>(argv.data()), len.data()) != REDIS_OK)
        fail_io("cannot send");
}

void Connection::flush() {
    if (broken()) fail_io("cannot send");
    int done = 0;
    while (!done)
        if (redisBufferWrite(c_, &done) != REDIS_OK) fail_io("cannot send");
}

void Connection::receive(const std::function<void(const ReplyView&)>& f) {
    ReplyPtr raw(next_raw_reply());
    const redisReply* r = static_cast<const redisReply*>(raw.get());
    ReplyView v;
    switch (r->type) {
        case REDIS_REPLY_STATUS:
            v.type = Reply::Type::Status;
            break;
        case REDIS_REPLY_ERROR:
            v.type = Reply::Type::Error;
            break;
        case REDIS_REPLY_INTEGER:
            v.type = Reply::Type::Integer, v.integer = r->integer;
            break;
        case REDIS_REPLY_STRING:
            v.type = Reply::Type::String;
            break;
        case REDIS_REPLY_ARRAY:
            v.type = Reply::Type::Array;
            break;
        default:
            v.type = Reply::Type::Nil;
    }
    if (v.type == Reply::Type::Status || v.type == Reply::Type::Error || v.type == Reply::Type::String)
        v.data = r->str, v.len = r->len;
    f(v);
}

void Connection::fail_socket(const std::string& what, int err, bool protocol) {
    if (c_ && !c_->err) {
        c_->err = protocol ? REDIS_ERR_PROTOCOL : REDIS_ERR_IO;
        std::snprintf(c_->errstr, sizeof c_->errstr, "%s",
                      protocol ? "protocol error"
                      : err    ? std::strerror(err)
                               : "Server closed the connection");
    }
    fail_io(what);
}

void Connection::send_set(const std::string& key, const char* value, size_t len) {
    flush();
    std::string head =
        "*3\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$" + std::to_string(len) + "\r\n";
    static const char crlf[] = "\r\n";
    iovec iov[3] = {{head.data(), head.size()}, {const_cast<char*>(value), len}, {const_cast<char*>(crlf), 2}};
    size_t i = 0;
    while (i < 3) {
        ssize_t w = ::writev(c_->fd, iov + i, int(3 - i));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail_socket("cannot send", w < 0 ? errno : EPIPE);
        size_t n = size_t(w);
        while (i < 3 && n >= iov[i].iov_len) n -= iov[i++].iov_len;
        if (i < 3) iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + n, iov[i].iov_len -= n;
    }
}

void Connection::read_exact(char* dst, size_t n) {
    while (n > 0) {
        ssize_t r = ::recv(c_->fd, dst, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail_socket("no reply", r < 0 ? errno : 0);
        dst += r, n -= size_t(r);
    }
}

std::string Connection::read_line() {
    std::string line;
    char peek[256];
    for (;;) {
        // Peek, so that bytes past this line (the bulk that follows, the next reply) stay in the socket.
        ssize_t r = ::recv(c_->fd, peek, sizeof peek, MSG_PEEK);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail_socket("no reply", r < 0 ? errno : 0);
        size_t avail = size_t(r), take = avail;
        bool done = false;
        if (!line.empty() && line.back() == '\r' && peek[0] == '\n') {
            take = 1, done = true;
        } else if (const void* nl = memmem(peek, avail, "\r\n", 2)) {
            take = size_t(static_cast<const char*>(nl) - peek) + 2, done = true;
        }
        line.append(peek, take);
        read_exact(peek, take);  // consume what was appended
        if (done) {
            line.resize(line.size() - 2);
            return line;
        }
        if (line.size() > (64u << 10)) fail_socket("no reply", 0, true);  // no reply header is this long
    }
}

void Connection::receive_direct(const std::function<void(const ReplyView&)>& f) {
    if (broken()) fail_io("no reply");
    flush();  // queued commands first, as redisGetReply does
    if (c_->reader->pos < c_->reader->len || c_->reader->ridx >= 0) return receive(f);  // hiredis holds bytes
    const std::string line = read_line();
    ReplyView v;
    char* end = nullptr;
    switch (line.empty() ? '\0' : line[0]) {
        case '+':
        case '-':
            v.type = line[0] == '+' ? Reply::Type::Status : Reply::Type::Error;
            v.data = line.data() + 1, v.len = line.size() - 1;
            break;
        case ':':
            v.type = Reply::Type::Integer, v.integer = std::strtoll(line.c_str() + 1, &end, 10);
            if (end == line.c_str() + 1 || *end) fail_socket("no reply", 0, true);
            break;
        case '$': {
            const long long n = std::strtoll(line.c_str() + 1, &end, 10);
            if (end == line.c_str() + 1 || *end || n < -1) fail_socket("no reply", 0, true);
            if (n == -1) break;  // Nil: no such key
            if (rbuf_.size() < size_t(n) + 2) rbuf_.resize(size_t(n) + 2);
            read_exact(rbuf_.data(), size_t(n) + 2);
            if (rbuf_[size_t(n)] != '\r' || rbuf_[size_t(n) + 1] != '\n') fail_socket("no reply", 0, true);
            v.type = Reply::Type::String, v.data = rbuf_.data(), v.len = size_t(n);
            break;
        }
        default:  // an array, RESP3 types, or garbage: not a reply to SET or GET
            fail_socket("no reply", 0, true);
    }
    f(v);
}

Reply Connection::next_reply() {
    void* raw = nullptr;
    if (broken() || redisGetReply(c_, &raw) != REDIS_OK || !raw) fail_io("no reply");
    ReplyPtr r(raw);
    return convert(static_cast<redisReply*>(raw));
}

void* Connection::next_raw_reply() {
    void* raw = nullptr;
    if (broken() || redisGetReply(c_, &raw) != REDIS_OK || !raw) fail_io("no reply");
    return raw;
}

Reply Connection::command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> len;
    for (const auto& a : args) argv.push_back(a.data()), len.push_back(a.size());
    append(argv, len);
    return next_reply();
}

Reply Connection::key_command(const std::string& key, const std::vector<std::string>& args) {
    return cluster_ ? cluster_->key_command(key, args) : command(args);
}

uint64_t Connection::max_bulk_len() {
    Reply r = command({"CONFIG", "GET", "proto-max-bulk-len"});
    if (r.type != Reply::Type::Array || r.elements.size() != 2) return kDefaultMaxBulk;
    try {
        uint64_t v = std::stoull(r.elements[1].str);
        return v > 0 ? v : kDefaultMaxBulk;
    } catch (const std::exception&) {
        return kDefaultMaxBulk;
    }
}

void Connection::set_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkFill& fill) {
    if (cluster_) return cluster_->set_chunks(key, bytes, chunk, fill);
    const uint64_t n = chunk_count(bytes, chunk), window = set_window(chunk);
    buf_.resize(size_t(std::min<uint64_t>(chunk, std::max<uint64_t>(bytes, 1))));
    std::string first_error;
    uint64_t sent = 0, got = 0;
    auto take = [&] {
        receive_direct([&](const ReplyView& r) {
            if (r.type == Reply::Type::Error && first_error.empty()) first_error.assign(r.data, r.len);
        });
        ++got;
    };
    for (; sent < n; ++sent) {
        if (sent - got >= window) take();
        const uint64_t off = sent * chunk;
        const size_t len = size_t(std::min<uint64_t>(chunk, bytes - off));
        if (len) fill(off, buf_.data(), len);
        send_set(chunk_key(key, sent), buf_.data(), len);  // written when it returns: buf_ is free again
    }
    while (got < n) take();
    if (!first_error.empty()) throw Error("redis " + endpoint_ + ": SET " + key + ": " + first_error);
}

uint64_t Connection::get_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkSink& sink,
                                const std::string& verb) {
    if (cluster_) return cluster_->get_chunks(key, bytes, chunk, sink, verb);
    const uint64_t n = chunk_count(bytes, chunk), window = get_window(chunk);
    std::string problem;
    bool missing = false;
    uint64_t found = 0;
    uint64_t sent = 0, got = 0;
    auto take = [&] {
        receive_direct([&](const ReplyView& r) {  // the bytes stay in the connection's buffer: no copy of a chunk
            if (r.type == Reply::Type::String) ++found;
            const uint64_t off = got * chunk;
            const uint64_t want = std::min<uint64_t>(chunk, bytes - off);
            if (r.type == Reply::Type::Error && (problem.empty() || missing)) {
                problem.assign(r.data, r.len);  // an error reply is thrown, also after a missing chunk
                missing = false;
            } else if (problem.empty()) {
                if (r.type != Reply::Type::String)
                    missing = true, problem = "chunk " + std::to_string(got) + " is missing";
                else if (uint64_t(r.len) != want)
                    problem = "chunk " + std::to_string(got) + " holds " + std::to_string(r.len) + " bytes, expected " +
                              std::to_string(want);
                else if (sink)
                    sink(off, r.data, r.len);
            }
        });
        ++got;
    };
    for (; sent < n; ++sent) {
        if (sent - got >= window) take();
        const std::string k = chunk_key(key, sent);
        append({verb.data(), k.data()}, {verb.size(), k.size()});
    }
    while (got < n) take();
    if (!problem.empty() && !missing) throw Error("redis " + endpoint_ + ": " + verb + " " + key + ": " + problem);
    return found;
}

long long Connection::del_chunks(const std::string& key, uint64_t bytes, uint64_t chunk) {
    if (cluster_) return cluster_->del_chunks(key, bytes, chunk);
    std::vector<std::string> args{"DEL"};
    for (uint64_t i = 0, n = chunk_count(bytes, chunk); i < n; ++i) args.push_back(chunk_key(key, i));
    Reply r = command(args);
    if (r.type == Reply::Type::Error) throw Error("redis " + endpoint_ + ": DEL " + key + ": " + r.str);
    return r.integer;
}

}  // namespace kvio::redis
