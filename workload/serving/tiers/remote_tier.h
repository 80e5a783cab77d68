// The remote KV tier (docs/simulate.md, "Remote tier"): entries on a Redis or Valkey server shared by every client of a
// run, as LMCache's remote backend keeps them. An entry of B bytes is chunk_count(B, chunk) string keys
// "<run id>:<entry key>:<chunk>", SET pipelined through a write connection and GET through a read connection per
// worker thread (redis/client.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

/// How the remote tier is built (SimConfig's remote_tier, remote_run_id).
struct RemoteOptions {
    std::string url;       ///< redis://[user:pass@]HOST:PORT[/DB]
    std::string run_id;    ///< key prefix: the clients of one run share it, and so the entries
    int client = 0;        ///< this client's index (--num-clients index or MPI rank): its private keys' namespace
    int clients = 1;       ///< the run's clients (--num-clients or MPI ranks): they share the server's memory
    double timeout_s = 5;  ///< connect and per-reply wait, s
    /// --remote-write-mode back: a write completes once queued (WriteBackQueue, one per worker thread, drained by
    /// its own thread and write connection); false = write-through: once the server acknowledged every chunk.
    bool write_back = false;
    size_t writeback_queue = 8;  ///< --remote-writeback-queue: writes queued per connection at most
    /// --remote-connections split: a worker thread's SETs on a write connection, its GETs, GETEXs and DELs on a
    /// read connection; false = one connection per thread carries all (under write-back the SETs are the writer
    /// thread's, on its own connection, either way).
    bool split_connections = false;
    /// Connections the run may open beside the control connection (planned_remote_connections): the server memory
    /// of each (measured at connect, RemoteTier::connection_bytes) is reserved out of the tier's limit.
    size_t planned_connections = 0;
};

/// True for the entries every client of a run shares on the server (docs/simulate.md, "Remote tier"): the
/// system-prompt prefixes ("kv_system_<hash>", the same key and size in every client) and, with
/// --remote-handoff-probability, the conversation turns ("hconv_c<client>_...": ids unique across the clients).
/// Every other entry is the client's own, under "<run id>:c<client>:".
bool remote_shared_key(const std::string& key);

/// Bytes of a chunk: 4 MiB − 4 KiB, so a chunk, the server's string header and the CRLF it reads with it fit
/// jemalloc's 4 MiB size class (docs/simulate.md, "Remote tier"); smaller when the server's proto-max-bulk-len is.
inline constexpr uint64_t kRemoteChunkBytes = (4u << 20) - 4096;

/// Bytes the server's memory grows by for an entry of `bytes` in `chunk`-byte chunks: each chunk's value rounded up
/// to jemalloc's size classes (4 per doubling) plus kRemoteKeyOverhead for its key, object and hash-table slot.
uint64_t remote_footprint(uint64_t bytes, uint64_t chunk);
/// Per chunk key: the dict entry, the string object, the key's own string and a hash-table slot, rounded up.
inline constexpr uint64_t kRemoteKeyOverhead = 256;

class RemoteTier : public TierBackend {
public:
    /// Bytes an entry of `bytes` takes on the server (remote_footprint with this server's chunk size).
    virtual uint64_t footprint(uint64_t bytes) const = 0;
    /// The limit when --remote-capacity-gb is 0: this client's share of the server's maxmemory less what it used at
    /// start (divided by RemoteOptions::clients: every client of the run writes to the same server), or kUnlimited
    /// for a server without maxmemory.
    virtual uint64_t auto_capacity() const = 0;
    /// Bytes the server could still take at start (maxmemory less used_memory), or kUnlimited without maxmemory.
    virtual uint64_t server_free() const = 0;
    /// Server memory one idle connection of this tier takes (the client structure with its query and reply buffers:
    /// `CLIENT INFO` tot-mem, else the growth of used_memory when a probe connection opened), bytes.
    virtual uint64_t connection_bytes() const = 0;
    /// Bytes of the limit set aside for the planned connections: connection_bytes × planned_connections, plus, for
    /// each planned connection that sends SETs, the query buffer it keeps after a chunk's SET (one chunk in
    /// jemalloc's size class).
    virtual uint64_t connection_reserve() const = 0;
    /// {url, run_id, chunk_bytes, connections (= connections_write + connections_read), commands: {set, get, del},
    /// chunk_get_hits, bytes_sent, bytes_received, errors, server: {used_memory_start, used_memory_now, maxmemory}}
    /// (counts, bytes).
    virtual nlohmann::ordered_json stats_json() = 0;
    /// Deletes every entry this tier wrote and still holds (the end of a run). Errors are ignored.
    virtual void clear() = 0;
    /// A read of shared entry `key` of `bytes` that this client's tiers do not hold: another client may have
    /// written it. GETEX of its chunks (counted apart from GET in the server's commandstats, so a test can check
    /// the count exactly); nullopt when a chunk is absent (never written, or deleted meanwhile). Throws on errors.
    virtual std::optional<OpTiming> read_foreign(const std::string& key, uint64_t bytes) = 0;
    /// Why the tier should take no more writes, "" while it is up: the server could not be reached again after a
    /// fault (`gone`: its entries are lost with it), or it refused a write for memory (OOM: its entries still read).
    struct Down {
        std::string reason;
        bool gone = false;
    };
    virtual Down down() const = 0;
    /// The end of a run (write-back): waits until every queued write is written, at most `timeout_s` seconds in all,
    /// then stops the writers; writes still queued are lost (counted). No-op in write-through mode.
    virtual void finish_writes(double timeout_s) = 0;
    /// Conversation handoff (docs/simulate.md, "Remote tier"): appends `msg` to client `to`'s list on the server
    /// (RPUSH "<run id>:handoff:<to>", over a cluster at the shard owning that key). Throws kvio::Error on errors.
    virtual void handoff_send(int to, const std::string& msg) = 0;
    /// The oldest message handed to this client (LPOP of its list); nullopt when there is none. Throws on errors.
    virtual std::optional<std::string> handoff_take() = 0;
};

/// The longest the end of a run waits for write-back queues to drain, s (docs/simulate.md, "Remote tier").
inline constexpr double kWriteBackDrainS = 30;

/// A run id for --remote-run-id's default: "kvio-<host>-<pid>-<unix seconds>".
std::string make_remote_run_id();

/// Connects once (throws kvio::Error "--remote-tier URL: ..." in one line when the URL is bad or the server cannot
/// be reached, refuses the credentials or the database) and reads the server's chunk limit and memory.
std::unique_ptr<RemoteTier> make_remote_tier(const RemoteOptions& o);

}  // namespace kvio::serving
