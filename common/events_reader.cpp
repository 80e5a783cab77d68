#include "common/events_reader.h"

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "common/devinfo.h"
#include "common/event_names.h"
#include "common/events_bin.h"
#include "common/warn.h"

#ifndef KVIO_NO_SIMDJSON
#include <simdjson.h>
#endif

namespace kvio {

namespace {

constexpr size_t kBufBytes = 4u << 20;
constexpr size_t kPadding = 64;  // >= SIMDJSON_PADDING: bytes the parser may read past a line's end
#ifndef KVIO_NO_SIMDJSON
static_assert(kPadding >= simdjson::SIMDJSON_PADDING);
#endif

constexpr const char* kNames[] = {"type",
                                  "src",
                                  "dev",
                                  "disk",
                                  "op",
                                  "rwbs",
                                  "comm",
                                  "key",
                                  "name",
                                  "fs_dev",
                                  "trace_id",
                                  "sector",
                                  "bytes",
                                  "ts_issue",
                                  "ts_complete",
                                  "qd",
                                  "pid",
                                  "tid",
                                  "user_data",
                                  "slba",
                                  "nlb",
                                  "ts_enter",
                                  "ts_exit",
                                  "offset",
                                  "count",
                                  "ino",
                                  "gen",
                                  "file_size",
                                  "events",
                                  "dropped",
                                  "unmatched_completes",
                                  "negative_deltas",
                                  "fd",
                                  "ret",
                                  "direct",
                                  "files"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == size_t(EventField::Count_));

constexpr int kNone = -1;
constexpr int kFirstUint = int(EventField::Sector);
constexpr int kFirstInt = int(EventField::Fd);
constexpr int kFirstBool = int(EventField::Direct);
constexpr int kFiles = int(EventField::Files);
static_assert(kFirstBool == kFiles - 1, "one boolean field: the parsers set r.direct");
static_assert(kFiles == int(EventField::Count_) - 1, "one array field: the parsers fill r.files");

// Top-level key -> EventField index, kNone for keys no reader interprets.
int lookup(std::string_view k) {
    using F = EventField;
    switch (k.size()) {
        case 2:
            return k == "op" ? int(F::Op) : k == "qd" ? int(F::Qd) : k == "fd" ? int(F::Fd) : kNone;
        case 3:
            return k == "src"   ? int(F::Src)
                   : k == "dev" ? int(F::Dev)
                   : k == "key" ? int(F::Key)
                   : k == "nlb" ? int(F::Nlb)
                   : k == "pid" ? int(F::Pid)
                   : k == "tid" ? int(F::Tid)
                   : k == "ret" ? int(F::Ret)
                   : k == "ino" ? int(F::Ino)
                   : k == "gen" ? int(F::Gen)
                                : kNone;
        case 4:
            return k == "type"   ? int(F::Type)
                   : k == "rwbs" ? int(F::Rwbs)
                   : k == "slba" ? int(F::Slba)
                   : k == "disk" ? int(F::Disk)
                   : k == "comm" ? int(F::Comm)
                   : k == "name" ? int(F::Name)
                                 : kNone;
        case 5:
            return k == "bytes" ? int(F::Bytes) : k == "count" ? int(F::Count) : k == "files" ? int(F::Files) : kNone;
        case 6:
            return k == "sector"   ? int(F::Sector)
                   : k == "events" ? int(F::Events)
                   : k == "offset" ? int(F::Offset)
                   : k == "fs_dev" ? int(F::FsDev)
                   : k == "direct" ? int(F::Direct)
                                   : kNone;
        case 7:
            return k == "dropped" ? int(F::Dropped) : k == "ts_exit" ? int(F::TsExit) : kNone;
        case 8:
            return k == "ts_issue"   ? int(F::TsIssue)
                   : k == "ts_enter" ? int(F::TsEnter)
                   : k == "trace_id" ? int(F::TraceId)
                                     : kNone;
        case 9:
            return k == "user_data" ? int(F::UserData) : k == "file_size" ? int(F::FileSize) : kNone;
        case 11:
            return k == "ts_complete" ? int(F::TsComplete) : kNone;
        case 15:
            return k == "negative_deltas" ? int(F::NegativeDeltas) : kNone;
        case 19:
            return k == "unmatched_completes" ? int(F::UnmatchedCompletes) : kNone;
        default:
            return kNone;
    }
}

std::string_view* string_slot(EventRecord& r, int f) {
    switch (EventField(f)) {
        case EventField::Type:
            return &r.type;
        case EventField::Src:
            return &r.src;
        case EventField::Dev:
            return &r.dev;
        case EventField::Disk:
            return &r.disk;
        case EventField::Op:
            return &r.op;
        case EventField::Rwbs:
            return &r.rwbs;
        case EventField::Comm:
            return &r.comm;
        case EventField::Name:
            return &r.name;
        case EventField::FsDev:
            return &r.fs_dev;
        case EventField::TraceId:
            return &r.trace_id;
        default:
            return &r.key;
    }
}

uint64_t* uint_slot(EventRecord& r, int f) {
    switch (EventField(f)) {
        case EventField::Sector:
            return &r.sector;
        case EventField::Bytes:
            return &r.bytes;
        case EventField::TsIssue:
            return &r.ts_issue;
        case EventField::TsComplete:
            return &r.ts_complete;
        case EventField::Qd:
            return &r.qd;
        case EventField::Pid:
            return &r.pid;
        case EventField::Tid:
            return &r.tid;
        case EventField::UserData:
            return &r.user_data;
        case EventField::Slba:
            return &r.slba;
        case EventField::Nlb:
            return &r.nlb;
        case EventField::Events:
            return &r.events;
        case EventField::Dropped:
            return &r.dropped;
        case EventField::UnmatchedCompletes:
            return &r.unmatched_completes;
        case EventField::TsEnter:
            return &r.ts_enter;
        case EventField::TsExit:
            return &r.ts_exit;
        case EventField::Offset:
            return &r.file_offset;
        case EventField::Count:
            return &r.count;
        case EventField::Ino:
            return &r.ino;
        case EventField::Gen:
            return &r.gen;
        case EventField::FileSize:
            return &r.file_size;
        default:
            return &r.negative_deltas;
    }
}

int64_t* int_slot(EventRecord& r, int f) { return EventField(f) == EventField::Fd ? &r.fd : &r.ret; }

// A line that is not JSON at all (as opposed to JSON with a wrong field): the kind of damage a cut-off last line has.
struct JsonSyntaxError : Error {
    using Error::Error;
};

/// The error for element `i` of a cmd's `files` whose `field` is wrong: "FILE:LINE: field 'files': element I:
/// field 'F': MSG".
[[noreturn]] void bad_part(const JsonSource& src, size_t i, const char* field, const std::string& msg) {
    src.fail("files", "element " + std::to_string(i) + ": field '" + field + "': " + msg);
}

/// The keys of a `files` element, as bits: each is required.
enum PartKey : unsigned { kPartIno = 1, kPartFsDev = 2, kPartGen = 4, kPartBytes = 8, kPartAll = 15 };
const char* const kPartNames[] = {"ino", "fs_dev", "gen", "bytes"};

/// The PartKey bit of a numeric `files` key ("ino", "gen", "bytes"); 0 for any other key (fs_dev is a string).
unsigned numeric_part_bit(std::string_view k) {
    return k == "ino" ? unsigned(kPartIno) : k == "gen" ? unsigned(kPartGen) : k == "bytes" ? unsigned(kPartBytes) : 0u;
}

/// The field of `p` that numeric key bit `bit` (from numeric_part_bit) names.
uint64_t& part_field(EventFilePart& p, unsigned bit) {
    return bit == kPartIno ? p.ino : bit == kPartGen ? p.gen : p.bytes;
}

/// Throws for element `i` of `files` that lacks one of its keys (`seen`: the PartKey bits it had).
void require_part_keys(const JsonSource& src, size_t i, unsigned seen) {
    for (unsigned b = 0; b < 4; ++b)
        if (!(seen >> b & 1)) bad_part(src, i, kPartNames[b], "missing");
}

[[noreturn]] void wrong_type(const JsonSource& src, int f, const char* got) {
    if (f < kFirstUint) src.fail(kNames[f], "expected a string");
    if (f >= kFirstBool) src.fail(kNames[f], std::string("expected true or false, got ") + got);
    if (f >= kFirstInt) src.fail(kNames[f], std::string("expected an integer, got ") + got);
    src.fail(kNames[f], std::string("expected a non-negative integer, got ") + got);
}

}  // namespace

const char* event_field_name(EventField f) { return kNames[size_t(f)]; }

const char* io_op_name(IoOp op) {
    switch (op) {
        case IoOp::Read:
            return "read";
        case IoOp::Write:
            return "write";
        case IoOp::Flush:
            return "flush";
        case IoOp::Discard:
            return "discard";
        case IoOp::Other:
            break;
    }
    return "other";
}

#ifndef KVIO_NO_SIMDJSON

// simdjson On-Demand: the line is parsed in place in the read buffer (the bytes after it are the padding).
struct EventsReader::Parser {
    simdjson::ondemand::parser parser;
    std::vector<EventFilePart> files;  // the line's `files` (views into the parser's string buffer)

    [[noreturn]] static void invalid(const JsonSource& src, simdjson::error_code e) {
        throw JsonSyntaxError(src.where() + ": not valid JSON (" + simdjson::error_message(e) + ")");
    }
    static const char* kind(simdjson::ondemand::value& v) {
        using simdjson::ondemand::json_type;
        json_type t;
        if (v.type().get(t)) return "an invalid value";
        switch (t) {
            case json_type::array:
                return "an array";
            case json_type::object:
                return "an object";
            case json_type::string:
                return "a string";
            case json_type::boolean:
                return "a boolean";
            case json_type::null:
                return "null";
            case json_type::number: {
                simdjson::ondemand::number_type nt;
                if (v.get_number_type().get(nt)) return "an invalid number";
                if (nt == simdjson::ondemand::number_type::floating_point_number) return "a fraction";
                int64_t i;
                if (nt == simdjson::ondemand::number_type::signed_integer && !v.get_int64().get(i) && i < 0)
                    return "a negative number";
                return "a number out of range";
            }
        }
        return "an invalid value";
    }

    /// A cmd's `files` array into `files` and r.files.
    void parse_files(simdjson::ondemand::value& v, EventRecord& r, const JsonSource& src) {
        using namespace simdjson;
        ondemand::array arr;
        if (auto e = v.get_array().get(arr)) {
            if (e != INCORRECT_TYPE) invalid(src, e);
            src.fail("files", std::string("expected an array, got ") + kind(v));
        }
        files.clear();
        for (auto er : arr) {
            const size_t i = files.size();
            ondemand::value ev;
            if (auto e = std::move(er).get(ev)) invalid(src, e);
            ondemand::object o;
            if (auto e = ev.get_object().get(o)) {
                if (e != INCORRECT_TYPE) invalid(src, e);
                src.fail("files", "element " + std::to_string(i) + ": expected an object, got " + kind(ev));
            }
            EventFilePart p;
            unsigned seen = 0;
            for (auto fr : o) {
                ondemand::field fld;
                if (auto e = std::move(fr).get(fld)) invalid(src, e);
                std::string_view k;
                if (auto e = fld.unescaped_key().get(k)) invalid(src, e);
                ondemand::value fv = fld.value();
                if (k == "fs_dev") {
                    if (auto e = fv.get_string().get(p.fs_dev)) {
                        if (e != INCORRECT_TYPE) invalid(src, e);
                        bad_part(src, i, "fs_dev", std::string("expected a string, got ") + kind(fv));
                    }
                    seen |= kPartFsDev;
                    continue;
                }
                const unsigned bit = numeric_part_bit(k);
                if (!bit) continue;  // other keys are skipped, as at the top level
                uint64_t u;
                if (auto e = fv.get_uint64().get(u)) {
                    if (e != INCORRECT_TYPE && e != NUMBER_OUT_OF_RANGE) invalid(src, e);
                    bad_part(src, i, std::string(k).c_str(),
                             std::string("expected a non-negative integer, got ") + kind(fv));
                }
                part_field(p, bit) = u;
                seen |= bit;
            }
            require_part_keys(src, i, seen);
            files.push_back(p);
        }
        r.files = files;
    }

    void parse(const char* b, size_t len, size_t capacity, EventRecord& r, const JsonSource& src) {
        using namespace simdjson;
        ondemand::document doc;
        if (auto e = parser.iterate(b, len, capacity).get(doc)) invalid(src, e);
        ondemand::object obj;
        if (auto e = doc.get_object().get(obj)) {
            if (e == INCORRECT_TYPE) throw Error(src.where() + ": expected a JSON object");
            invalid(src, e);
        }
        for (auto fr : obj) {
            ondemand::field fld;
            if (auto e = std::move(fr).get(fld)) invalid(src, e);
            // Keys are compared raw (the format's keys hold no escapes): up to the closing quote.
            const char* k = fld.key().raw();
            const char* q = static_cast<const char*>(std::memchr(k, '"', size_t(b + len - k)));
            if (!q) invalid(src, UNCLOSED_STRING);
            int f = lookup(std::string_view(k, size_t(q - k)));
            if (f == kNone) continue;  // skipped by the iteration, unchecked
            ondemand::value v = fld.value();
            r.has |= uint64_t{1} << f;
            if (f == kFiles) {
                parse_files(v, r, src);
            } else if (f < kFirstUint) {
                std::string_view s;
                if (auto e = v.get_string().get(s)) {
                    if (e != INCORRECT_TYPE) invalid(src, e);
                    wrong_type(src, f, kind(v));
                }
                *string_slot(r, f) = s;
            } else if (f >= kFirstBool) {
                if (auto e = v.get_bool().get(r.direct)) {
                    if (e != INCORRECT_TYPE) invalid(src, e);
                    simdjson::ondemand::json_type t;
                    wrong_type(src, f,
                               !v.type().get(t) && t == simdjson::ondemand::json_type::number ? "a number" : kind(v));
                }
            } else if (f >= kFirstInt) {
                int64_t i;
                if (auto e = v.get_int64().get(i)) {
                    if (e != INCORRECT_TYPE && e != NUMBER_OUT_OF_RANGE) invalid(src, e);
                    wrong_type(src, f, kind(v));
                }
                *int_slot(r, f) = i;
            } else {
                uint64_t u;
                if (auto e = v.get_uint64().get(u)) {
                    if (e != INCORRECT_TYPE && e != NUMBER_OUT_OF_RANGE) invalid(src, e);
                    wrong_type(src, f, kind(v));
                }
                *uint_slot(r, f) = u;
            }
        }
        const char* rest;
        if (!doc.current_location().get(rest))
            throw JsonSyntaxError(src.where() + ": not valid JSON (content after the object)");
    }
};

#else

// nlohmann_json: one DOM per line (the static build, which has no simdjson archive to link).
struct EventsReader::Parser {
    json j;
    std::string strings[size_t(EventField::Sector)];
    std::vector<EventFilePart> files;
    std::vector<std::string> file_devs;  // the parts' fs_dev strings (files' views point into them)

    /// A cmd's `files` array into `files` and r.files.
    void parse_files(const json& v, EventRecord& r, const JsonSource& src) {
        if (!v.is_array()) src.fail("files", "expected an array");
        files.assign(v.size(), EventFilePart{});
        file_devs.resize(v.size());  // before any view is taken: a reallocation moves short strings
        for (size_t i = 0; i < v.size(); ++i) {
            const json& o = v[i];
            if (!o.is_object()) src.fail("files", "element " + std::to_string(i) + ": expected an object");
            unsigned seen = 0;
            for (auto& [k, fv] : o.items()) {
                if (k == "fs_dev") {
                    if (!fv.is_string()) bad_part(src, i, "fs_dev", "expected a string");
                    file_devs[i] = fv.get<std::string>();
                    seen |= kPartFsDev;
                    continue;
                }
                const unsigned bit = numeric_part_bit(k);
                if (!bit) continue;
                if (!fv.is_number_unsigned()) bad_part(src, i, k.c_str(), "expected a non-negative integer");
                part_field(files[i], bit) = fv.get<uint64_t>();
                seen |= bit;
            }
            require_part_keys(src, i, seen);
            files[i].fs_dev = file_devs[i];
        }
        r.files = files;
    }

    void parse(const char* b, size_t len, size_t, EventRecord& r, const JsonSource& src) {
        try {
            j = json::parse(b, b + len);
        } catch (const json::parse_error& e) {
            throw JsonSyntaxError(src.where() + ": not valid JSON (" + e.what() + ")");
        }
        if (!j.is_object()) throw Error(src.where() + ": expected a JSON object");
        for (auto& [k, v] : j.items()) {
            int f = lookup(k);
            if (f == kNone) continue;
            r.has |= uint64_t{1} << f;
            if (f == kFiles) {
                parse_files(v, r, src);
            } else if (f < kFirstUint) {
                if (!v.is_string()) wrong_type(src, f, "");
                strings[f] = v.get<std::string>();
                *string_slot(r, f) = strings[f];
            } else if (f >= kFirstBool && v.is_boolean()) {
                r.direct = v.get<bool>();
            } else if (f >= kFirstInt && f < kFirstBool && v.is_number_integer() &&
                       (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX))) {
                *int_slot(r, f) = v.get<int64_t>();
            } else if (f < kFirstInt && v.is_number_unsigned()) {
                *uint_slot(r, f) = v.get<uint64_t>();
            } else {
                wrong_type(src, f,
                           f >= kFirstBool && v.is_number() ? "a number"
                           : v.is_number_unsigned()         ? "a number out of range"
                           : v.is_number_integer()          ? "a negative number"
                           : v.is_number_float()            ? "a fraction"
                           : v.is_string()                  ? "a string"
                           : v.is_boolean()                 ? "a boolean"
                           : v.is_null()                    ? "null"
                           : v.is_array()                   ? "an array"
                                                            : "an object");
            }
        }
    }
};

#endif

EventsReader::EventsReader(const std::string& path) : src_{path, 0}, parser_(std::make_unique<Parser>()) {
    cap_ = kBufBytes;
    evbin::open_buffered(path, cap_ + kPadding, f_, buf_);
    len_ = std::fread(buf_, 1, sizeof evbin::kMagic, f_);
    if (evbin::has_magic(buf_, len_)) {  // the capture reader takes the stream over: a pipe cannot be reopened
        std::FILE* f = f_;
        f_ = nullptr;
        try {
            bin_ = std::make_unique<evbin::Reader>(path, f, buf_, len_);  // closes f when it throws
        } catch (...) {
            std::free(buf_);
            throw;
        }
        len_ = 0;
    }
}

EventsReader::~EventsReader() {
    if (f_) std::fclose(f_);
    std::free(buf_);
}

// Next line as [b, e) without the newline; false at end of file.
bool EventsReader::read_line(const char*& b, const char*& e) {
    for (;;) {
        const char* start = buf_ + pos_;
        const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
        if (nl) {
            b = start;
            e = nl;
            pos_ = size_t(nl - buf_) + 1;
            ++src_.line;
            unterminated_ = false;
            return true;
        }
        if (eof_) {
            if (pos_ == len_) return false;
            b = start;  // last line without a newline
            e = buf_ + len_;
            pos_ = len_;
            ++src_.line;
            unterminated_ = true;
            return true;
        }
        // Move the partial line to the front and refill; double the buffer for a line longer than it.
        size_t rest = len_ - pos_;
        std::memmove(buf_, buf_ + pos_, rest);
        pos_ = 0;
        len_ = rest;
        if (len_ == cap_) {
            char* nb = static_cast<char*>(std::realloc(buf_, 2 * cap_ + kPadding));
            if (!nb) throw std::bad_alloc();
            buf_ = nb;
            cap_ *= 2;
        }
        size_t n = std::fread(buf_ + len_, 1, cap_ - len_, f_);
        if (n == 0) {
            if (std::ferror(f_)) throw Error(src_.file + ": read error: " + std::strerror(errno));
            eof_ = true;
        }
        len_ += n;
    }
}

// A kvio.events.bin record as the kvio.events/1 record `kvio dump` would print for it (the fields readers use).
// The file parts of the capture's cmd record last read, as a JSONL record's `files` reads.
void EventsReader::bin_parts(EventRecord& r) {
    const auto parts = bin_->files();
    bin_files_.resize(parts.size());
    bin_devs_.resize(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        const DevId d = decode_kernel_dev(parts[i].fs_dev);
        const int n = std::snprintf(bin_devs_[i].data(), bin_devs_[i].size(), "%u:%u", d.major, d.minor);
        bin_files_[i] = {std::string_view(bin_devs_[i].data(), size_t(n)), parts[i].ino, parts[i].gen, parts[i].bytes};
    }
    r.files = bin_files_;
    r.has |= uint64_t{1} << unsigned(EventField::Files);
}

bool EventsReader::next_bin(EventRecord& r) {
    evbin::Kind kind;
    std::string_view p;
    while (bin_->next(kind, p)) {
        src_.line = size_t(bin_->record());
        r = EventRecord{};
        using F = EventField;
        auto set = [&r](F f) { r.has |= uint64_t{1} << unsigned(f); };
        switch (kind) {
            case evbin::Kind::Device:
                continue;  // the capture reader keeps the device table
            case evbin::Kind::Cmd: {
                kvio_cmd_event e;
                std::memcpy(&e, p.data(), sizeof e);
                const evbin::DeviceFacts& d = *bin_->device(e.dev);  // checked by evbin::Reader::next
                const bool nvme = e.src == KVIO_SRC_NVME;
                r.type = "cmd", r.src = nvme ? "nvme" : "block", r.dev = d.majmin, r.disk = d.disk;
                r.op = nvme ? op_name_from_nvme_opcode(e.opcode) : op_name_from_opf(e.opf);
                r.rwbs = std::string_view(rwbs_, rwbs_chars(e.opf, rwbs_));
                std::memcpy(comm_, e.owner.comm, sizeof comm_);
                r.comm = std::string_view(comm_, strnlen(comm_, sizeof comm_));
                for (F f : {F::Type, F::Src, F::Dev, F::Disk, F::Op, F::Rwbs, F::Comm, F::Sector, F::Bytes, F::TsIssue,
                            F::Qd, F::Pid, F::Tid})
                    set(f);
                r.bytes = nvme ? uint64_t(e.nlb) * d.lba_bytes : e.bytes;
                r.sector = nvme ? e.slba * (d.lba_bytes / 512) : e.sector;
                r.ts_issue = e.ts_issue, r.qd = e.qd, r.pid = e.owner.pid, r.tid = e.owner.tid;
                if (!e.complete_lost) r.ts_complete = e.ts_complete, set(F::TsComplete);
                if (e.has_user_data) r.user_data = e.owner.user_data, set(F::UserData);
                if (nvme) r.slba = e.slba, r.nlb = e.nlb, set(F::Slba), set(F::Nlb);
                if (!nvme && e.slba) {  // --files: a block record's NVMe words hold its file (bpf/file_attr.h)
                    const DevId fd = decode_kernel_dev(uint32_t(e.nlb));
                    const int n = std::snprintf(fs_dev_, sizeof fs_dev_, "%u:%u", fd.major, fd.minor);
                    r.fs_dev = std::string_view(fs_dev_, size_t(n));
                    r.ino = e.slba, r.gen = e.nsid;
                    set(F::FsDev), set(F::Ino), set(F::Gen);
                }
                if (!bin_->files().empty()) bin_parts(r);
                return true;
            }
            case evbin::Kind::Stages:  // as a JSONL "stages" record reads: its type only (no reader needs more)
                r.type = "stages";
                set(F::Type);
                return true;
            case evbin::Kind::Syscall: {
                kvio_syscall_event e;
                std::memcpy(&e, p.data(), sizeof e);
                std::memcpy(comm_, e.comm, sizeof comm_);
                r.type = "syscall", r.comm = std::string_view(comm_, strnlen(comm_, sizeof comm_));
                r.name = syscall_name(e.nr);
                r.pid = e.pid, r.tid = e.tid, r.fd = e.fd, r.ret = e.ret, r.ts_enter = e.ts_enter,
                r.ts_exit = e.ts_exit;
                for (F f : {F::Type, F::Comm, F::Name, F::Pid, F::Tid, F::Fd, F::Ret, F::TsEnter, F::TsExit}) set(f);
                if (kvio_syscall_has_offset(e.nr, e.flags)) r.file_offset = e.offset, set(F::Offset);
                if (kvio_syscall_has_count(e.nr)) r.count = e.count, set(F::Count);
                if (e.flags & KVIO_SYSF_FILE) {
                    const DevId d = decode_kernel_dev(e.fs_dev);
                    int n = std::snprintf(fs_dev_, sizeof fs_dev_, "%u:%u", d.major, d.minor);
                    r.fs_dev = std::string_view(fs_dev_, size_t(n));
                    r.ino = e.ino, r.gen = e.gen, r.file_size = e.file_size, r.direct = e.flags & KVIO_SYSF_DIRECT;
                    for (F f : {F::FsDev, F::Ino, F::Gen, F::FileSize, F::Direct}) set(f);
                }
                return true;
            }
            case evbin::Kind::Files:  // not returned: its parts are the next Cmd's files()
                continue;
            case evbin::Kind::Json:
                json_.assign(p.data(), p.size());
                json_.append(kPadding, '\0');
                parser_->parse(json_.data(), p.size(), json_.size(), r, src_);
                return true;
        }
    }
    return false;
}

std::string whole_document_kind(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > (uint64_t(256) << 20)) return "";
    json j;
    try {
        j = read_json_file(path);
    } catch (const Error&) {
        return "";
    }
    if (j.is_object() && j.contains("schema") && j["schema"].is_string())
        return "a " + j["schema"].get<std::string>() + " document";
    if (j.is_object() && j.contains("schema_version") && j.contains("device_geometry"))
        return "a kvio record manifest (kvio gen --record)";
    return "a JSON document";
}

namespace {

/// The first line [b, e) of a JSONL file that is not kvio.events/1, when it says what it is: "a kvio.semantic/1 file"
/// (its meta record's "schema"), "a kvio.trace/1 document" (a one-line trace.json); else "".
std::string first_line_kind(const char* b, const char* e) {
    const json j = json::parse(b, e, nullptr, false);
    if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) return "";
    const std::string s = j["schema"].get<std::string>();
    return s.find("semantic") != std::string::npos ? "a " + s + " file (kvio gen --semantic)" : "a " + s + " document";
}

/// The error for a file that is not kvio.events/1, `kind` being what it says it is (first_line_kind,
/// whole_document_kind). A file that names kvio.events/1 itself is told what is wrong with it instead of that it is
/// not what it claims: one JSON document over several lines (`whole`), or a first line that is no event record.
std::string not_events_message(const std::string& file, const std::string& kind, bool whole) {
    const std::string rule = " (one JSON object per line, as `kvio trace --events` writes)";
    if (kind.find("kvio.events/1") == std::string::npos) return file + ":1: is " + kind + ", not kvio.events/1" + rule;
    return whole
               ? file + ":1: names kvio.events/1 but is one JSON document over several lines, not kvio.events/1" + rule
               : file + ":1: names kvio.events/1 but is not an event record (field 'type': cmd, syscall or summary)";
}

}  // namespace

bool EventsReader::next(EventRecord& r) {
    if (bin_) return next_bin(r);
    const char *b, *e;
    while (read_line(b, e)) {
        const char* p = b;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
        if (p == e) continue;
        r = EventRecord{};
        try {
            parser_->parse(p, size_t(e - p), size_t(buf_ + cap_ + kPadding - p), r, src_);
        } catch (const JsonSyntaxError&) {
            if (src_.line == 1 && !unterminated_) {  // a valid file of another format: say which, not "not valid JSON"
                const std::string kind = whole_document_kind(src_.file);
                if (!kind.empty()) throw Error(not_events_message(src_.file, kind, true));
            }
            if (!unterminated_) throw;
            warn(torn_last_line_warning(src_));
            return false;
        }
        if (src_.line == 1 && (!r.has_field(EventField::Type) ||
                               (r.type != "cmd" && r.type != "syscall" && r.type != "stages" && r.type != "summary"))) {
            // a JSONL file of another format (a semantic log's "meta" record, a one-line trace.json): say which
            const std::string kind = first_line_kind(p, e);
            if (!kind.empty()) throw Error(not_events_message(src_.file, kind, false));
        }
        return true;
    }
    return false;
}

bool EventsReader::next_checked(EventRecord& r) {
    if (!next(r)) return false;
    check(r);
    tally_.records++;
    tally_.last_line = src_.line;
    tally_.capture = bin_ != nullptr;
    if (r.kind == EventType::Summary) {
        tally_.summary = true;
        tally_.dropped = r.dropped;
        tally_.trace_id = r.trace_id;
    } else if (r.kind == EventType::Cmd && (r.io == IoOp::Read || r.io == IoOp::Write) &&
               !r.has_field(EventField::TsComplete)) {
        tally_.lost_completions++;
    }
    return true;
}

void check_same_trace_id(const std::string& events_path, std::string_view events_id, const std::string& summary_path,
                         std::string_view summary_id) {
    if (events_id.empty() || summary_id.empty() || events_id == summary_id) return;
    throw Error(events_path + " and " + summary_path + " are not the same trace: trace_id " + std::string(events_id) +
                " in " + events_path + ", " + std::string(summary_id) + " in " + summary_path +
                " (give the --events and --json files of one `kvio trace`)");
}

bool warn_stream_end(const std::string& path, const EventsTally& t, const std::string& what) {
    if (t.dropped)
        warn(path + ": " + std::to_string(t.dropped) +
             " records dropped by the tracer (the summary's 'dropped'): " + what);
    if (t.lost_completions)
        warn(path + ": " + std::to_string(t.lost_completions) +
             " read/write commands lost their completion ('complete_lost': no file is known for them): " + what);
    if (t.summary) return false;
    warn(path + ": no closing summary record " +
         (t.records ? "after its last complete record (" + std::string(t.capture ? "record " : "line ") +
                          std::to_string(t.last_line) + ")"
                    : std::string("(no record at all)")) +
         ": the stream is cut (the trace was killed, or the file truncated): " + what);
    return true;
}

void EventsReader::check(EventRecord& r) {
    using F = EventField;
    require(r, F::Type);
    if (r.type == "cmd")
        r.kind = EventType::Cmd;
    else if (r.type == "syscall") {
        r.kind = EventType::Syscall;
        return;
    } else if (r.type == "summary") {
        r.kind = EventType::Summary;
        return;
    } else if (r.type == "stages") {
        r.kind = EventType::Stages;  // --breakdown's per-request stages: no reader needs them
        return;
    } else
        src_.fail("type",
                  "expected \"cmd\", \"syscall\", \"stages\" or \"summary\", got \"" + std::string(r.type) + "\"");
    for (F f : {F::Src, F::Dev, F::Op, F::Bytes, F::TsIssue}) require(r, f);
    if (r.src == "nvme")
        r.nvme = true;
    else if (r.src != "block")
        src_.fail("src", "expected \"block\" or \"nvme\", got \"" + std::string(r.src) + "\"");
    const std::string_view op = r.op;
    r.io = op == "read"      ? IoOp::Read
           : op == "write"   ? IoOp::Write
           : op == "flush"   ? IoOp::Flush
           : op == "discard" ? IoOp::Discard
           : op == "other"
               ? IoOp::Other
               : (src_.fail("op", "expected read|write|flush|discard|other, got \"" + std::string(op) + "\""),
                  IoOp::Other);
    if (!have_dev_ || r.dev != last_dev_) {
        auto d = parse_dev_string(std::string(r.dev));
        if (!d) src_.fail("dev", "expected \"MAJ:MIN\", got \"" + std::string(r.dev) + "\"");
        last_dev_ = r.dev;
        last_kdev_ = kernel_dev(*d);
        have_dev_ = true;
    }
    r.kdev = last_kdev_;
    if (r.has_field(F::TsComplete) && r.ts_complete < r.ts_issue)
        src_.fail("ts_complete",
                  "is before ts_issue (" + std::to_string(r.ts_complete) + " < " + std::to_string(r.ts_issue) + ")");
    const bool data = r.io == IoOp::Read || r.io == IoOp::Write;
    if (data && r.bytes > UINT32_MAX)
        src_.fail("bytes", std::to_string(r.bytes) + " is not a command size (at most 4 GiB)");
    if (r.nvme) {
        if (r.has_field(F::Files)) src_.fail("files", "on an nvme command (only block commands have parts)");
        require(r, F::Slba);
        require(r, F::Nlb);
        if (data && r.nlb == 0) src_.fail("nlb", "0 blocks in a " + std::string(op) + " (nlb counts from 1)");
        if (data && r.bytes % r.nlb)
            src_.fail("bytes", std::to_string(r.bytes) + " is not a multiple of nlb " + std::to_string(r.nlb));
        const uint64_t lba = r.nlb ? r.bytes / r.nlb : 0;
        if (data && lba && r.slba > UINT64_MAX / lba)
            src_.fail("slba", std::to_string(r.slba) + " × " + std::to_string(lba) + " bytes is beyond any device");
        r.offset = r.slba * lba;
        if (!r.has_field(F::Sector)) r.sector = r.offset / 512;
    } else {
        require(r, F::Sector);
        uint64_t in_files = 0;
        for (const EventFilePart& p : r.files) {
            if (p.bytes > r.bytes - in_files)
                src_.fail("files", "its parts hold more bytes than the command's " + std::to_string(r.bytes));
            in_files += p.bytes;
        }
        // A flush carries no sector: the kernel reports sector -1 for it.
        if (data && r.sector > (UINT64_MAX >> 9))
            src_.fail("sector", std::to_string(r.sector) + " × 512 bytes is beyond any device");
        r.offset = r.sector << 9;
    }
}

}  // namespace kvio
