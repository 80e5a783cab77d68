// Redis Cluster routing (docs/redis-cluster.md): the slot of a key, the slot map read from one seed node, and the
// chunked SET/GET/DEL of client.h sent to the node that owns each chunk key, pipelined per node, following MOVED and
// ASK redirections. Debian ships no C/C++ cluster client, so this is ours; one Cluster is used by one thread.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client.h"

namespace kvio::redis {

/// Slots of a Redis Cluster (the cluster specification's fixed 16384).
inline constexpr int kClusterSlots = 16384;
/// Redirections one command may follow before the operation fails (the specification leaves the bound to clients;
/// 5 covers a slot moved twice while the map is refreshed).
inline constexpr int kMaxRedirections = 5;

/// CRC16-CCITT in its XMODEM form (polynomial 0x1021, initial value 0, no reflection, no final XOR):
/// crc16("123456789") == 0x31C3.
uint16_t crc16(std::string_view bytes);
/// The slot of `key`, 0..16383: crc16 of the hash tag, or of the whole key when it has none, modulo 16384. The hash
/// tag is what lies between the first '{' and the first '}' after it, when that is not empty (docs/redis-cluster.md).
int key_slot(std::string_view key);

/// A redirection error reply: "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>".
struct Redirect {
    enum class Kind { None, Moved, Ask } kind = Kind::None;
    int slot = -1;
    std::string host;  ///< as the server wrote it (an IPv6 address without brackets); "" = the node we asked
    int port = 0;
};
/// Parses an error reply's text; Kind::None for any other error or a malformed redirection.
Redirect parse_redirect(std::string_view error);

/// One row of CLUSTER SLOTS: slots [first, last] served by the master at host:port.
struct SlotRange {
    int first = 0, last = 0;
    std::string host;
    int port = 0;
};
/// The masters' slot ranges of a CLUSTER SLOTS reply ([[first, last, [host, port, id, ...], replicas...], ...]).
/// An empty or "?" host means "the node you asked": `seed_host` is used. Throws kvio::Error on another shape.
std::vector<SlotRange> parse_cluster_slots(const Reply& r, const std::string& seed_host);

/// Redirections followed and map reloads (counts since the Cluster was made).
struct ClusterStats {
    uint64_t moved = 0;        ///< MOVED replies followed (the slot's owner updated, the command sent again)
    uint64_t ask = 0;          ///< ASK replies followed (ASKING + the command at the importing node, once)
    uint64_t map_reloads = 0;  ///< CLUSTER SLOTS read again (after an operation that met a MOVED)
};

/// The nodes of one cluster, each through its own Connection (made on first use, again after an I/O error broke it).
class Cluster {
public:
    /// Reads the slot map from `seed` (CLUSTER SLOTS). `url` gives the credentials for every node (the same ACL on
    /// every node, as the specification expects) and `timeout_s` their connect and reply timeout. Throws kvio::Error
    /// "redis cluster HOST:PORT: WHAT" when the map cannot be read or leaves a slot unserved.
    Cluster(Connection& seed, const Url& url, double timeout_s);
    ~Cluster();
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    /// client.h's set_chunks/get_chunks/del_chunks: the same keys and replies, each chunk key sent to its slot's
    /// node; the nodes' pipelines (set_window(chunk) each for SETs, get_window(chunk) for GETs) run side by side.
    /// Throws kvio::Error on an error reply (the first), an I/O error, or a command still redirected after
    /// kMaxRedirections.
    void set_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkFill& fill);
    /// get_chunks returns the chunks found (a missing one is not an error; over several nodes the sink may also see
    /// chunks after a missing one, in reply order) and reads with `verb` ("GET" or "GETEX").
    uint64_t get_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkSink& sink,
                        const std::string& verb = "GET");
    long long del_chunks(const std::string& key, uint64_t bytes, uint64_t chunk);
    /// One command on one key (`args` names `key`; RPUSH, LPOP, DEL of a list) at the node owning the key's slot,
    /// following MOVED (the map read again afterwards) and ASK (ASKING first) as the chunked commands do. Returns the
    /// reply (an error reply other than a redirection is returned, not thrown); throws kvio::Error on an I/O error or a
    /// command still redirected after kMaxRedirections.
    Reply key_command(const std::string& key, const std::vector<std::string>& args);

    /// HOST:PORT of the node the map gives for `slot`.
    std::string node_of_slot(int slot) const;
    /// Masters in the map (distinct HOST:PORT).
    size_t nodes() const;
    const ClusterStats& stats() const { return stats_; }

private:
    struct Op;
    struct Node;
    using SendFn = std::function<void(Connection&, uint64_t chunk_index)>;
    using ReplyFn = std::function<void(uint64_t chunk_index, const ReplyView&)>;
    void load_map(Connection& from);
    Node& node(const std::string& host, int port);
    /// Sends chunk command 0..n-1 of `key` (`send` appends it) to the node owning its chunk key (ASKING first after
    /// an ASK), pipelined per node (`window` deep); every reply but a redirection goes to `reply`; a MOVED updates the
    /// slot's owner and an ASK the op's target, and the op is sent again (at most kMaxRedirections times).
    void run(const std::string& key, uint64_t n, const SendFn& send, const ReplyFn& reply, const std::string& what,
             size_t window = kPipelineWindow);

    Url url_;
    double timeout_s_;
    std::string seed_host_;
    int seed_port_;
    std::array<std::pair<std::string, int>, kClusterSlots> owner_;  ///< slot -> master HOST, PORT
    std::map<std::string, std::unique_ptr<Node>> nodes_;            ///< by HOST:PORT
    std::vector<char> buf_;
    ClusterStats stats_;
};

}  // namespace kvio::redis
