#include "workload/serving/arrivals/burstgpt.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "common/csv.h"
#include "common/error.h"
#include "common/input_file.h"

namespace kvio::serving {

namespace {

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

uint32_t parse_tokens(const std::string& where, const char* field, const std::string& v) {
    uint64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size())
        throw Error(where + ": field '" + field + "': '" + v + "' is not a non-negative integer");
    if (x > std::numeric_limits<uint32_t>::max())
        throw Error(where + ": field '" + field + "': " + v + " tokens is more than 2^32 - 1");
    return uint32_t(x);
}

double parse_timestamp(const std::string& where, const std::string& v) {
    double x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !std::isfinite(x) || x < 0)
        throw Error(where + ": field 'Timestamp': '" + v + "' is not a non-negative number of seconds");
    return x;
}

}  // namespace

std::vector<std::string> resolve_burst_trace_files(const std::string& path) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        for (const auto& e : fs::directory_iterator(path, ec))
            if (e.path().extension() == ".csv" && !e.is_directory()) files.push_back(e.path().string());
        if (ec) throw Error("--burst-trace-path " + path + ": cannot list the directory: " + ec.message());
        std::sort(files.begin(), files.end());
        if (files.empty()) throw Error("--burst-trace-path " + path + ": the directory holds no .csv file");
        return files;
    }
    if (fs::exists(path, ec)) return {path};
    if (has_glob_chars(path)) {
        glob_t g{};
        const int rc = ::glob(path.c_str(), 0, nullptr, &g);
        for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
        ::globfree(&g);
        std::sort(files.begin(), files.end());
        if (files.empty()) throw Error("--burst-trace-path " + path + ": the pattern matches no file");
        return files;
    }
    throw Error("--burst-trace-path " + path + ": no such file or directory");
}

void read_burst_trace_file(const std::string& file, BurstTrace& out) {
    std::FILE* f = open_input(file);
    struct Closer {
        std::FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{f};
    char* buf = nullptr;
    size_t cap = 0;
    struct Freer {
        char*& p;
        ~Freer() { std::free(p); }
    } freer{buf};
    std::vector<std::string> fields;
    size_t line_no = 0, ncols = 0;
    int c_ts = -1, c_req = -1, c_resp = -1;
    uint64_t rows = 0;
    ssize_t n;
    while ((n = ::getline(&buf, &cap, f)) >= 0) {
        ++line_no;
        std::string_view line(buf, size_t(n));
        if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
        const std::string where = file + ":" + std::to_string(line_no);
        if (line.find('\0') != std::string_view::npos) throw Error(where + ": a NUL byte (not a text CSV file)");
        if (line.empty() || line == "\r") throw Error(where + ": empty row");
        if (auto err = split_csv_record(line, fields)) throw Error(where + ": " + *err);
        if (line_no == 1) {
            ncols = fields.size();
            for (size_t i = 0; i < fields.size(); ++i) {
                const std::string& h = fields[i];
                int* slot = h == "Timestamp"         ? &c_ts
                            : h == "Request tokens"  ? &c_req
                            : h == "Response tokens" ? &c_resp
                                                     : nullptr;
                if (!slot) continue;
                if (*slot >= 0) throw Error(where + ": header names column '" + h + "' twice");
                *slot = int(i);
            }
            for (auto [col, name] :
                 {std::pair{c_ts, "Timestamp"}, {c_req, "Request tokens"}, {c_resp, "Response tokens"}})
                if (col < 0)
                    throw Error(
                        where + ": header lacks column '" + std::string(name) +
                        "' (a BurstGPT CSV has Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)");
            continue;
        }
        if (fields.size() != ncols)
            throw Error(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                        std::to_string(ncols));
        BurstRow r;
        r.timestamp_s = parse_timestamp(where, fields[size_t(c_ts)]);
        r.request_tokens = parse_tokens(where, "Request tokens", fields[size_t(c_req)]);
        r.response_tokens = parse_tokens(where, "Response tokens", fields[size_t(c_resp)]);
        out.rows.push_back(r);
        ++rows;
    }
    if (std::ferror(f)) throw Error(file + ": read error");
    if (line_no == 0) throw Error(file + ": empty file (no header)");
    if (rows == 0) throw Error(file + ": no rows after the header");
    out.files.push_back(file);
    out.rows_per_file.push_back(rows);
}

BurstTrace load_burst_trace(const std::string& path) {
    BurstTrace t;
    for (const auto& f : resolve_burst_trace_files(path)) read_burst_trace_file(f, t);
    return t;
}

}  // namespace kvio::serving
