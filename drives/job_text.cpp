#include "drives/job_text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace kvio::drives {

namespace {

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    size_t b = s.find_last_not_of(" \t\r");
    return s.substr(a, b - a + 1);
}

/// The key of an option line ("rate_iops" of "rate_iops=100,0"), lowercase; empty for sections, comments, blanks.
std::string key_of(const std::string& line) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '[' || t[0] == '#' || t[0] == ';') return "";
    std::string k = trim(t.substr(0, t.find('=')));
    for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return k;
}

std::string value_of(const std::string& line) {
    size_t eq = line.find('=');
    return eq == std::string::npos ? "" : trim(line.substr(eq + 1));
}

bool is_rate_key(const std::string& k) {
    return k == "rate" || k == "rate_iops" || k == "rate_min" || k == "rate_iops_min" || k == "rate_process" ||
           k == "rate_cycle" || k == "rate_ignore_thinktime";
}

/// fio's think-time options: thinktime, thinktime_blocks, thinktime_blocks_type, thinktime_spin, thinktime_iotime.
bool is_thinktime_key(const std::string& k) { return k.starts_with("thinktime"); }

/// fio's size suffixes (k, m, g, t; base 1024 as fio reads them by default, kb_base=1024). 0 when not a plain size.
uint64_t parse_size(const std::string& v) {
    size_t used = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(v, &used);
    } catch (const std::exception&) {
        return 0;
    }
    std::string suf = v.substr(used);
    for (auto& c : suf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (suf.empty() || suf == "b") return n;
    static const std::pair<const char*, int> kSuf[] = {{"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
    for (auto [s, shift] : kSuf)
        if (suf == s || suf == std::string(s) + "b" || suf == std::string(s) + "ib") return n << shift;
    return 0;
}

}  // namespace

std::string DriveSpec::address() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string DriveSpec::fio_client() const {
    return (host.find(':') != std::string::npos ? "ip6:" : "") + host + "," + std::to_string(port);
}

DriveSpec parse_drive_spec(const std::string& text) {
    size_t eq = text.find('=');
    auto bad = [&](const std::string& why) {
        return UsageError("--drive " + text + ": " + why + " (NAME=PATH or NAME=HOST[:PORT]:PATH)");
    };
    if (eq == std::string::npos || eq == 0) throw bad("no NAME=");
    DriveSpec d;
    d.name = text.substr(0, eq);
    for (char c : d.name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            throw bad("NAME may hold letters, digits, '-', '_' and '.'");
    std::string rest = text.substr(eq + 1);
    if (rest.empty()) throw bad("no PATH");
    if (rest[0] == '/') {
        d.path = rest;
        return d;
    }
    std::string after;
    if (rest[0] == '[') {  // an IPv6 address: [ADDR]:...
        const size_t close = rest.find(']');
        if (close == std::string::npos || close < 3 || rest.find(':') > close)
            throw bad("an IPv6 HOST is [ADDR] with ':' in ADDR");
        if (close + 1 >= rest.size() || rest[close + 1] != ':')
            throw bad("no :PATH after " + rest.substr(0, close + 1));
        d.host = rest.substr(1, close - 1), after = rest.substr(close + 2);
    } else {
        size_t c1 = rest.find(':');
        if (c1 == std::string::npos || c1 == 0) throw bad("PATH must be absolute");
        d.host = rest.substr(0, c1), after = rest.substr(c1 + 1);
    }
    if (!after.empty() && after[0] != '/') {
        size_t c2 = after.find(':');
        std::string port = after.substr(0, c2);
        size_t used = 0;
        try {
            d.port = std::stoi(port, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (c2 == std::string::npos || used != port.size() || d.port < 1 || d.port > 65535)
            throw bad("PORT must be 1-65535 and followed by :PATH");
        after = after.substr(c2 + 1);
    }
    if (after.empty() || after[0] != '/') throw bad("PATH must be absolute");
    d.path = after;
    return d;
}

MetricsSpec parse_metrics_spec(const std::string& text) {
    MetricsSpec m;
    size_t eq = text.find('='), colon = text.rfind(':');
    if (eq == std::string::npos || eq == 0 || colon == std::string::npos || colon < eq + 2)
        throw UsageError("--metrics " + text + ": expected NAME=HOST:PORT");
    m.name = text.substr(0, eq), m.host = text.substr(eq + 1, colon - eq - 1);
    if (m.host.size() > 2 && m.host.front() == '[' && m.host.back() == ']')
        m.host = m.host.substr(1, m.host.size() - 2);
    size_t used = 0;
    try {
        m.port = std::stoi(text.substr(colon + 1), &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() - colon - 1 || m.port < 1 || m.port > 65535)
        throw UsageError("--metrics " + text + ": PORT must be 1-65535");
    return m;
}

bool job_is_paced(const std::string& job) {
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string k = key_of(line);
        if (k == "rate" || k == "rate_iops" || k == "rate_min" || k == "rate_iops_min") return true;
        if (k == "thinktime" && value_of(line) != "0") return true;
    }
    return false;
}

std::string job_for_target(const std::string& job, const std::string& target, TargetField field, Pacing pacing,
                           const std::string& bw_log, bool refuse_create) {
    const bool closed = pacing != Pacing::Open, no_think = pacing == Pacing::Closed;
    std::ostringstream out;
    out << "; kvio drives: the job below, its data on " << target
        << (no_think ? " (closed loop: rates and thinktime dropped)"
            : closed ? " (closed loop: rates dropped, thinktime kept)"
                     : "")
        << "\n[global]\n"
        << (field == TargetField::Directory ? "directory=" : "filename=") << target << "\n";
    if (refuse_create) out << "allow_file_create=0\n";
    if (!bw_log.empty()) out << "write_bw_log=" << bw_log << "\nlog_avg_msec=" << kBwLogMs << "\nlog_unix_epoch=1\n";
    out << "\n";
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string k = key_of(line);
        if (k == "filename" || k == "directory" || k == "filename_format") continue;
        if (refuse_create && k == "allow_file_create") continue;
        if (!bw_log.empty() &&
            (k == "write_bw_log" || k == "log_avg_msec" || k == "per_job_logs" || k == "log_unix_epoch"))
            continue;
        if (closed && is_rate_key(k)) continue;
        if (no_think && is_thinktime_key(k)) continue;
        out << line << "\n";
    }
    return out.str();
}

namespace {

using Options = std::map<std::string, std::string>;

uint64_t count_of(const Options& o, const char* key, uint64_t dflt) {
    auto it = o.find(key);
    if (it == o.end()) return dflt;
    try {
        return std::stoull(it->second);
    } catch (const std::exception&) {
        return 0;
    }
}

/// The directions a section's `rw` moves: bit 0 reads, bit 1 writes; 0 for trims (fio counts them apart) or an
/// unknown value. fio's default is `read`.
int directions_of(const Options& o) {
    auto it = o.find("rw");
    if (it == o.end()) it = o.find("readwrite");
    std::string rw = it == o.end() ? "read" : it->second;
    rw = rw.substr(0, rw.find(':'));  // rw=randread:8 (a sequence modifier)
    if (rw == "read" || rw == "randread") return 1;
    if (rw == "write" || rw == "randwrite") return 2;
    if (rw == "rw" || rw == "readwrite" || rw == "randrw") return 3;
    return 0;
}

/// Element `i` of a comma list (fio's per-direction values "read,write"); a list of one applies to every direction.
std::string nth_of_list(const std::string& v, int i) {
    std::vector<std::string> parts;
    std::istringstream in(v);
    for (std::string p; std::getline(in, p, ',');) parts.push_back(trim(p));
    if (parts.empty()) return "";
    return parts.size() == 1 ? parts[0] : size_t(i) < parts.size() ? parts[i] : "";
}

/// The one command size of direction `i` (0 read, 1 write): `bssplit` with one entry, else `bs`/`blocksize`, else
/// fio's default 4 KiB; 0 when the direction mixes sizes (a `bssplit` of several, `bsrange`).
uint64_t one_size_of(const Options& o, int i) {
    if (o.count("bsrange") || o.count("blocksize_range")) return 0;
    if (auto it = o.find("bssplit"); it != o.end()) {
        std::string d = nth_of_list(it->second, i);
        if (d.empty() || d.find(':') != std::string::npos) return 0;
        return parse_size(d.substr(0, d.find('/')));
    }
    for (const char* k : {"bs", "blocksize"})
        if (auto it = o.find(k); it != o.end()) return parse_size(nth_of_list(it->second, i));
    return 4096;
}

/// One section's declared bytes and commands (the struct's rules); `known_*` false where it does not say.
void declare_section(const Options& o, JobDeclared& sum, bool& known_bytes, bool& known_ios) {
    const bool timed = (o.count("time_based") && o.at("time_based") != "0") || o.count("runtime");
    const uint64_t reps = count_of(o, "loops", 1) * count_of(o, "numjobs", 1);
    if (timed || reps == 0 || count_of(o, "nrfiles", 1) != 1) {
        known_bytes = known_ios = false;
        return;
    }
    uint64_t cap = 0;
    for (const char* k : {"io_size", "io_limit", "size"})
        if (o.count(k) && !cap) {
            cap = parse_size(o.at(k));
            if (!cap) known_bytes = known_ios = false;  // a size in %, or unreadable
        }
    const int dirs = directions_of(o);
    if (!dirs) {
        known_bytes = known_ios = false;
        return;
    }
    uint64_t bsz = one_size_of(o, dirs == 2 ? 1 : 0);
    if (dirs == 3 && one_size_of(o, 1) != bsz) bsz = 0;
    const uint64_t n = count_of(o, "number_ios", 0);
    uint64_t ios = 0, bytes = 0;
    if (n) {  // fio ends the pass at whichever comes first: n commands or the cap's bytes
        ios = bsz && cap ? std::min(n, cap / bsz) : n;
        bytes = ios * bsz;
    } else {
        bytes = cap;
        ios = bsz ? cap / bsz : 0;
    }
    if (!bytes) known_bytes = false;
    if (!ios) known_ios = false;
    sum.bytes += bytes * reps, sum.ios += ios * reps;
}

}  // namespace

JobDeclared job_declared(const std::string& job) {
    // Sections in order; [global] values apply to the sections after them.
    Options global, cur;
    bool in_job = false, known_bytes = true, known_ios = true, any = false;
    JobDeclared sum;
    auto close_job = [&] {
        if (in_job) declare_section(cur, sum, known_bytes, known_ios), any = true;
    };
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string t = trim(line);
        if (!t.empty() && t[0] == '[') {
            close_job();
            in_job = t.substr(1, t.find(']') - 1) != "global";
            if (in_job) cur = global;
            continue;
        }
        std::string k = key_of(line);
        if (!k.empty()) (in_job ? cur : global)[k] = value_of(line);
    }
    close_job();
    return {any && known_bytes ? sum.bytes : 0, any && known_ios ? sum.ios : 0};
}

}  // namespace kvio::drives
