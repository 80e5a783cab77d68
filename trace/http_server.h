// A minimal HTTP/1.1 server for `kvio trace --listen`: GET and HEAD, one request per connection (Connection: close),
// non-blocking and driven by the tracer's own poll loop (no thread), so a handler reads the BPF maps between two
// ring-buffer drains. Our own rather than Debian's cpp-httplib: libcpp-httplib-dev (0.11) ships only a shared
// library built against OpenSSL and brotli, and kvio-static (the NVMe guest's binary) links statically.
#pragma once
#include <poll.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvio::trace {

struct HttpRequest {
    std::string method;  ///< "GET" or "HEAD" (others are answered 405 before the handler)
    std::string path;    ///< the target without its query string
    std::string accept;  ///< the Accept header, "" when absent
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

/// What one client may hold (docs/formats.md, "--listen"): the server is reachable by anything that can connect, so
/// no client can hold memory or a slot for long. Defaults are for a Prometheus scraper (one request a scrape
/// interval, headers well under 1 KiB, answered in milliseconds); tests shorten the times.
struct HttpLimits {
    size_t max_request_bytes = 16 << 10;  ///< request line + headers; more is answered 431
    size_t max_connections = 64;          ///< open at once; more are closed at accept (counted in refused)
    uint64_t idle_ns = 10'000'000'000;    ///< a connection that neither sends nor reads for 10 s is closed
    uint64_t request_ns = 5'000'000'000;  ///< the whole request must arrive within 5 s of the accept (a client
                                          ///< sending a byte a second is closed, not kept alive by each byte)
    uint64_t linger_ns = 1'000'000'000;   ///< after the response, the client has 1 s to close its side
};

/// What the server did since it started (each count once per connection).
struct HttpStats {
    uint64_t accepted = 0;   ///< connections taken into a slot
    uint64_t refused = 0;    ///< closed at accept: max_connections were open
    uint64_t answered = 0;   ///< responses queued (any status)
    uint64_t too_large = 0;  ///< answered 431: the headers exceeded max_request_bytes
    uint64_t timed_out = 0;  ///< closed by idle_ns or request_ns before a response was sent
};

class HttpServer {
public:
    using Handler = std::function<HttpResponse(const HttpRequest&)>;
    /// Binds and listens on `listen`: "ADDR:PORT" with ADDR an IPv4 address, a host name, or [IPv6]; ":PORT" or a
    /// bare "PORT" listens on loopback (127.0.0.1) only: every address takes "0.0.0.0:PORT" or "[::]:PORT". PORT 0
    /// takes a free port (see bound()). Throws kvio::Error naming the address.
    HttpServer(const std::string& listen, Handler handler, HttpLimits limits = {});
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    /// The bound address, "ADDR:PORT" with the real port.
    const std::string& bound() const { return bound_; }
    /// Appends what to wait for: the listening socket, each connection for input or for output.
    void add_poll_fds(std::vector<pollfd>& fds) const;
    /// Accepts, reads, answers and closes what is ready; never blocks. `now_ns` (CLOCK_MONOTONIC) ends connections
    /// past the limits' idle_ns or request_ns.
    void service(uint64_t now_ns);
    /// Connections open now (at most limits.max_connections).
    size_t open_connections() const { return conns_.size(); }
    const HttpStats& stats() const { return stats_; }
    const HttpLimits& limits() const { return limits_; }

private:
    struct Conn {
        int fd = -1;
        std::string in, out;
        size_t sent = 0;
        bool answered = false;
        bool shut = false;  ///< response sent and our side shut down: waiting for the client to close
        uint64_t last_ns = 0;
        uint64_t accepted_ns = 0;
    };
    void accept_all(uint64_t now_ns);
    /// Reads what is there; answers once the headers are complete. False: close the connection.
    bool read_from(Conn& c, uint64_t now_ns);
    /// Sends what is pending. False: done or failed, close.
    bool write_to(Conn& c, uint64_t now_ns);
    void answer(Conn& c);

    int listen_fd_ = -1;
    std::string bound_;
    Handler handler_;
    HttpLimits limits_;
    HttpStats stats_;
    std::vector<Conn> conns_;
};

/// Parses a complete header block (request line, then header lines; CRLF or LF; without the blank line) into
/// method, path without its query and the Accept header. False: malformed (no request line, fewer than three
/// words, a version other than HTTP/1.x). Never throws; any bytes are accepted (the fuzz target's contract).
bool parse_http_request(std::string_view head, HttpRequest& req);

/// Splits "ADDR:PORT" / "[V6]:PORT" / ":PORT" / "PORT" into host and port, host "127.0.0.1" when none is given
/// (loopback unless an address is asked for); throws kvio::Error on another shape.
std::pair<std::string, std::string> split_host_port(const std::string& listen);

}  // namespace kvio::trace
