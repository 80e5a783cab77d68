// redis://[user:pass@]HOST:PORT[/DB] (url.h).
#include "redis/url.h"

#include <cstdlib>

#include "common/error.h"

namespace kvio::redis {

namespace {

/// A decimal number in [lo, hi] or -1.
long number_in(const std::string& s, long lo, long hi) {
    if (s.empty() || s.size() > 9) return -1;
    for (char ch : s)
        if (ch < '0' || ch > '9') return -1;
    long v = std::strtol(s.c_str(), nullptr, 10);
    return v < lo || v > hi ? -1 : v;
}

}  // namespace

std::string Url::safe_text() const {
    std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return "redis://" + (user.empty() ? "" : user + "@") + h + ":" + std::to_string(port) + "/" + std::to_string(db);
}

std::string mask_password(const std::string& text) {
    const size_t scheme = text.find("://");
    const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    const size_t at = text.rfind('@');
    if (at == std::string::npos || at < start) return text;
    const size_t colon = text.find(':', start);
    if (colon == std::string::npos || colon > at) return text;  // user@ alone: no password to hide
    return text.substr(0, colon + 1) + "***" + text.substr(at);
}

std::string recorded_url(const std::string& text) {
    try {
        return parse_url(text).safe_text();
    } catch (const Error&) {
        return mask_password(text);
    }
}

Url parse_url(const std::string& text) {
    auto fail = [&](const std::string& what) { throw Error("'" + mask_password(text) + "': " + what); };
    const std::string scheme = "redis://";
    if (text.compare(0, scheme.size(), scheme) != 0) fail("expected redis://[user:pass@]HOST:PORT[/DB]");
    std::string rest = text.substr(scheme.size());
    Url u;
    // Credentials end at the last '@' (a password may hold '@').
    if (size_t at = rest.rfind('@'); at != std::string::npos) {
        std::string cred = rest.substr(0, at);
        rest = rest.substr(at + 1);
        size_t colon = cred.find(':');
        if (colon == std::string::npos) fail("credentials before '@' must be user:password or :password");
        u.user = cred.substr(0, colon);
        u.password = cred.substr(colon + 1);
        if (u.password.empty()) fail("empty password before '@'");
    }
    std::string hostport = rest, db;
    if (size_t slash = rest.find('/'); slash != std::string::npos) {
        hostport = rest.substr(0, slash);
        db = rest.substr(slash + 1);
        if (!db.empty()) {
            long d = number_in(db, 0, 1000000);
            if (d < 0) fail("database '" + db + "' is not a number >= 0");
            u.db = int(d);
        }
    }
    std::string port;
    if (!hostport.empty() && hostport[0] == '[') {
        size_t close = hostport.find(']');
        if (close == std::string::npos) fail("'[' without ']' around an IPv6 address");
        u.host = hostport.substr(1, close - 1);
        std::string after = hostport.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') fail("expected ':PORT' after ']'");
            port = after.substr(1);
            if (port.empty()) fail("empty port after ':'");
        }
    } else {
        size_t colon = hostport.rfind(':');
        u.host = hostport.substr(0, colon);
        if (colon != std::string::npos) {
            port = hostport.substr(colon + 1);
            if (port.empty()) fail("empty port after ':'");
        }
        if (u.host.find(':') != std::string::npos) fail("an IPv6 address must be in brackets: [ADDR]:PORT");
    }
    if (u.host.empty()) fail("no host");
    if (!port.empty()) {
        long p = number_in(port, 1, 65535);
        if (p < 0) fail("port '" + port + "' is not a number in 1..65535");
        u.port = int(p);
    }
    return u;
}

}  // namespace kvio::redis
