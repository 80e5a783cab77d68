// report/perfetto_timeline: the Chrome JSON trace-event file on synthetic traces with known answers, checked by
// tests/timeline_check.h (the format's rules), and the checker itself on files that break them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/input_file.h"
#include "common/jsonl.h"
#include "tests/timeline_check.h"
#include "report/perfetto_timeline.h"
#include "validate/synth.h"
#include "validate/validate.h"

using namespace kvio;
using nlohmann::json;

namespace {

struct Tmp {
    std::filesystem::path dir;
    Tmp() {
        dir =
            std::filesystem::temp_directory_path() / ("kvio-timeline-test-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir);
    }
    ~Tmp() { std::filesystem::remove_all(dir); }
    std::string file(const std::string& n) const { return (dir / n).string(); }
    std::string write(const std::string& n, const std::vector<json>& lines) const {
        std::ofstream f(file(n));
        for (const auto& l : lines) f << l.dump() << "\n";
        return file(n);
    }
};

json block_cmd(const char* dev, const char* disk, const char* op, uint64_t sector, uint64_t bytes, uint64_t issue,
               uint64_t complete, uint64_t qd) {
    json j = {{"type", "cmd"},    {"src", "block"}, {"dev", dev},
              {"disk", disk},     {"op", op},       {"rwbs", op[0] == 'w' ? "W" : "R"},
              {"sector", sector}, {"bytes", bytes}, {"ts_issue", issue},
              {"qd", qd},         {"pid", 100},     {"tid", 101},
              {"comm", "app"}};
    if (complete)
        j["ts_complete"] = complete, j["d2c_ns"] = complete - issue;
    else
        j["complete_lost"] = true;
    return j;
}

json nvme_cmd(uint64_t qid, uint64_t slba, uint64_t nlb, uint64_t issue, uint64_t complete) {
    return {{"type", "cmd"},
            {"src", "nvme"},
            {"dev", "259:0"},
            {"disk", "nvme0n1"},
            {"op", "read"},
            {"rwbs", "R"},
            {"sector", slba * 8},
            {"slba", slba},
            {"nlb", nlb},
            {"bytes", nlb * 4096},
            {"qid", qid},
            {"cid", 7},
            {"ts_issue", issue},
            {"ts_complete", complete},
            {"qd", 1},
            {"pid", 100},
            {"tid", 101},
            {"comm", "app"},
            {"user_data", 42}};
}

json syscall(uint64_t tid, const char* name, uint64_t enter, uint64_t exit) {
    return {{"type", "syscall"},      {"name", name}, {"pid", 100},        {"tid", tid},
            {"comm", "app"},          {"fd", 3},      {"ts_enter", enter}, {"ts_exit", exit},
            {"lat_ns", exit - enter}, {"ret", 4096}};
}

json read_doc(const std::string& p) { return read_json_file(p); }

/// thread_name / process_name metadata: (pid, tid or -1) -> name.
std::map<std::pair<int64_t, int64_t>, std::string> names(const json& doc) {
    std::map<std::pair<int64_t, int64_t>, std::string> m;
    for (const auto& e : doc["traceEvents"])
        if (e["ph"] == "M" && (e["name"] == "thread_name" || e["name"] == "process_name"))
            m[{e["pid"].get<int64_t>(), e.contains("tid") ? e["tid"].get<int64_t>() : -1}] = e["args"]["name"];
    return m;
}

}  // namespace

// Overlapping commands take separate slots of their device; NVMe queues are tracks of their own; a lost completion
// is a zero-length slice; syscalls sit on their thread; every command record is one slice.
TEST(Timeline, DevicesQueuesSlotsAndSyscalls) {
    Tmp t;
    const std::vector<json> ev = {
        block_cmd("7:0", "loop0", "write", 0, 131072, 1000, 5000, 1),
        block_cmd("7:0", "loop0", "write", 256, 131072, 2000, 6000, 2),  // overlaps the first
        block_cmd("7:0", "loop0", "write", 512, 131072, 3000, 4000, 3),  // overlaps both
        block_cmd("7:0", "loop0", "read", 1024, 4096, 7000, 0, 1),       // complete_lost
        block_cmd("7:0", "loop0", "read", 2048, 4096, 6500, 6900, 1),    // after all three: slot 1 again
        nvme_cmd(1, 10, 2, 1500, 2500),
        nvme_cmd(2, 20, 1, 1600, 1700),
        block_cmd("259:0", "nvme0n1", "read", 80, 8192, 1400, 2600, 1),  // the block row of the first NVMe command
        syscall(101, "pwrite64", 900, 5100),
        syscall(101, "pread64", 6400, 7100),
        syscall(102, "fsync", 1000, 1200),
        {{"type", "summary"}, {"events", 8}, {"dropped", 0}, {"unmatched_completes", 0}, {"negative_deltas", 0}},
    };
    report::TimelineOptions o;
    o.events = t.write("ev.jsonl", ev);
    o.out = t.file("t.json");
    const report::TimelineStats s = report::write_perfetto(o);
    EXPECT_EQ(s.commands, 8u);
    EXPECT_EQ(s.syscalls, 3u);
    EXPECT_EQ(s.max_slots, 3u);      // three writes in flight at once on loop0
    EXPECT_EQ(s.device_tracks, 4u);  // loop0, nvme0n1 q1, nvme0n1 q2, nvme0n1 block layer
    EXPECT_EQ(s.threads, 2u);
    const json doc = read_doc(o.out);
    const test::TimelineCheck c = test::check_timeline(doc);
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
    EXPECT_EQ(c.by_cat.at("cmd"), 8u);
    EXPECT_EQ(c.by_cat.at("syscall"), 3u);
    EXPECT_EQ(doc["otherData"]["t0_ns"], 900);  // the earliest timestamp: the first syscall
    std::set<std::string> procs;
    for (const auto& [k, v] : names(doc))
        if (k.second < 0) procs.insert(v);
    for (const char* p : {"device loop0 (block layer)", "device nvme0n1 q1", "device nvme0n1 q2",
                          "device nvme0n1 (block layer)", "app (pid 100)"})
        EXPECT_TRUE(procs.count(p)) << p;
    for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] != "X") continue;
        if (e["args"].value("sector", 0) == 1024) {
            EXPECT_EQ(e["dur"], 0);
            EXPECT_TRUE(e["args"]["complete_lost"].get<bool>());
            EXPECT_EQ(e["name"], "read 4 KiB");
        }
        if (e["args"].value("sector", 0) == 0 && e["cat"] == "cmd") {
            EXPECT_EQ(e["ts"], 0.1);   // (1000 - 900) ns
            EXPECT_EQ(e["dur"], 4.0);  // 4000 ns
            EXPECT_EQ(e["name"], "write 128 KiB");
            EXPECT_EQ(e["args"]["qd"], 1);
            EXPECT_EQ(e["args"]["pid"], 100);
        }
        if (e["args"].contains("slba") && e["args"]["slba"] == 10) {
            EXPECT_EQ(e["args"]["user_data"], 42);
            EXPECT_EQ(e["args"]["qid"], 1);
            EXPECT_EQ(e["name"], "read 8 KiB");
        }
        if (e["cat"] == "syscall") {
            EXPECT_EQ(e["pid"], 100);
        }
    }
}

// --perfetto X.zst wrote plain JSON into a file named .zst: a .zst name is one zstd frame holding the same text.
TEST(Timeline, ZstNameWritesOneZstdFrameOfTheSameText) {
    Tmp t;
    std::vector<json> ev;
    for (uint64_t i = 0; i < 3000; ++i)
        ev.push_back(block_cmd("7:0", "loop0", "write", i * 256, 131072, 1000 + i * 10000, 6000 + i * 10000, 1));
    report::TimelineOptions o;
    o.events = t.write("ev.jsonl", ev);
    o.out = t.file("t.json");
    report::write_perfetto(o);
    o.out = t.file("t.json.zst");
    const report::TimelineStats s = report::write_perfetto(o);
    EXPECT_EQ(s.commands, 3000u);
    std::ifstream z(o.out, std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(z)), std::istreambuf_iterator<char>());
    ASSERT_GE(raw.size(), 4u);
    EXPECT_EQ(raw.substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4)) << "not a zstd frame";
    const std::string plain = read_input(t.file("t.json")), unpacked = read_input(o.out);
    EXPECT_EQ(unpacked, plain);
    EXPECT_LT(raw.size() * 4, plain.size()) << "a 1 MiB timeline should compress";
    const test::TimelineCheck c = test::check_timeline(json::parse(unpacked));
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
}

// With a semantic file: one slice per op and one flow per command the join attributed, each from its op to that
// command; the noise the join leaves untagged gets none.
TEST(Timeline, FlowsFollowTheJoin) {
    Tmp t;
    validate::SynthSpec sp;
    sp.objects = 8;
    sp.object_bytes = 1 << 20;
    sp.noise_per_op = 2;
    const std::string sem = t.file("s.jsonl"), ev = t.file("e.jsonl");
    const uint64_t ncmds = validate::synth_write(sp, sem, ev);
    validate::Options vo;
    vo.commands = ev;
    vo.semantic = sem;
    const validate::Report rep = validate::run(vo);
    ASSERT_GT(rep.join.joined.cmds, 0u);
    report::TimelineOptions o;
    o.events = ev;
    o.semantic = sem;
    o.out = t.file("t.json");
    const report::TimelineStats s = report::write_perfetto(o);
    EXPECT_EQ(s.commands, ncmds);
    EXPECT_EQ(s.ops, 8u);
    EXPECT_EQ(s.flows, rep.join.joined.cmds);
    EXPECT_EQ(s.flows, ncmds - 8 * 2);  // every command but the noise
    const json doc = read_doc(o.out);
    const test::TimelineCheck c = test::check_timeline(doc);
    EXPECT_TRUE(c.violations.empty()) << c.violations.front();
    EXPECT_EQ(c.flows, s.flows);
    EXPECT_EQ(c.by_cat.at("op"), 8u);
    EXPECT_EQ(c.by_cat.at("cmd"), ncmds);
    // Each flow: its start inside an op slice, its end at a command slice's start (the command it points to).
    std::set<std::tuple<int64_t, int64_t, int64_t>> cmd_starts;
    for (const auto& e : doc["traceEvents"])
        if (e["ph"] == "X" && e["cat"] == "cmd")
            cmd_starts.insert({e["pid"], e["tid"], test::timeline_ns(e["ts"].get<double>())});
    for (const auto& f : c.flow_ends) EXPECT_TRUE(cmd_starts.count(f));
    // A joined command names its op.
    size_t named = 0;
    for (const auto& e : doc["traceEvents"])
        if (e["ph"] == "X" && e["cat"] == "cmd" && e["args"].contains("op")) ++named;
    EXPECT_EQ(named, s.flows);
}

// The checker is not a check that cannot fail: each broken rule is reported.
TEST(Timeline, CheckerReportsBrokenRules) {
    auto x = [](int64_t tid, double ts, double dur) {
        return json{{"ph", "X"}, {"name", "a"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
    };
    EXPECT_TRUE(test::check_timeline(json{{"traceEvents", {x(1, 0, 10), x(1, 2, 3), x(1, 10, 1)}}}).violations.empty());
    EXPECT_FALSE(
        test::check_timeline(json{{"traceEvents", {x(1, 0, 10), x(1, 5, 10)}}}).violations.empty());  // overlap
    EXPECT_FALSE(test::check_timeline(json{{"traceEvents", {x(1, -1, 1)}}}).violations.empty());      // negative ts
    EXPECT_FALSE(test::check_timeline(json{{"traceEvents", {x(1, 0.0001, 1)}}}).violations.empty());  // below 1 ns
    EXPECT_FALSE(test::check_timeline(json{{"traceEvents", {json{{"ph", "B"}, {"pid", 1}}}}}).violations.empty());
    EXPECT_FALSE(test::check_timeline(json{{"foo", 1}}).violations.empty());
    const json s = {{"ph", "s"}, {"id", 1}, {"cat", "j"}, {"name", "n"}, {"pid", 1}, {"tid", 1}, {"ts", 1}};
    json f = {{"ph", "f"}, {"bp", "e"}, {"id", 1}, {"cat", "j"}, {"name", "n"}, {"pid", 1}, {"tid", 2}, {"ts", 1}};
    EXPECT_TRUE(test::check_timeline(json{{"traceEvents", {x(1, 0, 5), x(2, 0, 5), s, f}}}).violations.empty());
    EXPECT_FALSE(
        test::check_timeline(json{{"traceEvents", {x(1, 0, 5), x(2, 0, 5), s}}}).violations.empty());  // unpaired
    EXPECT_FALSE(
        test::check_timeline(json{{"traceEvents", {x(1, 0, 5), s, f}}}).violations.empty());  // f outside a slice
    f["id"] = 2;
    EXPECT_FALSE(test::check_timeline(json{{"traceEvents", {x(1, 0, 5), x(2, 0, 5), s, f}}}).violations.empty());
}

TEST(Timeline, BadInputNamesFileAndLine) {
    Tmp t;
    report::TimelineOptions o;
    o.events = t.write("ev.jsonl", {block_cmd("7:0", "loop0", "write", 0, 4096, 5000, 4000, 1)});
    o.out = t.file("t.json");
    try {
        report::write_perfetto(o);
        FAIL() << "ts_complete before ts_issue accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ev.jsonl:1: field 'ts_complete'"), std::string::npos) << e.what();
    }
}

// The ops' device is not the one the commands were traced on: 0 flows, and the stats say why, naming both devices
// (`kvio dump --semantic` printed "0 flows" and nothing else).
TEST(Timeline, NoFlowsSaysWhichDevicesTheOpsAndTheCommandsAreOn) {
    Tmp t;
    validate::SynthSpec sp;
    sp.objects = 4;
    sp.object_bytes = 1 << 20;
    const std::string sem = t.file("s.jsonl"), ev = t.file("e.jsonl");
    validate::synth_write(sp, sem, ev);
    std::vector<json> other;  // the same commands, traced on 7:99
    {
        std::ifstream in(ev);
        for (std::string line; std::getline(in, line);) {
            json j = json::parse(line);
            if (j.value("type", "") == "cmd") j["dev"] = "7:99", j["disk"] = "loop99";
            other.push_back(j);
        }
    }
    report::TimelineOptions o;
    o.events = t.write("other.jsonl", other);
    o.semantic = sem;
    o.out = t.file("t.json");
    const report::TimelineStats s = report::write_perfetto(o);
    EXPECT_EQ(s.ops, 4u);
    EXPECT_EQ(s.flows, 0u);
    ASSERT_FALSE(s.warnings.empty());
    EXPECT_NE(s.warnings[0].find("7:0"), std::string::npos) << s.warnings[0];
    EXPECT_NE(s.warnings[0].find("7:99"), std::string::npos) << s.warnings[0];

    o.events = ev;  // the right device: flows, no warning
    const report::TimelineStats ok = report::write_perfetto(o);
    EXPECT_GT(ok.flows, 0u);
    EXPECT_TRUE(ok.warnings.empty());
}
