#include "validate/events.h"

#include <cerrno>
#include <cstring>

#include "common/devinfo.h"

namespace kvio::validate {

namespace {

enum Field : uint8_t { F_NONE, F_TYPE, F_SRC, F_DEV, F_OP, F_RWBS, F_SECTOR, F_BYTES, F_TS_ISSUE, F_USER_DATA, F_KEY, F_SLBA, F_NLB, F_DROPPED, F_UNMATCHED };
enum Seen : uint32_t { S_SRC = 1, S_DEV = 2, S_OP = 4, S_RWBS = 8, S_SECTOR = 16, S_BYTES = 32, S_TS = 64, S_SLBA = 128, S_NLB = 256, S_TYPE = 512 };

const char* field_name(Field f) {
    static const char* names[] = {"", "type", "src", "dev", "op", "rwbs", "sector", "bytes", "ts_issue", "user_data", "key", "slba", "nlb", "dropped", "unmatched_completes"};
    return names[f];
}

Field lookup(const std::string& k) {
    switch (k.size()) {
    case 2: return k == "op" ? F_OP : F_NONE;
    case 3: return k == "src" ? F_SRC : k == "dev" ? F_DEV : k == "key" ? F_KEY : k == "nlb" ? F_NLB : F_NONE;
    case 4: return k == "type" ? F_TYPE : k == "rwbs" ? F_RWBS : k == "slba" ? F_SLBA : F_NONE;
    case 5: return k == "bytes" ? F_BYTES : F_NONE;
    case 6: return k == "sector" ? F_SECTOR : F_NONE;
    case 7: return k == "dropped" ? F_DROPPED : F_NONE;
    case 8: return k == "ts_issue" ? F_TS_ISSUE : F_NONE;
    case 9: return k == "user_data" ? F_USER_DATA : F_NONE;
    case 19: return k == "unmatched_completes" ? F_UNMATCHED : F_NONE;
    default: return F_NONE;
    }
}

// SAX handler for one flat record. Only top-level keys are interpreted; nested values are skipped.
struct Sax final : nlohmann::json_sax<json> {
    const JsonSource* src = nullptr;
    int depth = 0;
    bool top_is_object = false;
    Field cur = F_NONE;
    uint32_t seen = 0;
    std::string type, src_name, dev, op, rwbs, key_value;
    uint64_t sector = 0, bytes = 0, ts_issue = 0, user_data = 0, slba = 0, nlb = 0, dropped = 0, unmatched = 0;
    bool has_user_data = false, has_key = false;

    void reset() {
        depth = 0; top_is_object = false; cur = F_NONE; seen = 0;
        type.clear(); key_value.clear(); has_user_data = has_key = false;
        sector = bytes = ts_issue = user_data = slba = nlb = dropped = unmatched = 0;
    }
    [[noreturn]] void bad(const char* want) { src->fail(field_name(cur), std::string("expected ") + want); }
    bool take_uint(uint64_t v) {
        if (depth != 1) return true;
        switch (cur) {
        case F_SECTOR: sector = v; seen |= S_SECTOR; break;
        case F_BYTES: bytes = v; seen |= S_BYTES; break;
        case F_TS_ISSUE: ts_issue = v; seen |= S_TS; break;
        case F_USER_DATA: user_data = v; has_user_data = true; break;
        case F_SLBA: slba = v; seen |= S_SLBA; break;
        case F_NLB: nlb = v; seen |= S_NLB; break;
        case F_DROPPED: dropped = v; break;
        case F_UNMATCHED: unmatched = v; break;
        case F_NONE: break;
        default: bad("a string");
        }
        return true;
    }
    bool not_uint(const char* what) {
        if (depth != 1) return true;
        switch (cur) {
        case F_NONE: return true;
        case F_TYPE: case F_SRC: case F_DEV: case F_OP: case F_RWBS: case F_KEY: bad("a string");
        default: src->fail(field_name(cur), std::string("expected a non-negative integer, got ") + what);
        }
    }
    bool null() override { return not_uint("null"); }
    bool boolean(bool) override { return not_uint("a boolean"); }
    bool number_integer(number_integer_t v) override { return v >= 0 ? take_uint(uint64_t(v)) : not_uint("a negative number"); }
    bool number_unsigned(number_unsigned_t v) override { return take_uint(v); }
    bool number_float(number_float_t, const string_t&) override { return not_uint("a fraction"); }
    bool string(string_t& s) override {
        if (depth != 1) return true;
        switch (cur) {
        case F_TYPE: type.swap(s); seen |= S_TYPE; break;
        case F_SRC: src_name.swap(s); seen |= S_SRC; break;
        case F_DEV: dev.swap(s); seen |= S_DEV; break;
        case F_OP: op.swap(s); seen |= S_OP; break;
        case F_RWBS: rwbs.swap(s); seen |= S_RWBS; break;
        case F_KEY: key_value.swap(s); has_key = true; break;
        case F_NONE: break;
        default: src->fail(field_name(cur), "expected a non-negative integer, got a string");
        }
        return true;
    }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        if (depth == 0) top_is_object = true;
        else if (depth == 1) not_uint("an object");
        ++depth;
        return true;
    }
    bool end_object() override { --depth; return true; }
    bool start_array(std::size_t) override {
        if (depth == 0) throw Error(src->where() + ": expected a JSON object");
        if (depth == 1) not_uint("an array");
        ++depth;
        return true;
    }
    bool end_array() override { --depth; return true; }
    bool key(string_t& k) override {
        if (depth == 1) cur = lookup(k);
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
        throw Error(src->where() + ": not valid JSON (" + ex.what() + ")");
    }
};

uint32_t parse_dev_fast(const std::string& s, const JsonSource& src) {
    // Cache the last one: a trace is usually about one or two devices.
    static thread_local std::string last;
    static thread_local uint32_t last_dev = 0;
    if (s == last) return last_dev;
    auto d = parse_dev_string(s);
    if (!d) src.fail("dev", "expected \"MAJ:MIN\", got \"" + s + "\"");
    last = s;
    last_dev = kernel_dev(*d);
    return last_dev;
}

}  // namespace

EventsReader::EventsReader(const std::string& path) : src_{path, 0}, buf_(1 << 20) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw Error(path + ": cannot open: " + std::strerror(errno));
}

EventsReader::~EventsReader() {
    if (f_) std::fclose(f_);
}

// Next line as [b, e) without the newline; false at end of file.
bool EventsReader::read_line(const char*& b, const char*& e) {
    for (;;) {
        const char* start = buf_.data() + pos_;
        const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
        if (nl) {
            b = start; e = nl;
            pos_ = size_t(nl - buf_.data()) + 1;
            ++src_.line;
            return true;
        }
        if (eof_) {
            if (pos_ == len_) return false;
            b = start; e = buf_.data() + len_;  // last line without newline
            pos_ = len_;
            ++src_.line;
            return true;
        }
        // Move the partial line to the front and refill; grow for very long lines.
        size_t rest = len_ - pos_;
        std::memmove(buf_.data(), buf_.data() + pos_, rest);
        pos_ = 0; len_ = rest;
        if (len_ == buf_.size()) buf_.resize(buf_.size() * 2);
        size_t n = std::fread(buf_.data() + len_, 1, buf_.size() - len_, f_);
        if (n == 0) {
            if (std::ferror(f_)) throw Error(src_.file + ": read error: " + std::strerror(errno));
            eof_ = true;
        }
        len_ += n;
    }
}

bool EventsReader::next(Command& c) {
    static thread_local Sax sax;
    sax.src = &src_;
    const char *b, *e;
    while (read_line(b, e)) {
        const char* p = b;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
        if (p == e) continue;
        sax.reset();
        json::sax_parse(p, e, &sax);
        if (!sax.top_is_object) throw Error(src_.where() + ": expected a JSON object");
        if (!(sax.seen & S_TYPE)) src_.fail("type", "missing");
        if (sax.type != "cmd") {
            if (sax.type == "summary") { dropped_ = sax.dropped; unmatched_ = sax.unmatched; saw_summary_ = true; }
            ++other_;
            continue;
        }
        auto need = [&](uint32_t bit, const char* name) { if (!(sax.seen & bit)) src_.fail(name, "missing"); };
        need(S_SRC, "src"); need(S_DEV, "dev"); need(S_OP, "op"); need(S_BYTES, "bytes"); need(S_TS, "ts_issue");
        c = Command{};
        if (sax.src_name == "nvme") {
            need(S_SLBA, "slba"); need(S_NLB, "nlb");
            c.nvme = true;
            c.offset = sax.nlb ? sax.slba * (sax.bytes / sax.nlb) : 0;
        } else if (sax.src_name == "block") {
            need(S_SECTOR, "sector"); need(S_RWBS, "rwbs");
            c.offset = sax.sector * 512;
            c.passthrough_block = sax.rwbs.find('N') != std::string::npos;
        } else {
            src_.fail("src", "expected \"block\" or \"nvme\", got \"" + sax.src_name + "\"");
        }
        const std::string& op = sax.op;
        c.op = op == "read" ? CmdOp::Read : op == "write" ? CmdOp::Write : op == "flush" ? CmdOp::Flush
             : op == "discard" ? CmdOp::Discard : op == "other" ? CmdOp::Other
             : (src_.fail("op", "expected read|write|flush|discard|other, got \"" + op + "\""), CmdOp::Other);
        c.dev = parse_dev_fast(sax.dev, src_);
        c.bytes = sax.bytes;
        c.ts_issue = sax.ts_issue;
        c.user_data = sax.user_data;
        c.has_user_data = sax.has_user_data;
        if (sax.has_key) c.key.swap(sax.key_value);
        return true;
    }
    return false;
}

}  // namespace kvio::validate
