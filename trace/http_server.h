// A minimal HTTP/1.1 server for `kvio trace --listen`: GET and HEAD, one request per connection (Connection: close),
// non-blocking and driven by the tracer's own poll loop (no thread), so a handler reads the BPF maps between two
// ring-buffer drains. Our own rather than Debian's cpp-httplib: libcpp-httplib-dev (0.11) ships only a shared
// library built against OpenSSL and brotli, and kvio-static (the NVMe guest's binary) links statically.
#pragma once
#include <poll.h>

#include <cstdint>
#include <functional>
#include <string>
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

class HttpServer {
public:
    using Handler = std::function<HttpResponse(const HttpRequest&)>;
    /// Binds and listens on `listen`: "ADDR:PORT" with ADDR an IPv4 address, a host name, or [IPv6]; ":PORT" listens
    /// on every address; PORT 0 takes a free port (see bound()). Throws kvio::Error naming the address.
    HttpServer(const std::string& listen, Handler handler);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    /// The bound address, "ADDR:PORT" with the real port.
    const std::string& bound() const { return bound_; }
    /// Appends what to wait for: the listening socket, each connection for input or for output.
    void add_poll_fds(std::vector<pollfd>& fds) const;
    /// Accepts, reads, answers and closes what is ready; never blocks. `now_ns` (CLOCK_MONOTONIC) ends connections
    /// idle longer than kIdleNs.
    void service(uint64_t now_ns);

    static constexpr size_t kMaxRequestBytes = 16 << 10;  ///< request line + headers; more is answered 431
    static constexpr size_t kMaxConnections = 64;         ///< more are closed at once
    static constexpr uint64_t kIdleNs =
        10'000'000'000;  ///< a connection that neither sends nor reads for 10 s is closed
    static constexpr uint64_t kLingerNs = 1'000'000'000;  ///< after the response, the client has 1 s to close its side

private:
    struct Conn {
        int fd = -1;
        std::string in, out;
        size_t sent = 0;
        bool answered = false;
        bool shut = false;  ///< response sent and our side shut down: waiting for the client to close
        uint64_t last_ns = 0;
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
    std::vector<Conn> conns_;
};

/// Splits "ADDR:PORT" / "[V6]:PORT" / ":PORT" into host ("" for any) and port; throws kvio::Error on another shape.
std::pair<std::string, std::string> split_host_port(const std::string& listen);

}  // namespace kvio::trace
