#include "trace/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/error.h"

namespace kvio::trace {

namespace {

const char* reason(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 431:
            return "Request Header Fields Too Large";
        default:
            return "Internal Server Error";
    }
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string address_string(const sockaddr_storage& ss) {
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (ss.ss_family == AF_INET) {
        auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
}

}  // namespace

bool parse_http_request(std::string_view head, HttpRequest& req) {
    req = {};
    size_t eol = head.find('\n');
    std::istringstream rl(trim(std::string(head.substr(0, eol))));
    std::string version, extra;
    if (!(rl >> req.method >> req.path >> version) || version.rfind("HTTP/1.", 0) != 0 || (rl >> extra)) return false;
    if (auto q = req.path.find('?'); q != std::string::npos) req.path.resize(q);
    while (eol != std::string_view::npos) {
        size_t start = eol + 1;
        eol = head.find('\n', start);
        std::string_view line =
            head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        if (lower(trim(std::string(line.substr(0, colon)))) == "accept")
            req.accept = trim(std::string(line.substr(colon + 1)));
    }
    return true;
}

std::pair<std::string, std::string> split_host_port(const std::string& listen) {
    auto bad = [&] {
        return Error("--listen " + listen + ": expected ADDR:PORT (127.0.0.1:9435, [::1]:9435 or :9435)");
    };
    std::string host, port;
    if (listen.find_first_not_of("0123456789") == std::string::npos) {
        port = listen;  // a bare PORT
    } else if (!listen.empty() && listen[0] == '[') {
        auto close = listen.find("]:");
        if (close == std::string::npos) throw bad();
        host = listen.substr(1, close - 1);
        port = listen.substr(close + 2);
    } else {
        auto colon = listen.rfind(':');
        if (colon == std::string::npos || listen.find(':') != colon) throw bad();
        host = listen.substr(0, colon);
        port = listen.substr(colon + 1);
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port) > 65535)
        throw bad();
    if (host.empty()) host = "127.0.0.1";  // loopback unless an address is given (docs/formats.md, "--listen")
    return {host, port};
}

HttpServer::HttpServer(const std::string& listen, Handler handler, HttpLimits limits)
    : handler_(std::move(handler)), limits_(limits) {
    auto [host, port] = split_host_port(listen);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
        throw Error("--listen " + listen + ": " + gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
            listen_fd_ = fd;
            break;
        }
        why = std::strerror(errno);
        close(fd);
    }
    freeaddrinfo(res);
    if (listen_fd_ < 0) throw Error("--listen " + listen + ": cannot listen: " + why);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    bound_ = address_string(ss);
}

HttpServer::~HttpServer() {
    for (auto& c : conns_) close(c.fd);
    if (listen_fd_ >= 0) close(listen_fd_);
}

void HttpServer::add_poll_fds(std::vector<pollfd>& fds) const {
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& c : conns_) fds.push_back({c.fd, short(c.answered && !c.shut ? POLLOUT : POLLIN), 0});
}

void HttpServer::accept_all(uint64_t now_ns) {
    // At most max_connections + 64 accepts a round: a client reconnecting in a loop cannot keep the tracer from
    // draining its ring buffer (the loop comes back within 100 ms).
    for (size_t i = 0; i < limits_.max_connections + 64; ++i) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;  // EAGAIN: none left; other errors (EMFILE, ECONNABORTED): try again on the next round
        if (conns_.size() >= limits_.max_connections) {
            close(fd);
            ++stats_.refused;
            continue;
        }
        ++stats_.accepted;
        Conn c;
        c.fd = fd;
        c.last_ns = c.accepted_ns = now_ns;
        conns_.push_back(std::move(c));
    }
}

void HttpServer::answer(Conn& c) {
    HttpResponse resp;
    HttpRequest req;
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) end = c.in.find("\n\n");
    if (!parse_http_request(std::string_view(c.in).substr(0, end), req)) {
        resp = {400, "text/plain; charset=utf-8", "malformed request\n"};
    } else if (req.method != "GET" && req.method != "HEAD") {
        resp = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    } else {
        try {
            resp = handler_(req);
        } catch (const std::exception& e) {
            resp = {500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
        }
    }
    std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason(resp.status) +
                       "\r\nContent-Type: " + resp.content_type +
                       "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                       (resp.status == 405 ? "\r\nAllow: GET, HEAD" : "") + "\r\nConnection: close\r\n\r\n";
    c.out = req.method == "HEAD" ? head : head + resp.body;
    c.answered = true;
    ++stats_.answered;
}

bool HttpServer::read_from(Conn& c, uint64_t now_ns) {
    char buf[4096];
    while (true) {
        ssize_t n = recv(c.fd, buf, sizeof buf, 0);
        if (n == 0) return false;  // the client went away before a whole request
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c.last_ns = now_ns;
        c.in.append(buf, size_t(n));
        size_t end = std::min(c.in.find("\r\n\r\n"), c.in.find("\n\n"));
        if (end != std::string::npos && end <= limits_.max_request_bytes) {
            answer(c);
            return true;
        }
        if (c.in.size() > limits_.max_request_bytes) {
            c.in.clear();
            c.in.shrink_to_fit();
            c.out = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            c.answered = true;
            ++stats_.answered;
            ++stats_.too_large;
            return true;
        }
    }
}

bool HttpServer::write_to(Conn& c, uint64_t now_ns) {
    char buf[4096];
    // Input after the request is read and dropped: closing a socket with unread input sends a reset, which can
    // discard the response before the client has read it.
    ssize_t n = 0;
    while ((n = recv(c.fd, buf, sizeof buf, 0)) > 0) {}
    if (c.shut)
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) &&
               now_ns - c.last_ns < limits_.linger_ns;
    while (c.sent < c.out.size()) {
        n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c.sent += size_t(n);
        c.last_ns = now_ns;
    }
    shutdown(c.fd, SHUT_WR);  // the response is complete; close once the client has closed its side (or linger_ns)
    c.shut = true;
    return true;
}

void HttpServer::service(uint64_t now_ns) {
    accept_all(now_ns);
    for (auto& c : conns_) {
        bool keep = c.answered ? true : read_from(c, now_ns);
        if (keep && c.answered) keep = write_to(c, now_ns);
        bool late =
            now_ns - c.last_ns > limits_.idle_ns || (!c.answered && now_ns - c.accepted_ns > limits_.request_ns);
        if (keep && late) {
            keep = false;
            if (!c.answered || c.sent < c.out.size()) ++stats_.timed_out;
        }
        if (!keep) {
            close(c.fd);
            c.fd = -1;
        }
    }
    std::erase_if(conns_, [](const Conn& c) { return c.fd < 0; });
}

}  // namespace kvio::trace
