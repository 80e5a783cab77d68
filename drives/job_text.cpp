#include "drives/job_text.h"

#include <cctype>
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
    size_t c1 = rest.find(':');
    if (c1 == std::string::npos || c1 == 0) throw bad("PATH must be absolute");
    d.host = rest.substr(0, c1);
    std::string after = rest.substr(c1 + 1);
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

bool job_has_rates(const std::string& job) {
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string k = key_of(line);
        if (k == "rate" || k == "rate_iops" || k == "rate_min" || k == "rate_iops_min") return true;
    }
    return false;
}

std::string job_for_target(const std::string& job, const std::string& target, TargetField field, bool closed) {
    std::ostringstream out;
    out << "; kvio drives: the job below, its data on " << target << (closed ? " (closed loop: rates dropped)" : "")
        << "\n[global]\n"
        << (field == TargetField::Directory ? "directory=" : "filename=") << target << "\n\n";
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string k = key_of(line);
        if (k == "filename" || k == "directory" || k == "filename_format") continue;
        if (closed && is_rate_key(k)) continue;
        out << line << "\n";
    }
    return out.str();
}

uint64_t job_declared_bytes(const std::string& job) {
    // Sections in order; [global] values apply to the sections after them.
    struct Sec {
        uint64_t size = 0, io_size = 0;
        bool unknowable = false;
    };
    Sec global, cur;
    bool in_job = false;
    uint64_t total = 0;
    bool unknowable = false;
    auto close_job = [&] {
        if (!in_job) return;
        uint64_t b = cur.io_size ? cur.io_size : cur.size;
        if (cur.unknowable || b == 0) unknowable = true;
        total += b;
    };
    std::istringstream in(job);
    for (std::string line; std::getline(in, line);) {
        std::string t = trim(line);
        if (!t.empty() && t[0] == '[') {
            close_job();
            std::string name = t.substr(1, t.find(']') - 1);
            in_job = name != "global";
            if (!in_job) continue;
            cur = global;
            continue;
        }
        std::string k = key_of(line);
        Sec& s = in_job ? cur : global;
        if (k == "size") s.size = parse_size(value_of(line)), s.unknowable |= s.size == 0;
        if (k == "io_size" || k == "io_limit") s.io_size = parse_size(value_of(line)), s.unknowable |= s.io_size == 0;
        if (k == "time_based" || k == "runtime" || k == "loops" || k == "numjobs" || k == "nrfiles")
            s.unknowable |= !(k == "loops" || k == "numjobs" || k == "nrfiles") || value_of(line) != "1";
    }
    close_job();
    return unknowable ? 0 : total;
}

}  // namespace kvio::drives
