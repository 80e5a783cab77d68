// Redis Cluster routing (cluster.h; the rules it relies on: docs/redis-cluster.md).
#include "redis/cluster.h"

#include <algorithm>
#include <deque>
#include <functional>

#include "common/error.h"

namespace kvio::redis {

uint16_t crc16(std::string_view bytes) {
    uint16_t crc = 0;
    for (unsigned char b : bytes) {
        crc ^= uint16_t(b) << 8;
        for (int i = 0; i < 8; ++i) crc = (crc & 0x8000) ? uint16_t((crc << 1) ^ 0x1021) : uint16_t(crc << 1);
    }
    return crc;
}

int key_slot(std::string_view key) {
    const size_t open = key.find('{');
    if (open != std::string_view::npos) {
        const size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
    }
    return crc16(key) & (kClusterSlots - 1);
}

Redirect parse_redirect(std::string_view e) {
    Redirect r;
    Redirect::Kind kind;
    if (e.substr(0, 6) == "MOVED ")
        kind = Redirect::Kind::Moved, e.remove_prefix(6);
    else if (e.substr(0, 4) == "ASK ")
        kind = Redirect::Kind::Ask, e.remove_prefix(4);
    else
        return r;
    const size_t sp = e.find(' ');
    if (sp == 0 || sp == std::string_view::npos || sp > 5) return r;
    int slot = 0;
    for (char c : e.substr(0, sp)) {
        if (c < '0' || c > '9') return r;
        slot = slot * 10 + (c - '0');
    }
    const std::string_view addr = e.substr(sp + 1);
    const size_t colon = addr.rfind(':');  // an IPv6 host holds ':' too: the port follows the last one
    if (slot >= kClusterSlots || colon == std::string_view::npos || colon + 1 == addr.size() ||
        addr.size() - colon - 1 > 5)
        return r;
    int port = 0;
    for (char c : addr.substr(colon + 1)) {
        if (c < '0' || c > '9') return r;
        port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) return r;
    r.kind = kind, r.slot = slot, r.port = port;
    r.host = std::string(addr.substr(0, colon));
    if (r.host.size() >= 2 && r.host.front() == '[' && r.host.back() == ']')
        r.host = r.host.substr(1, r.host.size() - 2);
    return r;
}

std::vector<SlotRange> parse_cluster_slots(const Reply& r, const std::string& seed_host) {
    auto bad = [](const std::string& what) -> Error { return Error("CLUSTER SLOTS reply: " + what); };
    if (r.type == Reply::Type::Error) throw bad(r.str);
    if (r.type != Reply::Type::Array) throw bad("not an array");
    std::vector<SlotRange> out;
    for (const Reply& row : r.elements) {
        if (row.type != Reply::Type::Array || row.elements.size() < 3 || row.elements[0].type != Reply::Type::Integer ||
            row.elements[1].type != Reply::Type::Integer)
            throw bad("a row is not [first, last, [host, port, ...], ...]");
        const Reply& master = row.elements[2];
        if (master.type != Reply::Type::Array || master.elements.size() < 2 ||
            master.elements[0].type != Reply::Type::String || master.elements[1].type != Reply::Type::Integer)
            throw bad("a master is not [host, port, ...]");
        SlotRange s;
        s.first = int(row.elements[0].integer), s.last = int(row.elements[1].integer);
        s.host = master.elements[0].str;
        s.port = int(master.elements[1].integer);
        if (s.host.empty() || s.host == "?") s.host = seed_host;  // "the node you asked" (docs/redis-cluster.md)
        if (s.first < 0 || s.last >= kClusterSlots || s.first > s.last || s.port < 1 || s.port > 65535)
            throw bad("slots " + std::to_string(s.first) + "-" + std::to_string(s.last) + " at port " +
                      std::to_string(s.port) + " out of range");
        out.push_back(std::move(s));
    }
    return out;
}

namespace {

std::string endpoint_of(const std::string& host, int port) {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

/// One chunk command: its chunk index, the node it goes to next, and whether that node wants ASKING first.
struct Cluster::Op {
    uint64_t index = 0;
    std::string host;
    int port = 0;
    bool asking = false;
    int redirects = 0;
};

struct Cluster::Node {
    std::string host;
    int port = 0;
    std::unique_ptr<Connection> conn;
    std::deque<size_t> pending;                     ///< ops to send
    std::deque<std::pair<size_t, bool>> in_flight;  ///< (op, sent with ASKING)
};

Cluster::Cluster(Connection& seed, const Url& url, double timeout_s)
    : url_(url), timeout_s_(timeout_s), seed_host_(url.host), seed_port_(url.port) {
    try {
        load_map(seed);
    } catch (const Error& e) {
        throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": " + e.what());
    }
}

Cluster::~Cluster() = default;

void Cluster::load_map(Connection& from) {
    std::vector<SlotRange> ranges = parse_cluster_slots(from.command({"CLUSTER", "SLOTS"}), seed_host_);
    std::array<bool, kClusterSlots> served{};
    for (const SlotRange& s : ranges)
        for (int i = s.first; i <= s.last; ++i) owner_[size_t(i)] = {s.host, s.port}, served[size_t(i)] = true;
    const auto gap = std::find(served.begin(), served.end(), false);
    if (gap != served.end())
        throw Error("slot " + std::to_string(gap - served.begin()) +
                    " is served by no node (cluster_state not ok: add the slots or fix the cluster)");
}

Cluster::Node& Cluster::node(const std::string& host, int port) {
    auto& n = nodes_[endpoint_of(host, port)];
    if (!n) n = std::make_unique<Node>(), n->host = host, n->port = port;
    if (!n->conn || n->conn->broken()) {
        Url u = url_;
        u.host = host, u.port = port, u.db = 0;
        n->conn.reset();
        n->conn = std::make_unique<Connection>(u, timeout_s_, Routing::Single);
    }
    return *n;
}

std::string Cluster::node_of_slot(int slot) const {
    const auto& o = owner_[size_t(slot) & (kClusterSlots - 1)];
    return endpoint_of(o.first, o.second);
}

size_t Cluster::nodes() const {
    std::vector<std::string> all;
    for (const auto& o : owner_) all.push_back(endpoint_of(o.first, o.second));
    std::sort(all.begin(), all.end());
    return size_t(std::unique(all.begin(), all.end()) - all.begin());
}

void Cluster::run(const std::string& key, uint64_t n, const SendFn& send, const ReplyFn& reply, const std::string& what,
                  size_t window) {
    std::vector<Op> ops(n);
    std::vector<Node*> active;
    auto enqueue = [&](size_t i) {
        Node& nd = node(ops[i].host, ops[i].port);
        if (std::find(active.begin(), active.end(), &nd) == active.end()) active.push_back(&nd);
        nd.pending.push_back(i);
    };
    std::string too_many;
    Node* moved_to = nullptr;
    try {
        for (size_t i = 0; i < n; ++i) {
            const auto& o = owner_[size_t(key_slot(chunk_key(key, i)))];
            ops[i].index = i, ops[i].host = o.first, ops[i].port = o.second;
            enqueue(i);
        }
        for (bool busy = true; busy;) {
            busy = false;
            for (size_t a = 0; a < active.size(); ++a) {  // fill every node's window, then let them all work
                Node& nd = *active[a];
                bool sent = false;
                while (!nd.pending.empty() && nd.in_flight.size() < window) {
                    const size_t i = nd.pending.front();
                    nd.pending.pop_front();
                    if (ops[i].asking) nd.conn->append({"ASKING"}, {6});
                    send(*nd.conn, ops[i].index);
                    nd.in_flight.emplace_back(i, ops[i].asking);
                    sent = true;
                }
                if (sent) nd.conn->flush();
            }
            for (size_t a = 0; a < active.size(); ++a) {
                Node& nd = *active[a];
                if (nd.in_flight.empty()) continue;
                busy = true;
                const auto [i, asked] = nd.in_flight.front();
                nd.in_flight.pop_front();
                if (asked) nd.conn->receive([](const ReplyView&) {});  // ASKING's +OK
                Redirect rd;
                nd.conn->receive([&](const ReplyView& v) {
                    if (v.type == Reply::Type::Error) rd = parse_redirect(std::string_view(v.data, v.len));
                    if (rd.kind == Redirect::Kind::None) reply(ops[i].index, v);
                });
                if (rd.kind == Redirect::Kind::None) continue;
                Op& op = ops[i];
                if (rd.host.empty()) rd.host = nd.host;
                if (++op.redirects > kMaxRedirections) {
                    if (too_many.empty())
                        too_many = what + " " + chunk_key(key, op.index) + ": still redirected after " +
                                   std::to_string(kMaxRedirections) + " redirections (last to " +
                                   endpoint_of(rd.host, rd.port) + ")";
                    continue;
                }
                if (rd.kind == Redirect::Kind::Moved) {
                    stats_.moved += 1;
                    owner_[size_t(rd.slot)] = {rd.host, rd.port};
                    op.asking = false;
                } else {
                    stats_.ask += 1;
                    op.asking = true;  // this once: the slot's owner stays the migrating node until a MOVED
                }
                op.host = rd.host, op.port = rd.port;
                enqueue(i);
                if (rd.kind == Redirect::Kind::Moved) moved_to = &node(rd.host, rd.port);
            }
            for (Node* nd : active) busy = busy || !nd->pending.empty();
        }
    } catch (...) {
        // Replies still owed on a connection would be read as the next command's: drop those connections.
        for (auto& [name, nd] : nodes_) {
            if (!nd->in_flight.empty()) nd->conn.reset();
            nd->pending.clear(), nd->in_flight.clear();
        }
        throw;
    }
    if (moved_to) {
        // A MOVED means slots changed owners, usually more than one: read the whole map again (an error leaves the
        // map as the redirections updated it).
        try {
            load_map(*moved_to->conn);
            stats_.map_reloads += 1;
        } catch (const std::exception&) {}
    }
    if (!too_many.empty()) throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": " + too_many);
}

Reply Cluster::key_command(const std::string& key, const std::vector<std::string>& args) {
    const int slot = key_slot(key);
    std::pair<std::string, int> at = owner_[size_t(slot)];
    bool asking = false, moved = false;
    for (int redirects = 0;; ++redirects) {
        Node& nd = node(at.first, at.second);
        if (asking && nd.conn->command({"ASKING"}).type == Reply::Type::Error)
            throw Error("redis cluster " + endpoint_of(at.first, at.second) + ": ASKING refused");
        Reply r = nd.conn->command(args);
        const Redirect rd = r.type == Reply::Type::Error ? parse_redirect(r.str) : Redirect{};
        if (rd.kind == Redirect::Kind::None) {
            if (moved) {  // as run(): slots changed owners, usually more than one
                try {
                    load_map(*nd.conn);
                    stats_.map_reloads += 1;
                } catch (const std::exception&) {}
            }
            return r;
        }
        const std::string host = rd.host.empty() ? at.first : rd.host;
        if (redirects >= kMaxRedirections)
            throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": " + args.at(0) + " " + key +
                        ": still redirected after " + std::to_string(kMaxRedirections) + " redirections (last to " +
                        endpoint_of(host, rd.port) + ")");
        if (rd.kind == Redirect::Kind::Moved) {
            stats_.moved += 1;
            owner_[size_t(rd.slot)] = {host, rd.port};
            moved = true;
        } else {
            stats_.ask += 1;
        }
        asking = rd.kind == Redirect::Kind::Ask;
        at = {host, rd.port};
    }
}

void Cluster::set_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkFill& fill) {
    const uint64_t n = chunk_count(bytes, chunk);
    buf_.resize(size_t(std::min<uint64_t>(chunk, std::max<uint64_t>(bytes, 1))));
    std::string first_error;
    run(
        key, n,
        [&](Connection& c, uint64_t i) {
            const uint64_t off = i * chunk;
            const size_t len = size_t(std::min<uint64_t>(chunk, bytes - off));
            if (len) fill(off, buf_.data(), len);  // again when the chunk is sent again after a redirection
            const std::string k = chunk_key(key, i);
            c.append({"SET", k.data(), buf_.data()}, {3, k.size(), len});  // hiredis copies: buf_ is free again
        },
        [&](uint64_t, const ReplyView& v) {
            if (v.type == Reply::Type::Error && first_error.empty()) first_error.assign(v.data, v.len);
        },
        "SET", set_window(chunk));
    if (!first_error.empty())
        throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": SET " + key + ": " + first_error);
}

uint64_t Cluster::get_chunks(const std::string& key, uint64_t bytes, uint64_t chunk, const ChunkSink& sink,
                             const std::string& verb) {
    const uint64_t n = chunk_count(bytes, chunk);
    std::string problem;
    uint64_t found = 0;
    run(
        key, n,
        [&](Connection& c, uint64_t i) {
            const std::string k = chunk_key(key, i);
            c.append({verb.data(), k.data()}, {verb.size(), k.size()});
        },
        [&](uint64_t i, const ReplyView& v) {
            const uint64_t off = i * chunk, want = std::min<uint64_t>(chunk, bytes - off);
            if (v.type == Reply::Type::String) ++found;
            if (!problem.empty()) return;
            if (v.type == Reply::Type::Error)
                problem.assign(v.data, v.len);
            else if (v.type != Reply::Type::String)
                return;  // missing: counted by what `found` lacks
            else if (uint64_t(v.len) != want)
                problem = "chunk " + std::to_string(i) + " holds " + std::to_string(v.len) + " bytes, expected " +
                          std::to_string(want);
            else if (sink)
                sink(off, v.data, v.len);
        },
        verb, get_window(chunk));
    if (!problem.empty())
        throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": " + verb + " " + key + ": " + problem);
    return found;
}

long long Cluster::del_chunks(const std::string& key, uint64_t bytes, uint64_t chunk) {
    // One DEL per chunk key: a DEL of several keys is refused (CROSSSLOT) unless they share a slot.
    long long deleted = 0;
    std::string first_error;
    run(
        key, chunk_count(bytes, chunk),
        [&](Connection& c, uint64_t i) {
            const std::string k = chunk_key(key, i);
            c.append({"DEL", k.data()}, {3, k.size()});
        },
        [&](uint64_t, const ReplyView& v) {
            if (v.type == Reply::Type::Integer) deleted += v.integer;
            if (v.type == Reply::Type::Error && first_error.empty()) first_error.assign(v.data, v.len);
        },
        "DEL");
    if (!first_error.empty())
        throw Error("redis cluster " + endpoint_of(seed_host_, seed_port_) + ": DEL " + key + ": " + first_error);
    return deleted;
}

}  // namespace kvio::redis
