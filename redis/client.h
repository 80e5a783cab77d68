// A small synchronous Redis/Valkey client over hiredis (docs/simulate.md, "Remote tier"): one connection, used by one
// thread at a time (the remote tier keeps one per worker thread), and the chunked, pipelined SET/GET/DEL of values
// larger than one bulk string may be.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/url.h"

struct redisContext;

namespace kvio::redis {

class Cluster;

/// One reply, copied out of hiredis' reply tree.
struct Reply {
    enum class Type { Nil, Status, Error, Integer, String, Array } type = Type::Nil;
    std::string str;  ///< Status, Error and String text
    long long integer = 0;
    std::vector<Reply> elements;  ///< Array
};

/// Writes value bytes [off, off + len) into `dst` (the data of a chunked SET).
using ChunkFill = std::function<void(uint64_t off, char* dst, size_t len)>;
/// Receives value bytes [off, off + len) of a chunked GET (may be empty: the bytes are dropped).
using ChunkSink = std::function<void(uint64_t off, const char* src, size_t len)>;

/// A reply that is not an array, seen in place: `data`/`len` (Status, Error, String) stay valid only during the
/// callback that receives it.
struct ReplyView {
    Reply::Type type = Reply::Type::Nil;
    const char* data = nullptr;
    size_t len = 0;
    long long integer = 0;
};

/// Whether a Connection routes its chunked commands over a Redis Cluster (redis/cluster.h).
enum class Routing {
    Detect,  ///< ask the server (INFO cluster: cluster_enabled:1) and route over the cluster when it is one
    Single,  ///< this server only (a cluster node's own connection)
};

/// Redis' own default proto-max-bulk-len (512 MiB): the bulk limit assumed when CONFIG GET is refused.
inline constexpr uint64_t kDefaultMaxBulk = 512ull << 20;
/// Chunked commands a connection keeps in flight (pipelined): the next chunk is sent while the server works on
/// the ones before it.
inline constexpr size_t kPipelineWindow = 4;
/// Redis' big-argument size (its PROTO_MBULK_BIG_ARG, 32 KiB): a SET value at least this long becomes the stored
/// value without a copy only when the server's query buffer holds nothing past it (docs/performance.md, "Remote
/// tier: where the time goes").
inline constexpr uint64_t kServerBigArgBytes = 32u << 10;
/// SETs of `chunk`-byte values in flight on one connection: 1 from kServerBigArgBytes on (the next SET pipelined
/// behind a big value made redis-server 7.0 copy that value: 12 % of its CPU in a 2-connection run), else
/// kPipelineWindow.
size_t set_window(uint64_t chunk);
/// Reply bytes of pipelined GETs a connection lets the server hold at most (one chunk of simulate's remote tier): a
/// server builds the replies of every GET it has read before it writes them, and replies of megabytes then land in
/// fresh buffers it page-faults in (docs/performance.md, "Remote tier: where the time goes": redis-server 7.0 spent
/// 5.1 ms of CPU per 4 MiB GET pipelined 4 deep, 0.74 ms one at a time). SETs: set_window().
inline constexpr uint64_t kGetPipelineBytes = 4u << 20;
/// GETs of `chunk`-byte values in flight on one connection: kGetPipelineBytes / chunk, at least 1, at most
/// kPipelineWindow (4 MiB − 4 KiB chunks: 1; 1 MiB: 4).
size_t get_window(uint64_t chunk);

/// The key of chunk `i` of value `key`: "KEY:I".
std::string chunk_key(const std::string& key, uint64_t i);
/// Chunks of a value of `bytes` bytes in `chunk`-byte pieces (an empty value is one empty chunk).
uint64_t chunk_count(uint64_t bytes, uint64_t chunk);
/// Whether an error text of this library is a timeout: no reply (or no connect) within the connection's timeout
/// (EAGAIN from a socket with SO_RCVTIMEO/SO_SNDTIMEO: "Resource temporarily unavailable"; hiredis's connect timeout).
bool is_timeout(const std::string& error);

/// One connection: connect, AUTH, SELECT. Throws kvio::Error "redis HOST:PORT: WHAT" when the server cannot be
/// reached within `timeout_s` or refuses the credentials or database. Every later I/O waits at most `timeout_s`.
/// After an I/O error the connection is broken() and every command throws. With Routing::Detect and a server that
/// is a Redis Cluster node, the chunked commands go to the node owning each chunk key (redis/cluster.h,
/// docs/redis-cluster.md); command() still talks to this server only.
class Connection {
public:
    Connection(const Url& url, double timeout_s, Routing routing = Routing::Detect);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// HOST:PORT.
    const std::string& endpoint() const { return endpoint_; }
    bool broken() const;

    /// Sends one command and returns its reply (an Error reply is returned, not thrown). Throws on I/O errors.
    Reply command(const std::vector<std::string>& args);
    /// command() for a command on one key (`args` names `key`): over a Redis Cluster it goes to the node owning the
    /// key's slot (Cluster::key_command), else to this server.
    Reply key_command(const std::string& key, const std::vector<std::string>& args);
    /// CONFIG GET proto-max-bulk-len, or kDefaultMaxBulk when the server refuses CONFIG (a managed service).
    uint64_t max_bulk_len();

    /// SET of chunk keys chunk_key(key, 0..n-1), chunk i holding bytes [i × chunk, ...) of a `bytes`-byte value
    /// made by `fill`, set_window(chunk) in flight. Throws kvio::Error on an error reply (the first one) or I/O error.
    void set_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkFill& fill);
    /// GET of the same chunks, pipelined get_window(chunk) deep: returns how many were there (chunk_count(bytes, chunk)
    /// = the whole value; fewer when some were missing: the sink saw the chunks before the first missing one). Throws
    /// on an error reply, a chunk not of its size, or an I/O error. `verb` = the read command: "GET", or "GETEX" (the
    /// same read, counted apart in the server's INFO commandstats).
    uint64_t get_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkSink& sink,
                        const std::string& verb = "GET");
    /// DEL of every chunk key in one command (one per chunk key over a cluster); returns the keys deleted.
    long long del_chunks(const std::string& key, uint64_t bytes, uint64_t chunk);

    /// The cluster this connection routes over, or nullptr for a single server.
    const Cluster* cluster() const { return cluster_.get(); }

    /// Pipelining: queues one command (hiredis copies the arguments), sent at the next flush() or receive().
    void append(const std::vector<const char*>& argv, const std::vector<size_t>& len);
    /// Writes every queued command to the socket. Throws on I/O errors.
    void flush();
    /// Receives the next reply and hands it to `f`; an Array arrives as Type::Array without its elements.
    void receive(const std::function<void(const ReplyView&)>& f);

    /// SET key value written straight to the socket (the RESP header, the value and CRLF in one writev) after any
    /// queued command: the value is not copied (hiredis' output buffer copies it twice and moves the unsent rest
    /// after every partial write: docs/performance.md, "Remote tier"). Its reply: receive_direct(). Throws on I/O
    /// errors.
    void send_set(const std::string& key, const char* value, size_t len);
    /// The next reply, read straight from the socket: a bulk string lands in a buffer this connection keeps (no copy
    /// in hiredis' reader, whose reads are 16 KiB), header lines are peeked so nothing past the reply is consumed.
    /// For replies that are not arrays (an array is a protocol error); when hiredis' own reader still holds bytes,
    /// receive() is used. Queued commands are flushed first. Throws on I/O and protocol errors.
    void receive_direct(const std::function<void(const ReplyView&)>& f);

private:
    [[noreturn]] void fail_io(const std::string& what);
    /// Marks the connection broken (hiredis' err/errstr: `err` an errno, 0 = closed by the server) and throws.
    [[noreturn]] void fail_socket(const std::string& what, int err, bool protocol = false);
    void read_exact(char* dst, size_t n);
    std::string read_line();
    Reply next_reply();
    void* next_raw_reply();  ///< a redisReply* the caller frees

    redisContext* c_ = nullptr;
    std::string endpoint_;
    std::vector<char> buf_;   // one chunk of a SET being formatted
    std::vector<char> rbuf_;  // one bulk reply of receive_direct(), with its CRLF
    std::unique_ptr<Cluster> cluster_;
};

}  // namespace kvio::redis
