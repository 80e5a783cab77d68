// The address of a Redis or Valkey server (both speak RESP; docs/simulate.md, "Remote tier"):
// redis://[user:pass@]HOST:PORT[/DB], the form redis-cli -u and most clients take.
#pragma once
#include <string>

namespace kvio::redis {

/// A parsed server address. `user` empty with a password = the `default` user (AUTH with one argument).
struct Url {
    std::string host;      ///< a name or an IPv4 address; an IPv6 address in brackets ([::1]) without them
    int port = 6379;       ///< 1..65535 (6379 when the URL names none)
    std::string user;      ///< ACL user ("" = default)
    std::string password;  ///< "" = no AUTH
    int db = 0;            ///< logical database (SELECT), 0..
    /// Not part of the URL text: a name each connection gives itself (CLIENT SETNAME, no spaces; "" = none), so the
    /// server's CLIENT LIST tells the connections' roles apart (docs/simulate.md, "Remote tier").
    std::string client_name;
    /// The URL without the password (for logs and results): redis://user@host:port/db.
    std::string safe_text() const;
};

/// `text` with the password of its credentials (after the first ':' past "scheme://", up to the last '@') replaced
/// by "***": redis://:***@h:99999. Text without a password comes back unchanged. For a URL that may not parse.
std::string mask_password(const std::string& text);

/// What results, logs and errors record of a --remote-tier value: the parsed URL without the password (safe_text)
/// when `text` parses, else mask_password(text). Never the password (docs/simulate.md, "Remote tier").
std::string recorded_url(const std::string& text);

/// Parses `text`. Throws kvio::Error "'TEXT': WHAT" (TEXT with the password masked: mask_password) naming what is wrong
/// (scheme, empty host, port not a number or out of 1..65535, db not a non-negative number, a '@' without credentials,
/// trailing text).
Url parse_url(const std::string& text);

}  // namespace kvio::redis
