#include "drives/prom_scrape.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace kvio::drives {

namespace {

std::string fetch(const std::string& host, int port, double timeout_s) {
    const std::string where = "http://" + host + ":" + std::to_string(port) + "/metrics";
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int e = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); e != 0)
        throw Error(where + ": " + ::gai_strerror(e));
    int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{static_cast<time_t>(timeout_s), static_cast<suseconds_t>((timeout_s - int(timeout_s)) * 1e6)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int rc = fd < 0 ? -1 : ::connect(fd, res->ai_addr, res->ai_addrlen);
    ::freeaddrinfo(res);
    if (rc != 0) {
        int err = errno;
        if (fd >= 0) ::close(fd);
        throw Error(where + ": cannot connect: " + std::strerror(err));
    }
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: " + host + "\r\nAccept: text/plain\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        throw Error(where + ": cannot send the request");
    }
    std::string body;
    char buf[65536];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            throw Error(where + ": read: " + std::strerror(err));
        }
        body.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    size_t eoh = body.find("\r\n\r\n");
    if (body.compare(0, 5, "HTTP/") != 0 || eoh == std::string::npos || body.find(" 200 ") > body.find("\r\n"))
        throw Error(where + ": not an HTTP 200 answer: " + body.substr(0, body.find("\r\n")));
    return body.substr(eoh + 4);
}

/// The value of label `k` in a "name{a=\"x\",b=\"y\"}" key; empty when absent.
std::string label(const std::string& key, const std::string& k) {
    size_t p = key.find(k + "=\"");
    if (p == std::string::npos) return "";
    p += k.size() + 2;
    return key.substr(p, key.find('"', p) - p);
}

std::string name_of(const std::string& key) { return key.substr(0, key.find('{')); }

double delta(const PromScrape& b, const PromScrape& a, const std::string& key) {
    auto ia = a.find(key);
    if (ia == a.end()) return 0;
    auto ib = b.find(key);
    return ia->second - (ib == b.end() ? 0 : ib->second);
}

/// Cumulative buckets (le, count) of one histogram series, after − before, ascending by le.
std::vector<std::pair<double, double>> buckets(const PromScrape& b, const PromScrape& a, const std::string& metric,
                                               const std::string& dev, const std::string& op) {
    std::vector<std::pair<double, double>> out;
    for (const auto& [k, v] : a) {
        if (name_of(k) != metric + "_bucket" || label(k, "device") != dev || label(k, "op") != op) continue;
        std::string le = label(k, "le");
        double lev = le == "+Inf" ? 1e300 : std::stod(le);
        out.emplace_back(lev, v - (b.count(k) ? b.at(k) : 0));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The q-quantile (0..1) of cumulative buckets, interpolated linearly between the bucket's lower and upper bound.
double quantile(const std::vector<std::pair<double, double>>& cum, double q) {
    if (cum.empty() || cum.back().second <= 0) return 0;
    double target = q * cum.back().second, lo = 0, prev = 0;
    for (const auto& [le, c] : cum) {
        if (c >= target && c > prev) return le >= 1e300 ? lo : lo + (le - lo) * (target - prev) / (c - prev);
        lo = le, prev = c;
    }
    return lo;
}

}  // namespace

PromScrape parse_prom_text(const std::string& text) {
    PromScrape s;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        size_t sp = line.rfind(' ');
        if (sp == std::string::npos) continue;
        try {
            s[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
        } catch (const std::exception&) {}
    }
    return s;
}

PromScrape scrape_metrics(const std::string& host, int port, double timeout_s) {
    return parse_prom_text(fetch(host, port, timeout_s));
}

DeviceFigures device_figures_between(const PromScrape& before, const PromScrape& after, const std::string& device) {
    std::string dev = device;
    if (dev.empty()) {  // the device that moved the most bytes
        double best = 0;
        for (const auto& [k, v] : after)
            if (name_of(k) == "kvio_device_bytes_total")
                if (double d = delta(before, after, k); d > best) best = d, dev = label(k, "device");
    }
    DeviceFigures f;
    f.disk = dev;
    const std::string key = "{device=\"" + dev + "\",op=\"";
    if (!after.count("kvio_device_bytes_total" + key + "read\"}")) return f;
    f.present = true;
    f.read_bytes = static_cast<uint64_t>(delta(before, after, "kvio_device_bytes_total" + key + "read\"}"));
    f.write_bytes = static_cast<uint64_t>(delta(before, after, "kvio_device_bytes_total" + key + "write\"}"));
    f.read_cmds = static_cast<uint64_t>(delta(before, after, "kvio_device_commands_total" + key + "read\"}"));
    f.write_cmds = static_cast<uint64_t>(delta(before, after, "kvio_device_commands_total" + key + "write\"}"));
    auto pct = [&](const char* metric, const char* op, double q) {
        return quantile(buckets(before, after, metric, dev, op), q) * 1e9;  // seconds -> ns
    };
    f.d2c_read_p50 = pct("kvio_d2c_seconds", "read", 0.5), f.d2c_read_p99 = pct("kvio_d2c_seconds", "read", 0.99);
    f.d2c_read_p999 = pct("kvio_d2c_seconds", "read", 0.999);
    f.d2c_write_p50 = pct("kvio_d2c_seconds", "write", 0.5), f.d2c_write_p99 = pct("kvio_d2c_seconds", "write", 0.99);
    f.d2c_write_p999 = pct("kvio_d2c_seconds", "write", 0.999);
    f.q2d_read_p50 = pct("kvio_q2d_seconds", "read", 0.5), f.q2d_read_p99 = pct("kvio_q2d_seconds", "read", 0.99);
    f.q2d_write_p50 = pct("kvio_q2d_seconds", "write", 0.5), f.q2d_write_p99 = pct("kvio_q2d_seconds", "write", 0.99);
    auto mean = [&](const char* op) {
        double n = delta(before, after, "kvio_queue_depth_count" + key + op + "\"}");
        return n > 0 ? delta(before, after, "kvio_queue_depth_sum" + key + op + "\"}") / n : 0.0;
    };
    f.qd_read_mean = mean("read"), f.qd_write_mean = mean("write");
    return f;
}

}  // namespace kvio::drives
