// common/events_reader.h: the kvio.events/1 reader validate and the distiller share.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "common/events_reader.h"
#include "common/warn.h"

using namespace kvio;

namespace {

// A file under /tmp with the given bytes, removed at destruction.
struct TmpFile {
    std::string path;
    explicit TmpFile(const std::string& text) {
        char t[] = "/tmp/kvio-evrd-XXXXXX";
        int fd = mkstemp(t);
        EXPECT_GE(fd, 0);
        close(fd);
        path = t;
        std::ofstream(path, std::ios::binary) << text;
    }
    ~TmpFile() { std::remove(path.c_str()); }
};

const std::string kBlock =
    R"({"bytes":4096,"comm":"kvio","d2c_ns":500,"dev":"7:0","disk":"loop0","op":"write","pid":42,"qd":1,"rwbs":"WS",)"
    R"("sector":2048,"src":"block","tid":43,"ts_complete":1500,"ts_issue":1000,"type":"cmd"})";

// Reads the whole file; the message of the kvio::Error it throws, or "" when none. `keep` gets the records
// (their string views are dangling after the next record: use `types`).
std::vector<std::string> types;
std::string read_all_error(const std::string& path, std::vector<EventRecord>* keep = nullptr, size_t* lines = nullptr) {
    types.clear();
    try {
        EventsReader rd(path);
        EventRecord r;
        while (rd.next(r)) {
            if (keep) keep->push_back(r);
            types.emplace_back(r.type);
            if (lines) *lines = rd.source().line;
        }
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(EventsReader, ReadsAllKnownFields) {
    TmpFile f(kBlock + "\n");
    EventsReader rd(f.path);
    EventRecord r;
    ASSERT_TRUE(rd.next(r));
    EXPECT_EQ(rd.source().line, 1u);
    EXPECT_EQ(r.type, "cmd");
    EXPECT_EQ(r.src, "block");
    EXPECT_EQ(r.dev, "7:0");
    EXPECT_EQ(r.disk, "loop0");
    EXPECT_EQ(r.op, "write");
    EXPECT_EQ(r.rwbs, "WS");
    EXPECT_EQ(r.comm, "kvio");
    EXPECT_EQ(r.bytes, 4096u);
    EXPECT_EQ(r.sector, 2048u);
    EXPECT_EQ(r.ts_issue, 1000u);
    EXPECT_EQ(r.ts_complete, 1500u);
    EXPECT_EQ(r.qd, 1u);
    EXPECT_EQ(r.pid, 42u);
    EXPECT_EQ(r.tid, 43u);
    EXPECT_TRUE(r.has_field(EventField::Sector));
    EXPECT_FALSE(r.has_field(EventField::UserData));
    EXPECT_FALSE(r.has_field(EventField::Key));
    EXPECT_FALSE(rd.next(r));
}

TEST(EventsReader, WrongTypeNamesFileLineAndField) {
    struct Case {
        std::string value, field, msg;
    };
    for (const Case& c :
         {Case{R"("sector":"12")", "sector", "expected a non-negative integer, got a string"},
          Case{R"("sector":-1)", "sector", "expected a non-negative integer, got a negative number"},
          Case{R"("bytes":1.5)", "bytes", "expected a non-negative integer, got a fraction"},
          Case{R"("qd":null)", "qd", "expected a non-negative integer, got null"},
          Case{R"("ts_issue":true)", "ts_issue", "expected a non-negative integer, got a boolean"},
          Case{R"("pid":[1])", "pid", "expected a non-negative integer, got an array"},
          Case{R"("user_data":{"a":1})", "user_data", "expected a non-negative integer, got an object"},
          Case{R"("dev":7)", "dev", "expected a string"}, Case{R"("key":null)", "key", "expected a string"}}) {
        TmpFile f(kBlock + "\n" + kBlock + "\n" + R"({"type":"cmd",)" + c.value + "}\n" + kBlock + "\n");
        EXPECT_EQ(read_all_error(f.path), f.path + ":3: field '" + c.field + "': " + c.msg) << c.value;
    }
}

TEST(EventsReader, UnknownFieldsAreNotChecked) {
    TmpFile f(R"({"type":"syscall","ret":-22,"name":"pread64","lat_ns":1.5,"nested":{"sector":"x"}})"
              "\n");
    std::vector<EventRecord> recs;
    EXPECT_EQ(read_all_error(f.path, &recs), "");
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(types[0], "syscall");
    EXPECT_EQ(recs[0].ret, -22);  // the syscall fields load_syscalls reads are checked (common/syscall_trace.h)
    EXPECT_FALSE(recs[0].has_field(EventField::Sector));  // a nested "sector" is not the record's
}

TEST(EventsReader, RequireNamesTheMissingField) {
    TmpFile f("\n" + kBlock + "\n" + R"({"type":"cmd","dev":"7:0"})" + "\n");
    EventsReader rd(f.path);
    EventRecord r;
    ASSERT_TRUE(rd.next(r));
    rd.require(r, EventField::Bytes);
    ASSERT_TRUE(rd.next(r));
    EXPECT_EQ(rd.source().line, 3u);
    rd.require(r, EventField::Dev);
    try {
        rd.require(r, EventField::Bytes);
        FAIL() << "no error for a missing field";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), f.path + ":3: field 'bytes': missing");
    }
}

TEST(EventsReader, MalformedLines) {
    {
        TmpFile f(kBlock + "\n" + R"({"type":"cmd","bytes":)" + "\n");
        std::string e = read_all_error(f.path);
        EXPECT_EQ(e.rfind(f.path + ":2: not valid JSON (", 0), 0u) << e;
    }
    {
        TmpFile f(kBlock + "\n" + kBlock + "\n[1,2]\n");
        EXPECT_EQ(read_all_error(f.path), f.path + ":3: expected a JSON object");
    }
    {
        TmpFile f(kBlock + " {\"type\":\"cmd\"}\n");
        std::string e = read_all_error(f.path);
        EXPECT_EQ(e.rfind(f.path + ":1: not valid JSON", 0), 0u) << e;
    }
    EXPECT_THROW(EventsReader("/nonexistent/kvio-events.jsonl"), Error);
}

TEST(EventsReader, CrlfBlankLinesAndNoFinalNewline) {
    TmpFile f("\r\n  \t\r\n" + kBlock + "\r\n\n" + kBlock + "  \r\n" + R"({"type":"summary","dropped":3,"events":2})");
    std::vector<EventRecord> recs;
    size_t line = 0;
    EXPECT_EQ(read_all_error(f.path, &recs, &line), "");
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(line, 6u);  // the summary, the last line, has no newline
    EXPECT_EQ(recs[1].bytes, 4096u);
    EXPECT_EQ(types[2], "summary");
    EXPECT_EQ(recs[2].dropped, 3u);
    EXPECT_EQ(recs[2].events, 2u);
}

TEST(EventsReader, LineLongerThanTheReadBuffer) {
    // 9 MiB of one string field (the read buffer is 4 MiB and grows), between two ordinary records.
    std::string big = R"({"type":"cmd","comm":")" + std::string(9u << 20, 'x') + R"(","bytes":7})";
    TmpFile f(kBlock + "\n" + big + "\n" + kBlock + "\n" + R"({"type":"cmd","bytes":"7"})" + "\n");
    std::vector<EventRecord> recs;
    std::string e = read_all_error(f.path, &recs);
    EXPECT_EQ(e, f.path + ":4: field 'bytes': expected a non-negative integer, got a string");
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].bytes, 4096u);
    EXPECT_EQ(recs[2].bytes, 4096u);
}

// The same values as a DOM parse of each line with nlohmann_json (how both readers parsed before).
TEST(EventsReader, MatchesNlohmannOnASampleFile) {
    std::string text;
    for (int i = 0; i < 3000; ++i) {
        json j = {{"type", "cmd"},
                  {"src", i % 3 ? "block" : "nvme"},
                  {"dev", i % 2 ? "7:0" : "259:1"},
                  {"disk", "d\"q\\u"},
                  {"op", i % 4 ? "read" : "write"},
                  {"rwbs", "R"},
                  {"sector", uint64_t(i) * 977},
                  {"bytes", 4096 + i},
                  {"ts_issue", 1'000'000'000'000ull + uint64_t(i) * 1000},
                  {"ts_complete", 1'000'000'000'000ull + uint64_t(i) * 1000 + 77},
                  {"qd", i % 32},
                  {"pid", 7},
                  {"tid", 8 + i % 5},
                  {"comm", "k\u00e9vio"},
                  {"d2c_ns", 77}};
        if (i % 3 == 0) j.update({{"slba", i}, {"nlb", 8}, {"qid", 1}, {"cid", i}});
        if (i % 5 == 0) j["user_data"] = (uint64_t(i) << 32) | 1;
        if (i % 7 == 0) j["key"] = "kvio/m/tp1/rank0/chunk" + std::to_string(i);
        if (i == 0) j["ts_issue"] = UINT64_MAX;
        text += j.dump() + "\n";
        if (i % 100 == 0)
            text +=
                R"({"type":"syscall","name":"pwrite64","pid":7,"tid":8,"ret":-5,"lat_ns":3,"fd":-1,"offset":4096,)"
                R"("count":8,"ts_enter":10,"ts_exit":13,"ino":12,"fs_dev":"7:3","gen":99,"direct":true,"file_size":1})"
                "\n";
    }
    text += R"({"type":"summary","events":3000,"dropped":1,"unmatched_completes":2,"negative_deltas":3})"
            "\n";
    TmpFile f(text);

    EventsReader rd(f.path);
    JsonlReader ref(f.path);
    EventRecord r;
    json j;
    size_t n = 0;
    while (ref.next(j)) {
        ASSERT_TRUE(rd.next(r)) << "line " << ref.source().line;
        ASSERT_EQ(rd.source().line, ref.source().line);
        for (int fi = 0; fi < int(EventField::Count_); ++fi) {
            auto fld = EventField(fi);
            const char* name = event_field_name(fld);
            ASSERT_EQ(r.has_field(fld), j.contains(name)) << name << " line " << ref.source().line;
            if (!j.contains(name)) continue;
            if (j[name].is_string()) {
                std::string_view got = fld == EventField::Type    ? r.type
                                       : fld == EventField::Src   ? r.src
                                       : fld == EventField::Dev   ? r.dev
                                       : fld == EventField::Disk  ? r.disk
                                       : fld == EventField::Op    ? r.op
                                       : fld == EventField::Rwbs  ? r.rwbs
                                       : fld == EventField::Comm  ? r.comm
                                       : fld == EventField::Name  ? r.name
                                       : fld == EventField::FsDev ? r.fs_dev
                                                                  : r.key;
                EXPECT_EQ(got, j[name].get<std::string>()) << name;
            } else if (j[name].is_boolean()) {
                ASSERT_EQ(fld, EventField::Direct);
                EXPECT_EQ(r.direct, j[name].get<bool>());
            } else if (fld == EventField::Fd || fld == EventField::Ret) {
                EXPECT_EQ(fld == EventField::Fd ? r.fd : r.ret, j[name].get<int64_t>()) << name;
            } else {
                uint64_t v = get_u64(j, name, ref.source());
                uint64_t got = 0;
                switch (fld) {
                    case EventField::Sector:
                        got = r.sector;
                        break;
                    case EventField::Bytes:
                        got = r.bytes;
                        break;
                    case EventField::TsIssue:
                        got = r.ts_issue;
                        break;
                    case EventField::TsComplete:
                        got = r.ts_complete;
                        break;
                    case EventField::Qd:
                        got = r.qd;
                        break;
                    case EventField::Pid:
                        got = r.pid;
                        break;
                    case EventField::Tid:
                        got = r.tid;
                        break;
                    case EventField::UserData:
                        got = r.user_data;
                        break;
                    case EventField::Slba:
                        got = r.slba;
                        break;
                    case EventField::Nlb:
                        got = r.nlb;
                        break;
                    case EventField::Events:
                        got = r.events;
                        break;
                    case EventField::Dropped:
                        got = r.dropped;
                        break;
                    case EventField::UnmatchedCompletes:
                        got = r.unmatched_completes;
                        break;
                    case EventField::TsEnter:
                        got = r.ts_enter;
                        break;
                    case EventField::TsExit:
                        got = r.ts_exit;
                        break;
                    case EventField::Offset:
                        got = r.file_offset;
                        break;
                    case EventField::Count:
                        got = r.count;
                        break;
                    case EventField::Ino:
                        got = r.ino;
                        break;
                    case EventField::Gen:
                        got = r.gen;
                        break;
                    case EventField::FileSize:
                        got = r.file_size;
                        break;
                    default:
                        got = r.negative_deltas;
                        break;
                }
                EXPECT_EQ(got, v) << name << " line " << ref.source().line;
            }
        }
        ++n;
    }
    EXPECT_FALSE(rd.next(r));
    EXPECT_EQ(n, 3000u + 30u + 1u);
}

namespace {
// Reads `path` with the format's rules (next_checked); the error, or "". `n` gets the records read.
std::string read_checked_error(const std::string& path, size_t* n = nullptr) {
    size_t count = 0;
    try {
        EventsReader rd(path);
        EventRecord r;
        while (rd.next_checked(r)) ++count;
    } catch (const Error& e) {
        if (n) *n = count;
        return e.what();
    }
    if (n) *n = count;
    return "";
}
struct Warnings {
    std::vector<std::string> got;
    std::function<void(const std::string&)> old;
    Warnings() {
        old = set_warning_sink([this](const std::string& w) { got.push_back(w); });
    }
    ~Warnings() { set_warning_sink(old); }
};
}  // namespace

// A trace killed mid-write: its torn last line is dropped with a warning; the same line inside the file is an error.
TEST(EventsReader, TornLastLineIsDroppedWithAWarning) {
    const std::string torn = R"({"type":"cmd","src":"block","dev":"7:0","bytes":40)";
    {
        Warnings w;
        TmpFile f(kBlock + "\n" + kBlock + "\n" + torn);
        size_t n = 0;
        EXPECT_EQ(read_checked_error(f.path, &n), "");
        EXPECT_EQ(n, 2u);
        EXPECT_EQ(w.got,
                  std::vector<std::string>{f.path + ":3: the last line is cut off (the writer was killed?): dropped"});
        // JsonlReader (kvio.semantic/1, every other JSONL) follows the same rule.
        w.got.clear();
        JsonlReader jr(f.path);
        json j;
        size_t m = 0;
        while (jr.next(j)) ++m;
        EXPECT_EQ(m, 2u);
        EXPECT_EQ(w.got.size(), 1u);
    }
    {
        Warnings w;
        TmpFile f(kBlock + "\n" + torn + "\n" + kBlock + "\n");
        std::string e = read_checked_error(f.path);
        EXPECT_EQ(e.rfind(f.path + ":2: not valid JSON (", 0), 0u) << e;
        TmpFile g(kBlock + "\n" + torn + "\n");  // ends with a newline: a complete line that is bad, not a torn one
        e = read_checked_error(g.path);
        EXPECT_EQ(e.rfind(g.path + ":2: not valid JSON (", 0), 0u) << e;
        EXPECT_TRUE(w.got.empty());
    }
    {
        // A last line without a newline that parses is a record, and one that breaks a rule is still an error.
        TmpFile f(kBlock + "\n" + R"({"type":"cmd","bytes":"x"})");
        EXPECT_EQ(read_checked_error(f.path),
                  f.path + ":2: field 'bytes': expected a non-negative integer, got a string");
    }
}

// The rules every command applies (validate used to accept an unknown type and ts_complete < ts_issue, distill
// "dev":"abc"): one message per broken rule, naming file, line and field.
TEST(EventsReader, RulesNameFileLineField) {
    json base = json::parse(kBlock);
    json nvme = base;
    nvme.update({{"src", "nvme"}, {"slba", 10}, {"nlb", 8}, {"bytes", 4096}});
    struct Case {
        json rec;
        std::string want;
    };
    auto with = [](json j, const char* k, json v) {
        j[k] = std::move(v);
        return j;
    };
    auto without = [](json j, const char* k) {
        j.erase(k);
        return j;
    };
    const std::vector<Case> cases = {
        {with(base, "type", "bogus"),
         "field 'type': expected \"cmd\", \"syscall\", \"stages\" or \"summary\", got \"bogus\""},
        {without(base, "type"), "field 'type': missing"},
        {with(base, "ts_complete", 900), "field 'ts_complete': is before ts_issue (900 < 1000)"},
        {with(base, "dev", "abc"), "field 'dev': expected \"MAJ:MIN\", got \"abc\""},
        {with(base, "src", "scsi"), "field 'src': expected \"block\" or \"nvme\", got \"scsi\""},
        {without(base, "src"), "field 'src': missing"},
        {with(base, "op", "trim"), "field 'op': expected read|write|flush|discard|other, got \"trim\""},
        {without(base, "sector"), "field 'sector': missing"},
        {with(base, "bytes", uint64_t(1) << 33), "field 'bytes': 8589934592 is not a command size (at most 4 GiB)"},
        {without(nvme, "slba"), "field 'slba': missing"},
        {with(nvme, "nlb", 0), "field 'nlb': 0 blocks in a write (nlb counts from 1)"},
        {with(nvme, "nlb", 3), "field 'bytes': 4096 is not a multiple of nlb 3"},
    };
    for (const Case& c : cases) {
        TmpFile f(kBlock + "\n" + c.rec.dump() + "\n" + kBlock + "\n");
        EXPECT_EQ(read_checked_error(f.path), f.path + ":2: " + c.want) << c.rec.dump();
    }
    TmpFile ok(kBlock + "\n" + nvme.dump() + "\n" + R"({"type":"syscall","pid":1})" + "\n" +
               R"({"type":"summary","events":2})" + "\n");
    size_t n = 0;
    EXPECT_EQ(read_checked_error(ok.path, &n), "");
    EXPECT_EQ(n, 4u);
}

// --files --events: a command of several files carries "files", each file's bytes; the reader gives them in order,
// with their fs_dev strings, and refuses a damaged array naming file, line, element and field.
TEST(EventsReader, FilesOfAMergedCommandAndTheirErrors) {
    json base = json::parse(kBlock);
    base.update({{"ino", 12}, {"fs_dev", "7:3"}, {"gen", 5}, {"nofile_bytes", 512}});
    base["files"] = json::array({{{"ino", 12}, {"fs_dev", "7:3"}, {"gen", 5}, {"bytes", 1024}, {"later", true}},
                                 {{"bytes", 2560}, {"fs_dev", "8:1"}, {"gen", 0}, {"ino", 99}}});
    TmpFile ok(kBlock + "\n" + base.dump() + "\n");
    {
        EventsReader rd(ok.path);
        EventRecord r;
        ASSERT_TRUE(rd.next_checked(r));
        EXPECT_TRUE(r.files.empty());
        EXPECT_FALSE(r.has_field(EventField::Files));
        ASSERT_TRUE(rd.next_checked(r));
        EXPECT_TRUE(r.has_field(EventField::Files));
        ASSERT_EQ(r.files.size(), 2u);
        EXPECT_EQ(r.files[0].ino, 12u);
        EXPECT_EQ(r.files[0].fs_dev, "7:3");
        EXPECT_EQ(r.files[0].gen, 5u);
        EXPECT_EQ(r.files[0].bytes, 1024u);
        EXPECT_EQ(r.files[1].ino, 99u);
        EXPECT_EQ(r.files[1].fs_dev, "8:1");
        EXPECT_EQ(r.files[1].bytes, 2560u);
        EXPECT_EQ(r.ino, 12u);  // the record's own first file stays
        EXPECT_FALSE(rd.next_checked(r));
    }
    auto with_files = [&](json files) {
        json j = base;
        j["files"] = std::move(files);
        return j;
    };
    json nvme = base;
    nvme.update({{"src", "nvme"}, {"slba", 10}, {"nlb", 8}});
    const std::vector<std::pair<json, std::string>> cases = {
        {with_files(json::object()), "field 'files': expected an array"},
        {with_files(json::array({1})), "field 'files': element 0: expected an object"},
        {with_files(json::array({{{"ino", 1}, {"fs_dev", "7:3"}, {"gen", 0}}})),
         "field 'files': element 0: field 'bytes': missing"},
        {with_files(json::array({base["files"][0], {{"ino", "1"}, {"fs_dev", "7:3"}, {"gen", 0}, {"bytes", 1}}})),
         "field 'files': element 1: field 'ino': expected a non-negative integer"},
        {with_files(json::array({{{"ino", 1}, {"fs_dev", 7}, {"gen", 0}, {"bytes", 1}}})),
         "field 'files': element 0: field 'fs_dev': expected a string"},
        {with_files(json::array({{{"ino", 1}, {"fs_dev", "7:3"}, {"gen", 0}, {"bytes", 4097}}})),
         "field 'files': its parts hold more bytes than the command's 4096"},
        {nvme, "field 'files': on an nvme command (only block commands have parts)"},
    };
    for (const auto& [rec, want] : cases) {
        TmpFile f(kBlock + "\n" + rec.dump() + "\n");
        const std::string e = read_checked_error(f.path);
        EXPECT_EQ(e.rfind(f.path + ":2: " + want, 0), 0u) << e;
    }
}

TEST(EventsReader, ADirectorySaysSo) {
    char d[] = "/tmp/kvio-evrd-dir-XXXXXX";
    ASSERT_NE(mkdtemp(d), nullptr);
    try {
        EventsReader rd(d);
        FAIL() << "a directory opened";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), std::string(d) + ": Is a directory");
    }
    EXPECT_THROW(read_json_file(d), Error);
    EXPECT_THROW(JsonlReader{d}, Error);
    rmdir(d);
}

// A file that names kvio.events/1 itself but is not JSON lines is told what is wrong with it, never that it is
// "a kvio.events/1 document, not kvio.events/1".
TEST(EventsReader, FileNamingEventsSchemaIsToldWhatIsWrong) {
    TmpFile whole("{\n  \"schema\": \"kvio.events/1\",\n  \"events\": []\n}\n");
    const std::string e = read_all_error(whole.path);
    EXPECT_NE(e.find(whole.path + ":1: names kvio.events/1 but is one JSON document over several lines"),
              std::string::npos)
        << e;
    TmpFile meta("{\"schema\":\"kvio.events/1\",\"type\":\"meta\"}\n" + kBlock + "\n");
    const std::string m = read_all_error(meta.path);
    EXPECT_NE(m.find(meta.path + ":1: names kvio.events/1 but is not an event record"), std::string::npos) << m;
    for (const std::string& s : {e, m}) EXPECT_EQ(s.find("is a kvio.events/1 document"), std::string::npos) << s;
}
