#include "importer/fio_iolog.h"

#include <sys/stat.h>

#include <algorithm>
#include <ostream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/quoted_excerpt.h"
#include "common/input_file.h"

namespace kvio::importer {

namespace {

struct Line {
    const std::string& path;
    uint64_t no;
    [[noreturn]] void fail(const char* field, const std::string& what) const {
        throw Error(path + ":" + std::to_string(no) + ": field '" + field + "': " + what);
    }
};

uint64_t number(std::string_view v, const char* field, const Line& l) {
    if (v.empty() || v.size() > 20) l.fail(field, "expected a non-negative integer, got " + quoted_excerpt(v));
    uint64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') l.fail(field, "expected a non-negative integer, got " + quoted_excerpt(v));
        const uint64_t d = uint64_t(c - '0');
        if (n > (UINT64_MAX - d) / 10) l.fail(field, quoted_excerpt(v) + " does not fit in 64 bits");
        n = n * 10 + d;
    }
    return n;
}

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> w;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
        if (j > i) w.push_back(line.substr(i, j - i));
        i = j;
    }
    return w;
}

}  // namespace

Iolog parse_fio_iolog(std::string_view text, const std::string& path) {
    Iolog log;
    std::unordered_map<std::string, uint32_t> index;
    std::vector<uint8_t> state;  // per file: 0 added in an earlier segment only, 1 added, 2 open
    uint64_t no = 0, waited_us = 0;
    uint64_t seg_base_us = 0, seg_end_us = 0;  // where this segment's clock starts on the log's; its latest time
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const Line l{path, no};
        const int header = line == "fio version 2 iolog" ? 2 : line == "fio version 3 iolog" ? 3 : 0;
        if (no == 1) {
            if (!header)
                throw Error(path + ":1: expected \"fio version 2 iolog\" or \"fio version 3 iolog\", got " +
                            quoted_excerpt(line));
            log.version = header;
            continue;
        }
        if (header) {
            // Another fio run appended to the log (fio opens write_iolog for appending): a segment whose clock
            // restarts at 0 and whose files are added and opened anew. It starts where the previous one ended.
            if (header != log.version)
                l.fail("header", "a version " + std::to_string(header) + " segment in a version " +
                                     std::to_string(log.version) +
                                     " log: every appended fio run must write the same iolog version");
            seg_base_us += log.version == 3 ? seg_end_us : waited_us;
            seg_end_us = waited_us = 0;
            std::fill(state.begin(), state.end(), 0);
            ++log.segments;
            continue;
        }
        auto w = words(line);
        if (w.empty()) continue;  // fio skips empty lines too
        uint64_t ts_us = waited_us;
        if (log.version == 3) {
            ts_us = number(w[0], "timestamp", l);
            seg_end_us = std::max(seg_end_us, ts_us);
            w.erase(w.begin());
        }
        if (ts_us > UINT64_MAX / 1000 - seg_base_us)
            l.fail("timestamp", "with the earlier segments it does not fit in 64-bit ns");
        ts_us += seg_base_us;
        if (w.size() < 2) l.fail(w.empty() ? "filename" : "action", "expected FILE ACTION [OFFSET LENGTH]");
        const std::string file(w[0]);
        const std::string_view act = w[1];
        auto it = index.find(file);
        if (act == "add") {
            if (w.size() != 2) l.fail("action", "'add' takes no offset or length");
            if (it == index.end()) {
                index.emplace(file, uint32_t(log.files.size()));
                log.files.push_back(file);
                state.push_back(1);
            } else if (state[it->second] == 0) {
                state[it->second] = 1;
            }
            continue;
        }
        if (it == index.end() || state[it->second] == 0)
            l.fail("filename", quoted_excerpt(file) + " is used before its 'add' line");
        uint8_t& st = state[it->second];
        if (act == "open" || act == "close") {
            if (w.size() != 2) l.fail("action", "'" + std::string(act) + "' takes no offset or length");
            if (act == "open")
                st = 2;
            else if (st != 2)
                l.fail("action", "'close' of " + quoted_excerpt(file) + ", which is not open");
            else
                st = 1;
            continue;
        }
        if (w.size() != 4)
            l.fail(w.size() < 4 ? "offset" : "action", "expected FILE " + std::string(act) + " OFFSET LENGTH");
        const uint64_t off = number(w[2], "offset", l), len = number(w[3], "length", l);
        if (act == "wait") {
            if (log.version == 3) l.fail("action", "'wait' is not allowed in version 3 (timestamps replace it)");
            if (off > UINT64_MAX / 1000 - seg_base_us - waited_us)
                l.fail("offset", "the waits add up to more than 64-bit ns");
            waited_us += off;
            continue;
        }
        IologIo io;
        io.line = no;
        io.file = it->second;
        io.ts_us = ts_us;
        if (act == "read")
            io.kind = IologIo::Kind::Read;
        else if (act == "write")
            io.kind = IologIo::Kind::Write;
        else if (act == "trim")
            io.kind = IologIo::Kind::Trim;
        else if (act == "sync" || act == "datasync")
            io.kind = IologIo::Kind::Sync;
        else
            l.fail("action",
                   "expected add, open, close, read, write, trim, sync, datasync or wait, got " + quoted_excerpt(act));
        if (st != 2) l.fail("filename", quoted_excerpt(file) + " is not open");
        if (io.kind != IologIo::Kind::Sync) {
            if (len == 0) l.fail("length", "0: a read, write or trim moves at least one byte");
            if (len > (uint64_t(1) << 32))
                l.fail("length", std::to_string(len) + " is above 4 GiB (one request at most)");
            if (off > UINT64_MAX - len) l.fail("offset", std::to_string(off) + " + length does not fit in 64 bits");
        }
        io.offset = off;
        io.length = len;
        log.ios.push_back(io);
    }
    if (no == 0) throw Error(path + ": empty file (expected \"fio version 3 iolog\")");
    return log;
}

IologImport import_fio_iolog(const std::string& path, const IologImportOptions& o, std::ostream& out) {
    IologImport s;
    Iolog log = parse_fio_iolog(read_input(path), path);
    s.version = log.version;
    s.segments = log.segments;
    struct Dev {
        std::string majmin, disk;
        uint64_t start_bytes = 0;
    };
    std::vector<Dev> devs;
    for (const auto& f : log.files) {
        Dev d;
        if (!o.dev.empty()) {
            if (auto info = find_block_dev(o.dev)) {
                d.majmin = dev_string(info->whole_disk);
                d.disk = info->whole_disk_name;
                d.start_bytes = info->start_sector * 512;
            } else if (parse_dev_string(o.dev)) {  // a device of another machine
                d.majmin = o.dev;
                d.disk = "?";
            } else {
                throw Error("--dev " + o.dev + ": no such block device here (give MAJ:MIN)");
            }
            if (log.files.size() > 1)
                throw Error(path + ": --dev applies to a log of one file, this one has " +
                            std::to_string(log.files.size()));
        } else {
            if (!is_block_device(f))
                throw Error(path + ": file " + f +
                            " is not a block device here: its offsets are not disk offsets; give --dev MAJ:MIN "
                            "to take them as the offsets on that disk");
            auto info = block_dev_info_for_path(f);
            d.majmin = dev_string(info.whole_disk);
            d.disk = info.whole_disk_name;
            d.start_bytes = info.start_sector * 512;
        }
        devs.push_back(d);
    }
    std::stable_sort(log.ios.begin(), log.ios.end(),
                     [](const IologIo& a, const IologIo& b) { return a.ts_us < b.ts_us; });
    for (const auto& io : log.ios) {
        if (io.kind == IologIo::Kind::Sync) {
            ++s.syncs;
            continue;
        }
        const Dev& d = devs[io.file];
        const uint64_t off = d.start_bytes + io.offset;
        if (off % 512 || io.length % 512)
            throw Error(path + ":" + std::to_string(io.line) + ": field '" + (off % 512 ? "offset" : "length") +
                        "': not a multiple of 512 bytes (a device command moves whole sectors)");
        const bool w = io.kind == IologIo::Kind::Write, t = io.kind == IologIo::Kind::Trim;
        const uint64_t ts = io.ts_us * 1000;
        nlohmann::json j = {{"type", "cmd"},
                            {"src", "block"},
                            {"dev", d.majmin},
                            {"disk", d.disk},
                            {"op", t   ? "discard"
                                   : w ? "write"
                                       : "read"},
                            {"rwbs", t   ? "D"
                                     : w ? "W"
                                         : "R"},
                            {"sector", off / 512},
                            {"bytes", io.length},
                            {"ts_issue", ts},
                            {"ts_complete", ts},
                            {"d2c_ns", 0},
                            {"pid", 0},
                            {"tid", 0},
                            {"comm", "fio"}};
        out << j.dump() << '\n';
        ++s.cmds;
    }
    nlohmann::json sum = {{"type", "summary"},        {"events", s.cmds},      {"dropped", 0},
                          {"unmatched_completes", 0}, {"negative_deltas", 0},  {"lost_completes", 0},
                          {"source", "fio-iolog"},    {"segments", s.segments}};
    out << sum.dump() << '\n';
    return s;
}

}  // namespace kvio::importer
