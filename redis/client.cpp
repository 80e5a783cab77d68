// The hiredis connection and chunked SET/GET/DEL (client.h).
#include "redis/client.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
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
    const uint64_t n = chunk_count(bytes, chunk);
    buf_.resize(size_t(std::min<uint64_t>(chunk, std::max<uint64_t>(bytes, 1))));
    std::string first_error;
    uint64_t sent = 0, got = 0;
    auto take = [&] {
        Reply r = next_reply();
        ++got;
        if (r.type == Reply::Type::Error && first_error.empty()) first_error = r.str;
    };
    for (; sent < n; ++sent) {
        if (sent - got >= kPipelineWindow) take();
        const uint64_t off = sent * chunk;
        const size_t len = size_t(std::min<uint64_t>(chunk, bytes - off));
        if (len) fill(off, buf_.data(), len);
        const std::string k = chunk_key(key, sent);
        // hiredis copies the arguments into its output buffer: buf_ is free again when append returns.
        append({"SET", k.data(), buf_.data()}, {3, k.size(), len});
    }
    while (got < n) take();
    if (!first_error.empty()) throw Error("redis " + endpoint_ + ": SET " + key + ": " + first_error);
}

uint64_t Connection::get_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkSink& sink,
                                const std::string& verb) {
    if (cluster_) return cluster_->get_chunks(key, bytes, chunk, sink, verb);
    const uint64_t n = chunk_count(bytes, chunk);
    std::string problem;
    bool missing = false;
    uint64_t found = 0;
    uint64_t sent = 0, got = 0;
    auto take = [&] {
        ReplyPtr raw(next_raw_reply());  // the bytes stay in hiredis' reply: no copy of a chunk
        const redisReply* r = static_cast<const redisReply*>(raw.get());
        if (r->type == REDIS_REPLY_STRING) ++found;
        const uint64_t off = got * chunk;
        const uint64_t want = std::min<uint64_t>(chunk, bytes - off);
        if (r->type == REDIS_REPLY_ERROR && (problem.empty() || missing)) {
            problem.assign(r->str, r->len);  // an error reply is thrown, also after a missing chunk
            missing = false;
        } else if (problem.empty()) {
            if (r->type != REDIS_REPLY_STRING)
                missing = true, problem = "chunk " + std::to_string(got) + " is missing";
            else if (uint64_t(r->len) != want)
                problem = "chunk " + std::to_string(got) + " holds " + std::to_string(r->len) + " bytes, expected " +
                          std::to_string(want);
            else if (sink)
                sink(off, r->str, size_t(r->len));
        }
        ++got;
    };
    for (; sent < n; ++sent) {
        if (sent - got >= kPipelineWindow) take();
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
