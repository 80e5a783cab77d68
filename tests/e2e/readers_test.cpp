// End-to-end: the readers every command shares (common/events_reader, common/jsonl, common/input_file) and
// validate's pipeline behaviour: pipes, torn last lines, the same error for the same bad line from validate,
// distill, replay, compare and dump, directories given as files, why a join joined nothing, and the CI gates.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

/// A synthetic run (`kvio validate --synth`): 12 ops whose commands match their projection exactly.
struct Synth {
    TempDir tmp;
    std::string sem = tmp.file("semantic.jsonl"), ev = tmp.file("events.jsonl");
    Synth() {
        CmdResult r = run(kvio_bin() + " validate --synth " + tmp.path + " --synth-objects 12");
        EXPECT_EQ(r.status, 0) << r.err;
    }
    std::string validate(const std::string& commands, const std::string& extra = "") const {
        return kvio_bin() + " validate --commands " + commands + " --semantic " + sem + " " + extra;
    }
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// The lines of `path` with `edit` applied to each parsed record, written to `out`.
void rewrite(const std::string& path, const std::string& out, const std::function<void(json&)>& edit) {
    std::ofstream o(out);
    for (json j : read_jsonl(path)) {
        edit(j);
        o << j.dump() << "\n";
    }
}

}  // namespace

// Row 1: `--join auto` read the first 4096 records to choose the mode, then opened the file again: from a pipe
// the second pass found nothing (0/12, exit 0).
TEST(ReadersE2E, ValidateReadsAPipeLikeTheFile) {
    Synth s;
    CmdResult path = run(s.validate(s.ev));
    ASSERT_EQ(path.status, 0) << path.err;
    EXPECT_EQ(first_line(path.out).rfind("exact-match 12/12 ", 0), 0u) << path.out;
    CmdResult pipe = run("cat " + s.ev + " | " + s.validate("/dev/stdin"));
    EXPECT_EQ(pipe.status, 0) << pipe.err;
    EXPECT_EQ(first_line(pipe.out), first_line(path.out));
    CmdResult subst = run("bash -c '" + s.validate("<(cat " + s.ev + ")") + "'");
    EXPECT_EQ(subst.status, 0) << subst.err;
    EXPECT_EQ(first_line(subst.out), first_line(path.out));
}

// Row 6: a trace cut mid-line (SIGKILL, ENOSPC) loses its last line, not the whole file.
TEST(ReadersE2E, TornLastLineIsDroppedWithAWarning) {
    Synth s;
    const std::string cut = s.tmp.file("cut.jsonl");
    const std::string text = slurp(s.ev);
    const size_t last_cmd = text.rfind("{\"bytes\"");  // the last command record, before the summary
    std::ofstream(cut) << text.substr(0, last_cmd + 40);
    const size_t lines = size_t(std::count(text.begin(), text.begin() + long(last_cmd), '\n')) + 1;
    const std::string warning = "kvio: warning: " + cut + ":" + std::to_string(lines) +
                                ": the last line is cut off (the writer was killed?): dropped\n";
    CmdResult v = run(s.validate(cut, "--json " + s.tmp.file("cut.json")));
    EXPECT_EQ(v.status, 0) << v.err;
    EXPECT_NE(v.err.find(warning), std::string::npos) << v.err;
    const size_t cmds = size_t(std::count(text.begin(), text.end(), '\n')) - 1;  // all lines but the summary
    EXPECT_EQ(json::parse(slurp(s.tmp.file("cut.json")))["join"]["records"]["cmds"],
              cmds - 1);  // only the torn one lost
    CmdResult d = run(kvio_bin() + " distill --events " + cut + " --filename /dev/null");
    EXPECT_EQ(d.status, 0) << d.err;
    EXPECT_NE(d.err.find(warning), std::string::npos) << d.err;
    // The same torn line inside the file is an error.
    std::ofstream(cut) << text.substr(0, last_cmd + 40) << "\n" << text.substr(last_cmd);
    v = run(s.validate(cut));
    EXPECT_EQ(v.status, 1);
    EXPECT_EQ(v.err.rfind("kvio: " + cut + ":" + std::to_string(lines) + ": not valid JSON", 0), 0u) << v.err;
}

// One reader, one set of rules: the same bad line gives the same message from every command that reads events.
TEST(ReadersE2E, SameBadLineSameErrorFromEveryCommand) {
    Synth s;
    const std::string target = s.tmp.file("target.img");
    ASSERT_EQ(run("truncate -s 256M " + target).status, 0);
    const std::vector<std::pair<std::string, std::string>> bad = {
        {R"({"type":"bogus"})",
         "field 'type': expected \"cmd\", \"syscall\", \"stages\" or \"summary\", got \"bogus\""},
        {R"({"type":"cmd","src":"block","dev":"abc","op":"read","sector":0,"bytes":4096,"ts_issue":5})",
         "field 'dev': expected \"MAJ:MIN\", got \"abc\""},
        {R"({"type":"cmd","src":"block","dev":"7:0","op":"read","sector":0,"bytes":4096,"ts_issue":5,"ts_complete":4})",
         "field 'ts_complete': is before ts_issue (4 < 5)"},
        {R"({"type":"cmd","src":"scsi","dev":"7:0","op":"read","sector":0,"bytes":4096,"ts_issue":5})",
         "field 'src': expected \"block\" or \"nvme\", got \"scsi\""},
        {R"({"type":"cmd","dev":"7:0","op":"read","sector":0,"bytes":4096,"ts_issue":5})", "field 'src': missing"},
        {R"({"type":"cmd","src":"block","dev":"7:0","op":"read","sector":"0","bytes":4096,"ts_issue":5})",
         "field 'sector': expected a non-negative integer, got a string"},
    };
    const std::string text = slurp(s.ev);
    const size_t third = text.find('\n', text.find('\n', text.find('\n') + 1) + 1) + 1;
    for (const auto& [line, msg] : bad) {
        const std::string ev = s.tmp.file("bad.jsonl");
        std::ofstream(ev) << text.substr(0, third) << line << "\n" << text.substr(third);
        const std::string want = "kvio: " + ev + ":4: " + msg + "\n";
        for (const std::string& cmd :
             {s.validate(ev, "--join offset"), s.validate(ev),
              kvio_bin() + " distill --events " + ev + " --filename /dev/null",
              kvio_bin() + " replay -q --events " + ev + " --target " + target,
              kvio_bin() + " compare " + ev + " " + s.ev, kvio_bin() + " compare " + s.ev + " " + ev}) {
            CmdResult r = run(cmd);
            EXPECT_EQ(r.status, 1) << cmd;
            EXPECT_EQ(r.err, want) << cmd;
        }
    }
}

// Row 16 and every other reader: a directory where a file is expected says so, exit 1 (was: "internal error:
// basic_filebuf::underflow", exit 2, for replay --record).
TEST(ReadersE2E, ADirectoryAsAnInputFileSaysSo) {
    Synth s;
    const std::string dir = s.tmp.file("adir");
    ASSERT_EQ(run("mkdir " + dir + " && truncate -s 64M " + s.tmp.file("t.img")).status, 0);
    for (const std::string& cmd : {kvio_bin() + " replay --record " + dir + " --target " + s.tmp.file("t.img"),
                                   kvio_bin() + " replay --events " + dir + " --target " + s.tmp.file("t.img"),
                                   s.validate(dir), kvio_bin() + " validate --commands " + s.ev + " --semantic " + dir,
                                   kvio_bin() + " distill --events " + dir + " --filename /dev/null",
                                   kvio_bin() + " distill --trace-json " + dir + " --filename /dev/null",
                                   kvio_bin() + " compare " + dir + " " + s.ev, kvio_bin() + " dump " + dir,
                                   kvio_bin() + " gen --hf-config " + dir + " --target " + s.tmp.file("t.img")}) {
        CmdResult r = run(cmd);
        EXPECT_EQ(r.status, 1) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find(dir + ": Is a directory"), std::string::npos) << cmd << "\n" << r.err;
        EXPECT_EQ(r.err.find("internal error"), std::string::npos) << cmd << "\n" << r.err;
    }
}

// Row 8: a join that cannot apply, or files of two runs, said nothing about why the score was 0 %.
TEST(ReadersE2E, ValidateSaysWhyNothingJoined) {
    Synth s;
    CmdResult r = run(s.validate(s.ev, "--join user_data"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("warning: no command joined any op: --join user_data, but no command carries user_data"),
              std::string::npos)
        << r.out;
    r = run(s.validate(s.ev, "--join key"));
    EXPECT_NE(r.out.find("warning: no command joined any op: --join key, but no command carries a key"),
              std::string::npos)
        << r.out;
    // Commands of another run: 1 h later on the same clock.
    const std::string later = s.tmp.file("later.jsonl");
    rewrite(s.ev, later, [](json& j) {
        if (j["type"] != "cmd") return;
        j["ts_issue"] = j["ts_issue"].get<uint64_t>() + 3600'000'000'000ull;
        j["ts_complete"] = j["ts_complete"].get<uint64_t>() + 3600'000'000'000ull;
    });
    r = run(s.validate(later, "--json " + s.tmp.file("v.json")));
    EXPECT_NE(r.out.find("warning: no command joined any op: no command falls inside any op's time window"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(json::parse(slurp(s.tmp.file("v.json")))["join"]["warnings"].size(), 1u);
    // Commands of another device.
    const std::string other = s.tmp.file("other.jsonl");
    rewrite(s.ev, other, [](json& j) {
        if (j["type"] == "cmd") j["dev"] = "8:16";
    });
    r = run(s.validate(other));
    EXPECT_NE(r.out.find("warning: no command joined any op: the commands are on device 8:16, the ops on 7:0"),
              std::string::npos)
        << r.out;
    // A good run has no such warning.
    r = run(s.validate(s.ev));
    EXPECT_EQ(r.out.find("no command joined"), std::string::npos) << r.out;
}

// A commands file with nothing for the ops (empty, only a summary, or another device's commands) scored 0 % with
// exit 0 and the warning on stdout only: now stderr says so, the JSON carries it, and the exit status is 1.
TEST(ReadersE2E, ValidateRefusesCommandsThatHoldNothingForTheOps) {
    Synth s;
    const std::string empty = s.tmp.file("empty.jsonl"), summary_only = s.tmp.file("summary.jsonl"),
                      other = s.tmp.file("other.jsonl");
    std::ofstream(empty).close();
    {
        std::ofstream o(summary_only);  // a trace that saw nothing: its summary alone
        for (const json& j : read_jsonl(s.ev))
            if (j["type"] == "summary") o << j.dump() << "\n";
    }
    rewrite(s.ev, other, [](json& j) {
        if (j["type"] == "cmd") j["dev"] = "8:16";
    });
    for (const auto& [file, needle] : std::vector<std::pair<std::string, std::string>>{
             {empty,
              "kvio: validate: nothing measured: the commands file holds no read or write command: the 12 ops were "
              "scored against nothing"},
             {summary_only, "kvio: validate: nothing measured: the commands file holds no read or write command"},
             {other,
              "kvio: validate: nothing measured: the commands file holds no command on the ops' device 7:0 (its "}}) {
        const std::string js = s.tmp.file("v.json");
        CmdResult r = run(s.validate(file, "--json " + js));
        EXPECT_EQ(r.status, 1) << file << "\n" << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("kvio validate: warning: no command joined any op"), std::string::npos) << r.err;
        EXPECT_NE(r.out.find("exact-match 0/12"), std::string::npos) << "the report is still printed\n" << r.out;
        json j = json::parse(slurp(js));
        ASSERT_TRUE(j["nothing_measured"].is_string()) << j.dump();
        EXPECT_NE(needle.find(j["nothing_measured"].get<std::string>().substr(0, 40)), std::string::npos)
            << j["nothing_measured"];
    }
    // A good run: exit 0, no such key, nothing on stderr.
    CmdResult r = run(s.validate(s.ev, "--json " + s.tmp.file("ok.json")));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(json::parse(slurp(s.tmp.file("ok.json")))["nothing_measured"].is_null());
    EXPECT_EQ(r.err, "");
}

// CI gates: --fail-below (exact-match %) and --max-wape exit 1 when missed, saying which and by how much.
TEST(ReadersE2E, ValidateGatesExitOneWhenMissed) {
    Synth s;
    CmdResult r = run(s.validate(s.ev, "--fail-below 100 --max-wape 0"));
    EXPECT_EQ(r.status, 0) << r.err;
    // Drop 3 commands of the first op (a store): 11/12 exact, WAPE > 0.
    const std::string less = s.tmp.file("less.jsonl");
    {
        std::vector<json> ev = read_jsonl(s.ev);
        std::ofstream o(less);
        for (size_t i = 0; i < ev.size(); ++i)
            if (i < 1 || i > 3) o << ev[i].dump() << "\n";
    }
    r = run(s.validate(less, "--fail-below 95"));
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(first_line(r.out).rfind("exact-match 11/12 ", 0), 0u) << r.out;  // the report is printed first
    EXPECT_EQ(r.err, "kvio: validate: exact-match 91.67% (11/12) is below --fail-below 95% by 3.33 points\n");
    r = run(s.validate(less, "--fail-below 90"));
    EXPECT_EQ(r.status, 0) << r.err;
    r = run(s.validate(less, "--max-wape 0.1"));
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err.rfind("kvio: validate: WAPE 0.", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("% is above --max-wape 0.1% by "), std::string::npos) << r.err;
    r = run(s.validate(less, "--max-wape 5 --fail-below 50"));
    EXPECT_EQ(r.status, 0) << r.err;
    r = run(s.validate(less, "--fail-below 101"));
    EXPECT_NE(r.status, 0);
}

// Row 12: impossible values in the semantic file are errors naming file, line and field (were accepted and projected).
TEST(ReadersE2E, SemanticImpossibleValuesNameFileLineField) {
    Synth s;
    std::vector<json> sem = read_jsonl(s.sem);
    struct Case {
        size_t line;
        const char* field;
        json value;
        std::string want;
    };
    const std::vector<Case> cases = {
        {1, "lba_bytes", 3, "field 'lba_bytes': 3 is not a power of two from 512 to 65536"},
        {1, "engine", "spdk", "field 'engine': expected posix, io_uring, uring_cmd or cufile, got \"spdk\""},
        {1, "max_sectors_kb", 0, "field 'max_sectors_kb': 0: a device splits at 1 KiB or more"},
        {2, "payload_bytes", UINT64_MAX,
         "field 'payload_bytes': 18446744073709551615 is beyond any device (its padded size overflows 64 bits)"},
        {2, "payload_bytes", 40000000000ull,
         "field 'payload_bytes': 40000000000 is more than its extents hold (33558528 bytes)"},
        {2, "bytes", -1, "field 'bytes': expected a non-negative integer, got -1"},
        {2, "bytes", "abc", "field 'bytes': expected a non-negative integer, got \"abc\""},
    };
    for (const Case& c : cases) {
        std::vector<json> mod = sem;
        mod[c.line - 1][c.field] = c.value;
        const std::string p = s.tmp.file("bad.sem.jsonl");
        {
            std::ofstream o(p);
            for (const auto& j : mod) o << j.dump() << "\n";
        }
        CmdResult r = run(kvio_bin() + " validate --commands " + s.ev + " --semantic " + p);
        EXPECT_EQ(r.status, 1) << c.field;
        EXPECT_EQ(r.err, "kvio: " + p + ":" + std::to_string(c.line) + ": " + c.want + "\n");
    }
    CmdResult r = run(s.validate(s.ev, "--max-sectors-kb 0"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("must be a whole number >= 1, got 0"), std::string::npos) << r.err;
}

// Row 3: a payload_bytes no device can hold: 2^63 spun forever in replay, 2^64 - 1 wrapped to 0 and wrote the
// target. Now an error naming the manifest and the field, before any byte of the target is touched.
TEST(ReadersE2E, ReplayRefusesAnImpossiblePayloadBeforeAnyIo) {
    TempDir tmp;
    const std::string img = tmp.file("gen.img"), target = tmp.file("target.img"), rec = tmp.file("rec.json");
    ASSERT_EQ(run("truncate -s 64M " + img + " " + target).status, 0);
    CmdResult g = run(kvio_bin() + " gen -q --model tiny-1b --num-chunks 2 --target " + img + " --record " + rec);
    ASSERT_EQ(g.status, 0) << g.err;
    const json base = json::parse(slurp(rec));
    for (uint64_t payload : {uint64_t(1) << 63, UINT64_MAX}) {
        json r = base;
        r["objects"][0]["payload_bytes"] = payload;
        const std::string bad = tmp.file("bad.json");
        std::ofstream(bad) << r.dump();
        CmdResult x = run("timeout 30 " + kvio_bin() + " replay -q --record " + bad + " --target " + target);
        EXPECT_EQ(x.status, 1) << payload << "\n" << x.err;
        EXPECT_EQ(x.err, "kvio: " + bad + ": field 'payload_bytes': " + std::to_string(payload) +
                             " with 2 objects is beyond any device: the layout would end past 2^64 bytes\n");
        EXPECT_EQ(run("cmp -s " + target + " /dev/zero -n 67108864").status, 0) << "the target was written";
    }
}

// A capture whose first command's src is neither block nor nvme (was: read as block): every reader of the capture,
// dump included, stops at that record with the same message.
TEST(ReadersE2E, CaptureWithAnUnknownSrcSameErrorFromEveryCommand) {
    TempDir tmp;
    LoopDevice loop(64ull << 20);
    const std::string cap = tmp.file("c.kvb"), bad = tmp.file("bad.kvb");
    const std::string ready = tmp.file("ready");
    CmdResult t = run(kvio_bin() + " trace -q -d " + loop.name + " --events " + cap +
                      " --events-format bin --duration 1.5 --ready-file " + ready + " & t=$!; i=0; until [ -e " +
                      ready + " ] || [ $i -ge 300 ]; do sleep 0.05; i=$((i+1)); done; " + "dd if=" + loop.path +
                      " of=/dev/null bs=4k count=4 iflag=direct status=none; wait $t");
    ASSERT_EQ(t.status, 0) << t.err;
    std::string bytes = slurp(cap);
    // header 64 bytes, then the device record (8 + 56), then the first cmd record: its payload's byte 1 is src.
    ASSERT_GT(bytes.size(), 64u + 64 + 8 + 2);
    ASSERT_EQ(bytes[64], 1) << "record 1 is not the device record";
    ASSERT_EQ(bytes[128], 2) << "record 2 is not a cmd record";
    bytes[128 + 8 + 1] = 7;
    std::ofstream(bad, std::ios::binary) << bytes;
    const std::string want =
        "kvio: " + bad + ": record 2 at byte 128: field 'src': 7 is neither block (0) nor nvme (1)\n";
    const std::string sem = tmp.file("s.jsonl");
    std::ofstream(sem) << json{{"type", "meta"},    {"schema", "kvio.semantic/1"},
                               {"engine", "posix"}, {"dev", loop.majmin},
                               {"lba_bytes", 512},  {"max_sectors_kb", 128}}
                              .dump()
                       << "\n";
    for (const std::string& cmd :
         {kvio_bin() + " validate --commands " + bad + " --semantic " + sem,
          kvio_bin() + " distill --events " + bad + " --filename /dev/null", kvio_bin() + " compare " + bad + " " + cap,
          kvio_bin() + " dump " + bad + " -o " + tmp.file("d.jsonl")}) {
        CmdResult r = run(cmd);
        EXPECT_EQ(r.status, 1) << cmd;
        EXPECT_EQ(r.err, want) << cmd;
    }
}
