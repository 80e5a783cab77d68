// End-to-end: `kvio gen` on loop devices (and ext4 on a loop device) under `kvio trace --events`, then
// `kvio validate`: every object op's real device commands equal the projection from geometry alone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <iostream>

#include "tests/e2e/helpers.h"
#include "tests/foreign_formats.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t sysfs_u64(const std::string& disk, const std::string& attr) {
    return std::stoull(slurp("/sys/block/" + disk + "/queue/" + attr));
}

struct Traced {
    std::string events, semantic, trace_json;
    bool lossy = false;  ///< the tracer reported lost commands in every attempt
};

/// Runs `kvio gen GEN_ARGS --semantic` while `kvio trace -d DISK --events --json` traces the whole disk (started
/// first, stopped with SIGINT after gen exits); asserts both succeed. Whole-disk tracing also sees other
/// processes' I/O: it lands in "untagged".
/// When the tracer reports lost commands (`unmatched_completes`, `dropped`) the run is retried, at most 3 times.
Traced trace_gen(const TempDir& tmp, const std::string& disk, const std::string& gen_args, const std::string& tag) {
    Traced t{tmp.file(tag + ".events.jsonl"), tmp.file(tag + ".sem.jsonl"), tmp.file(tag + ".trace.json")};
    const std::string err = tmp.file(tag + ".trace.err");
    std::string cmd = kvio_bin() + " trace -d " + disk + " --events " + t.events + " --json " + t.trace_json +
                      " >/dev/null 2>" + err + " & p=$!; i=0; until grep -q 'kvio trace: tracing' " + err +
                      "; do sleep 0.05; i=$((i+1)); [ $i -gt 400 ] && break; done; " + kvio_bin() + " gen -q --force " +
                      gen_args + " --semantic " + t.semantic +
                      "; g=$?; kill -INT $p; wait $p; t=$?; exit $((g ? g : t))";
    for (int attempt = 1; attempt <= 3; ++attempt) {
        CmdResult r = run(cmd);
        EXPECT_EQ(r.status, 0) << cmd << "\n" << r.err << slurp(err);
        std::vector<json> ev = read_jsonl(t.events);
        EXPECT_FALSE(ev.empty());
        if (ev.empty()) break;
        const json& sum = ev.back();
        EXPECT_EQ(sum.value("type", ""), "summary");
        uint64_t lost = sum.value("unmatched_completes", uint64_t(0)) + sum.value("dropped", uint64_t(0));
        if (!lost) break;
        std::cerr << "note: " << tag << " run " << attempt << ": the tracer lost " << lost
                  << " commands (unmatched_completes + dropped); tracing again\n";
        t.lossy = attempt == 3;
    }
    return t;
}

/// `kvio validate` with the trace's JSON as the max_sectors_kb source; returns the --json report.
json validate(const TempDir& tmp, const Traced& t, const std::string& extra, const std::string& tag,
              std::string* out = nullptr) {
    std::string rep = tmp.file(tag + ".report.json");
    std::string cmd = kvio_bin() + " validate --commands " + t.events + " --semantic " + t.semantic + " --trace-json " +
                      t.trace_json + " --json " + rep + " " + extra;
    CmdResult r = run(cmd);
    EXPECT_EQ(r.status, 0) << cmd << "\n" << r.err;
    if (out) *out = r.out;
    return json::parse(slurp(rep));
}

/// Independent oracle: per op kind, the commands of the events file that lie inside an op's extents, in its
/// time window and direction (a quadratic scan, fine for a few hundred commands).
struct Oracle {
    uint64_t cmds[2] = {0, 0}, bytes[2] = {0, 0};
    uint64_t complete_ops = 0;  ///< ops whose extents are fully covered by their commands
};
Oracle oracle(const Traced& t) {
    Oracle o;
    std::vector<json> sem = read_jsonl(t.semantic), ev = read_jsonl(t.events);
    for (size_t i = 1; i < sem.size(); ++i) {
        const json& op = sem[i];
        int k = op["op"] == "store" ? 0 : 1;
        uint64_t covered = 0, want = 0;
        for (const auto& e : op["extents"]) {
            uint64_t a = e[0], len = e[1];
            want += len;
            for (const auto& c : ev) {
                if (c.value("type", "") != "cmd" || c["op"] != (k == 0 ? "write" : "read")) continue;
                uint64_t off = c["sector"].get<uint64_t>() * 512, ts = c["ts_issue"];
                if (off < a || off >= a + len || ts < op["ts_start"].get<uint64_t>() || ts > op["ts"].get<uint64_t>())
                    continue;
                ++o.cmds[k];
                o.bytes[k] += c["bytes"].get<uint64_t>();
                covered += c["bytes"].get<uint64_t>();
            }
        }
        o.complete_ops += covered == want;
    }
    return o;
}

/// The report agrees with the oracle on what was measured; when the trace holds every command of every op,
/// the scores are exact. A trace missing commands (a tracer loss, see trace_gen) is reported on stderr.
void expect_scores(const json& j, const Traced& t, uint64_t objects) {
    Oracle o = oracle(t);
    const char* kinds[2] = {"store", "load"};
    for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(j["per_op"][kinds[k]]["measured"]["cmds"], o.cmds[k]) << kinds[k];
        EXPECT_EQ(j["per_op"][kinds[k]]["measured"]["bytes"], o.bytes[k]) << kinds[k];
    }
    EXPECT_EQ(j["objects"], objects);
    EXPECT_EQ(j["exact_match"], o.complete_ops);
    EXPECT_EQ(j["per_cmd_size_match"], o.complete_ops);
    EXPECT_EQ(j["join"]["ties"]["cmds"], 0);
    EXPECT_EQ(j["join"]["straddles"]["cmds"], 0);
    EXPECT_EQ(j["join"]["tracer_dropped"], 0);
    if (o.complete_ops == objects) {
        EXPECT_EQ(j["objects_no_cmds"], 0);
        EXPECT_EQ(j["count_match"], objects);
        EXPECT_EQ(j["wape"], 0.0);
        EXPECT_EQ(j["size_tv"], 0.0);
        EXPECT_EQ(j["measured"], j["projected"]);
    } else {
        std::cerr << "note: the trace " << t.events << " misses commands of " << objects - o.complete_ops
                  << " ops that the device served (tracer loss; validate scored them as mismatches, as it must)\n";
    }
}

}  // namespace

TEST(ValidateE2E, SlotsPosixOnLoopIsExactForLlamaAndDeepseek) {
    TempDir tmp;
    LoopDevice loop(256 * kMiB);
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    const uint64_t cap =
        std::min(sysfs_u64(loop.name, "max_sectors_kb") * 1024, sysfs_u64(loop.name, "max_segments") * page);
    struct Case {
        const char* model;
        uint64_t object_bytes;
    } cases[] = {{"llama3.1-8b", 32 * kMiB}, {"deepseek-v3", 70272ull * 256}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.model);
        Traced t = trace_gen(tmp, loop.name,
                             std::string("--model ") + c.model + " --target " + loop.path +
                                 " --num-chunks 3 --engine posix --layout slots",
                             c.model);
        if (t.lossy)
            GTEST_SKIP() << "kvio trace reported lost commands (unmatched_completes/dropped) in 3 runs of 3: a tracer "
                            "defect, not scorable";
        std::string out;
        json j = validate(tmp, t, "", c.model, &out);
        expect_scores(j, t, 6);
        EXPECT_EQ(j["join"]["mode"], "offset");
        // Independent arithmetic: a store is the 4 KiB header + ceil(object / cap) payload commands.
        const uint64_t per_load = (c.object_bytes + cap - 1) / cap;
        EXPECT_EQ(j["per_op"]["store"]["projected"]["cmds"], 3 * (1 + per_load));
        EXPECT_EQ(j["per_op"]["load"]["projected"]["cmds"], 3 * per_load);
        EXPECT_EQ(j["per_op"]["load"]["projected"]["bytes"], 3 * c.object_bytes);
        EXPECT_EQ(j["per_op"]["store"]["projected"]["min"], 4096);
        if (j["exact_match"] == 6)
            EXPECT_NE(out.find("exact-match 6/6 (100.00%)  WAPE 0.0000%  per-cmd size 6/6  size-TV 0.0000"),
                      std::string::npos)
                << out;

        if (std::string(c.model) == "llama3.1-8b") {
            // The same trace scored against a wrong geometry must fail: a 256 KiB max_sectors_kb projects every
            // 512 KiB transfer as two commands. Counts fail, bytes still agree, the size distribution moves.
            json w = validate(tmp, t, "--max-sectors-kb 256", "wrong");
            EXPECT_EQ(w["exact_match"], 0);
            EXPECT_EQ(w["count_match"], 0);
            EXPECT_EQ(w["wape"], j["wape"]);  // the bytes projected do not depend on the split
            EXPECT_EQ(w["projected"]["cmds"], 3 * (1 + 2 * per_load) + 3 * 2 * per_load);
            EXPECT_GT(w["size_tv"].get<double>(), 0.9);
        }
    }
}

TEST(ValidateE2E, FilesLayoutOnExt4JoinsByFiemapOffsets) {
    TempDir tmp;
    Ext4Mount fs(512 * kMiB);
    std::string dir = fs.mnt + "/kv";
    ASSERT_EQ(run("mkdir -p " + dir).status, 0);
    Traced t =
        trace_gen(tmp, fs.loop.name, "--model deepseek-v3 --target " + dir + " --num-chunks 3 --layout files", "files");
    if (t.lossy)
        GTEST_SKIP() << "kvio trace reported lost commands (unmatched_completes/dropped) in 3 runs of 3: a tracer "
                        "defect, not scorable";
    json j = validate(tmp, t, "", "files");
    expect_scores(j, t, 6);
    EXPECT_EQ(j["join"]["mode"], "offset");
    EXPECT_EQ(j["projection"]["layout"], "files");
    EXPECT_EQ(j["per_op"]["load"]["projected"]["bytes"], 3 * 70272ull * 256);
}

// Slots on a regular file that FIEMAP maps in many pieces: a transfer crossing an extent end becomes two commands,
// whatever the layout (was: only the files layout cut there, so every op spanning two extents mismatched).
TEST(ValidateE2E, SlotsOnAFragmentedFileCutAtExtentEnds) {
    TempDir tmp;
    Ext4Mount fs(256 * kMiB);
    const std::string img = fs.mnt + "/file.img", other = fs.mnt + "/other.img";
    // Allocate the image 1 MiB at a time, each piece followed by a piece of another file: its extents interleave.
    std::string alloc = "set -e; for i in $(seq 0 39); do fallocate -o $((i*1048576)) -l 1048576 " + img +
                        "; fallocate -o $((i*1048576)) -l 1048576 " + other + "; done; sync";
    ASSERT_EQ(run(alloc).status, 0);
    Traced t = trace_gen(tmp, fs.loop.name, "--model tiny-1b --target " + img + " --num-chunks 4", "frag");
    if (t.lossy)
        GTEST_SKIP() << "kvio trace reported lost commands (unmatched_completes/dropped) in 3 runs of 3: a tracer "
                        "defect, not scorable";
    size_t multi = 0;
    std::vector<json> sem = read_jsonl(t.semantic);
    for (size_t i = 1; i < sem.size(); ++i) multi += sem[i]["extents"].size() > 1;
    ASSERT_GT(multi, 0u) << "the image is not fragmented: the test proves nothing";
    json j = validate(tmp, t, "", "frag");
    expect_scores(j, t, 8);
    EXPECT_EQ(j["projection"]["layout"], "slots");
    EXPECT_EQ(j["exact_match"], 8) << multi << " ops span several extents";
}

TEST(ValidateE2E, IoUringJoinsByUserData) {
    TempDir tmp;
    LoopDevice loop(128 * kMiB);
    Traced t =
        trace_gen(tmp, loop.name,
                  "--model llama3.1-8b --engine io_uring --qd 4 --target " + loop.path + " --num-chunks 2", "uring");
    if (t.lossy)
        GTEST_SKIP() << "kvio trace reported lost commands (unmatched_completes/dropped) in 3 runs of 3: a tracer "
                        "defect, not scorable";
    json j = validate(tmp, t, "", "uring");
    expect_scores(j, t, 4);
    EXPECT_EQ(j["join"]["mode"], "user_data");
    // The same trace joined by offset agrees.
    json o = validate(tmp, t, "--join offset", "uring-offset");
    expect_scores(o, t, 4);
    EXPECT_EQ(o["exact_match"], j["exact_match"]);
}

TEST(ValidateE2E, MalformedInputExitsNonZeroNamingFileLineField) {
    TempDir tmp;
    std::string sem = tmp.file("s.jsonl"), ev = tmp.file("e.jsonl");
    run("printf '%s\\n' "
        "'{\"type\":\"meta\",\"schema\":\"kvio.semantic/1\",\"engine\":\"posix\",\"dev\":\"7:0\",\"lba_bytes\":512,"
        "\"max_sectors_kb\":1280}' > " +
        sem);
    run("printf '%s\\n' "
        "'{\"type\":\"cmd\",\"src\":\"block\",\"dev\":\"7:0\",\"op\":\"read\",\"rwbs\":\"R\",\"sector\":0,"
        "\"bytes\":4096,\"ts_issue\":1}' "
        "'{\"type\":\"cmd\",\"src\":\"block\",\"dev\":\"7:0\",\"op\":\"read\",\"rwbs\":\"R\","
        "\"sector\":-1,\"bytes\":4096,\"ts_issue\":2}' > " +
        ev);
    CmdResult r = run(kvio_bin() + " validate --join offset --commands " + ev + " --semantic " + sem);
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "kvio: " + ev + ":2: field 'sector': expected a non-negative integer, got a negative number\n");
    // An unwritable --json fails before any work or output.
    r = run(kvio_bin() + " validate --join offset --commands " + ev + " --semantic " + sem + " --json " +
            tmp.file("no/dir/v.json"));
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "kvio: " + tmp.file("no/dir/v.json") + ": cannot write: No such file or directory\n");
    // A directory given as a JSONL file says so (was: "empty").
    r = run(kvio_bin() + " validate --join offset --commands " + ev + " --semantic " + tmp.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "kvio: " + tmp.path + ": Is a directory\n");
}

// Foreign inputs: the same gen run written as an LMCache kvio trace (schema 2) and as the NVMe monitor's JSONL (both
// variants) scores exactly what kvio's own files score. The LMCache meta names the loop device by path and
// carries no lba_bytes or max_sectors_kb: both validations get --lba-bytes and --trace-json.
TEST(ValidateE2E, LmcacheAndMonitorFormatsOfAGenRunScoreLikeKviosOwnFiles) {
    TempDir tmp;
    LoopDevice loop(160 * kMiB);
    struct Run {
        const char* engine;
        kvio::test::MonitorVariant v;
    } runs[] = {{"posix", kvio::test::MonitorVariant::DriverTracepoint},
                {"io_uring", kvio::test::MonitorVariant::IoUringCmd}};
    auto strip = [](json j) {
        j.erase("inputs");
        for (const char* k : {"reason", "warnings", "nvme_rows", "passthrough_block_skipped"}) j["join"].erase(k);
        return j;
    };
    for (const Run& r : runs) {
        const std::string tag = r.engine;
        Traced t =
            trace_gen(tmp, loop.name,
                      "--model llama3.1-8b --engine " + tag + " --qd 2 --target " + loop.path + " --num-chunks 3", tag);
        if (t.lossy)
            GTEST_SKIP() << "kvio trace reported lost commands (unmatched_completes/dropped) in 3 runs of 3: a tracer "
                            "defect, not scorable";
        const json own = validate(tmp, t, "--lba-bytes 512", tag + "-own");
        expect_scores(own, t, 6);
        Traced f = t;
        f.semantic = tmp.file(tag + ".lmcache.jsonl");
        f.events = tmp.file(tag + ".monitor.jsonl");
        kvio::test::kvio_semantic_to_lmcache(t.semantic, f.semantic, loop.path);
        kvio::test::kvio_events_to_monitor(t.events, f.events, r.v);
        std::string out;
        const json foreign = validate(tmp, f, "--lba-bytes 512", tag + "-foreign", &out);
        EXPECT_EQ(strip(foreign), strip(own)) << tag << "\n" << out;
        EXPECT_EQ(foreign["inputs"]["semantic"], "lmcache-kvio/2");
        EXPECT_EQ(foreign["inputs"]["commands"], "nvme-monitor");
        EXPECT_EQ(foreign["join"]["mode"], tag == "posix" ? "offset" : "user_data");
        EXPECT_NE(out.find("inputs: semantic lmcache-kvio/2, commands nvme-monitor"), std::string::npos) << out;
    }
}
