// kvio trace's queue-depth histograms (qd_read/qd_write) in their three modes, traced at once over the same fio run:
// the default (every command), --qd-sample 16 (1 issue in 16 sampled, each sample counted 16 times) and --events
// (each record's exact qd; given with --qd-sample 1, the exact default, which --events accepts), and a fourth,
// --block-only --d2c-sample 16 (what kvio drives runs: 1 request in 16 timed, the others counted). Two closed-loop
// readers: QD 1 (psync, every depth 1) and QD 4 (io_uring, batches of 4 submitted together after the previous 4
// completed: depths 1..4 in every batch, a period a sampler with a fixed phase would lock onto).
// A tracefs instance records the kernel's block_rq_complete events of both devices over the same run: a completion
// no BPF program ran for (docs/formats.md, "Lost completions") is the kernel's count minus the programs' runs
// (complete_runs), and each tracer's lost_completes must be exactly those, never one more (a completion a program saw
// and lost). A lost command stays in the in-flight count until the tracer finds it lost (its record's ts_lost), and
// the expected depths follow the same rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/helpers.h"
#include "tests/e2e/tracefs.h"
#include "trace/tracer.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t kQd1Cmds = 1024, kQd4Cmds = 4096;  // 4 MiB and 16 MiB of 4 KiB reads
constexpr uint64_t kSample = 16;                      // the sampled tracer's --qd-sample
constexpr uint64_t kD2cSample = 16;                   // the fourth tracer's --d2c-sample

struct QdRun {
    json exact, sampled, events_summary, d2c;  // kvio.trace/1 of each tracer
    // block_rq_complete events tracefs recorded on the two devices: between the marks written once every tracer was
    // attached and before they were stopped, and over the instance's whole life (which holds the tracers' lives)
    uint64_t kernel_completes_marked = 0, kernel_completes_all = 0, tracefs_overruns = 0;
    std::string lost_context;  // each lost record and tracefs' completion lines of its sector (task, irq context)
    std::vector<json> events;  // the --events tracer's records
    std::string sampled_text, d2c_text;  // the sampled tracers' human reports
    std::string qd1, qd4;                // MAJ:MIN of the QD 1 and the QD 4 device
};

// The three tracers on two loop devices, attached (--ready-file) before fio starts, stopped by SIGINT after it.
class TraceQd : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        a_ = new LoopDevice(64 * MiB);
        b_ = new LoopDevice(64 * MiB);
        for (auto* l : {a_, b_}) l->set_queue_attr("nomerges", "2");  // 4 KiB reads in one plug stay 4 commands
        dir_ = new TempDir();
        const std::string devs = " -d " + a_->name + " -d " + b_->name;
        auto tracer = [&](const std::string& tag, const std::string& args) {
            return kvio_bin() + " trace" + devs + " --ready-file " + dir_->file(tag + ".ready") + " --json " +
                   dir_->file(tag + ".json") + " " + args + " > " + dir_->file(tag + ".txt") + " & " + tag + "=$!; ";
        };
        const std::string fio =
            "fio --direct=1 --rw=randread --bs=4k --norandommap --output=/dev/null"
            " --name=qd1 --filename=" +
            a_->path +
            " --ioengine=psync --size=4m"
            " --name=qd4 --filename=" +
            b_->path +
            " --ioengine=io_uring --iodepth=4"
            " --iodepth_batch_submit=4 --iodepth_batch_complete_min=4 --size=16m";
        std::string wait_ready = "for i in $(seq 1200); do [ -e " + dir_->file("x.ready") + " ] && [ -e " +
                                 dir_->file("s.ready") + " ] && [ -e " + dir_->file("e.ready") + " ] && [ -e " +
                                 dir_->file("d.ready") + " ] && break; sleep 0.05; done; ";
        TracefsInstance tfs({"block_rq_complete"}, "dev == " + std::to_string(kernel_dev_of(a_->majmin)) +
                                                       " || dev == " + std::to_string(kernel_dev_of(b_->majmin)));
        const std::string mark = "echo kvio-qd-%s > " + tfs.dir + "/trace_marker; ";
        auto marked = [&](const char* what) {
            std::string m = mark;
            return m.replace(m.find("%s"), 2, what);
        };
        result_ = run(tracer("x", "-q") + tracer("s", "--qd-sample " + std::to_string(kSample)) +
                      tracer("e", "-q --qd-sample 1 --events " + dir_->file("ev.jsonl")) +
                      tracer("d", "--block-only --d2c-sample " + std::to_string(kD2cSample)) + wait_ready +
                      marked("ready") + fio + "; f=$?; " + marked("stop") +
                      "kill -INT $x $s $e $d; wait $x && wait $s && wait $e && wait $d && exit $f");
        tfs.stop();
        r_ = QdRun{};  // --gtest_repeat runs this again: nothing of the last run's counts stays
        r_.tracefs_overruns = tfs.overruns();
        const std::vector<std::string> lines = tfs.lines();
        bool in_marks = false;
        for (const std::string& line : lines) {
            if (line.find("kvio-qd-ready") != std::string::npos) in_marks = true;
            if (line.find("kvio-qd-stop") != std::string::npos) in_marks = false;
            if (line.find(" block_rq_complete: ") == std::string::npos) continue;
            ++r_.kernel_completes_all;
            r_.kernel_completes_marked += in_marks;
        }
        r_.exact = json::parse(slurp(dir_->file("x.json")));
        r_.sampled = json::parse(slurp(dir_->file("s.json")));
        r_.events_summary = json::parse(slurp(dir_->file("e.json")));
        r_.events = read_jsonl(dir_->file("ev.jsonl"));
        r_.sampled_text = slurp(dir_->file("s.txt"));
        r_.d2c = json::parse(slurp(dir_->file("d.json")));
        r_.d2c_text = slurp(dir_->file("d.txt"));
        r_.qd1 = a_->majmin;
        r_.qd4 = b_->majmin;
        for (const auto& e : r_.events) {
            if (!e.value("complete_lost", false)) continue;
            r_.lost_context += "lost: " + e.dump() + "\n";
            const std::string at = " " + std::to_string(e["sector"].get<uint64_t>()) + " + ";
            for (const std::string& line : lines)
                if (line.find(at) != std::string::npos) r_.lost_context += "  tracefs: " + line + "\n";
        }
    }
    static void TearDownTestSuite() {
        delete dir_;
        delete b_;
        delete a_;
    }
    static inline LoopDevice *a_ = nullptr, *b_ = nullptr;
    static inline TempDir* dir_ = nullptr;
    static inline CmdResult result_;
    static inline QdRun r_;
};

const json& device(const json& summary, const std::string& majmin) {
    for (const auto& d : summary["devices"])
        if (d["dev"] == majmin) return d;
    ADD_FAILURE() << majmin << " not in " << summary.dump();
    static const json none = {{"read", {{"cmds", 0}}},
                              {"histograms", {{"qd_read", {{"count", 0}, {"buckets", json::array()}}}}}};
    return none;
}

// Every bucket of a qd histogram within depths 1..qd; returns the count at depth qd.
uint64_t expect_depths_within(const json& h, uint64_t qd, const std::string& what) {
    uint64_t at_qd = 0;
    for (const auto& b : h["buckets"]) {
        EXPECT_GE(b[0].get<uint64_t>(), 1u) << what << ": " << h.dump();
        EXPECT_LE(b[1].get<uint64_t>(), qd + 1) << what << ": " << h.dump();
        if (b[0] == qd) at_qd = b[2];
    }
    return at_qd;
}

/// The [ts_issue, ts_complete) of every command of device `dev` (any op, any process: the --events tracer records
/// every one); a command whose completion was lost is in flight until the tracer found it lost (ts_lost; every tracer
/// finds it at the same kernel event: the request's next life), or to the end when found at stop.
std::vector<std::pair<uint64_t, uint64_t>> spans_of(const std::vector<json>& events, const std::string& dev) {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (const auto& e : events)
        if (e["type"] == "cmd" && e["dev"] == dev)
            v.emplace_back(e["ts_issue"].get<uint64_t>(),
                           e.value("ts_complete", e.value("ts_lost", std::numeric_limits<uint64_t>::max())));
    return v;
}

/// Commands of device `dev` whose completion no program saw (the --events tracer's "complete_lost" records).
uint64_t lost_on(const std::vector<json>& events, const std::string& dev) {
    uint64_t n = 0;
    for (const auto& e : events) n += e["type"] == "cmd" && e["dev"] == dev && e.value("complete_lost", false);
    return n;
}

/// The depth a command issued at `t` must have been counted at: 1 + the device's other commands in flight then. The
/// QD 1 reader's reads are 1 unless something else (a flush, a probe of the device) was in flight, which the exact
/// histograms must then count too.
uint64_t depth_at_issue(const std::vector<std::pair<uint64_t, uint64_t>>& spans, uint64_t t) {
    uint64_t n = 1;
    for (const auto& [issue, complete] : spans) n += issue < t && complete > t;
    return n;
}

/// Per depth, the QD 1 reader's reads issued at it (depth_at_issue); `others` gets a line on each command of the
/// device that is not one of fio's reads, for the failure messages.
std::map<uint64_t, uint64_t> qd1_depths(const QdRun& r, std::string& others) {
    const auto spans = spans_of(r.events, r.qd1);
    std::map<uint64_t, uint64_t> depths;
    for (const auto& e : r.events) {
        if (e["type"] != "cmd" || e["dev"] != r.qd1) continue;
        if (e["op"] != "read" || e.value("comm", "") != "fio") others += e.dump() + "\n";
        if (e["op"] == "read") ++depths[depth_at_issue(spans, e["ts_issue"])];
    }
    return depths;
}

/// A summary's in-flight bookkeeping counters, for failure messages (a lost completion keeps a command in flight).
std::string counters(const json& summary) {
    json c;
    for (const char* k : {"lost_completes", "complete_runs", "unmatched_completes", "stale_entries",
                          "rescued_by_backup", "recursion_misses", "backups_attached", "rq_table_spills"})
        c[k] = summary.value(k, json());
    return c.dump();
}

double mean(const json& h) { return h["count"] > 0 ? h["sum"].get<double>() / h["count"].get<double>() : 0; }

// Every command counted by every tracer; a lost completion only where the kernel ran no program for it: the
// kernel's completions (tracefs) minus the programs' runs, bounded by the marked window (below: an I/O outside the
// workload would widen it) and the instance's whole life (above).
TEST_F(TraceQd, AllThreeTracersRanTheWholeWorkload) {
    ASSERT_EQ(result_.status, 0) << result_.err;
    ASSERT_EQ(r_.tracefs_overruns, 0u) << "tracefs lost events: the comparison would be void";
    EXPECT_GE(r_.kernel_completes_marked, kQd1Cmds + kQd4Cmds);
    for (const json* s : {&r_.exact, &r_.sampled, &r_.events_summary, &r_.d2c}) {
        EXPECT_EQ(device(*s, r_.qd1)["read"]["cmds"], kQd1Cmds) << s->dump();
        EXPECT_EQ(device(*s, r_.qd4)["read"]["cmds"], kQd4Cmds) << s->dump();
        for (const char* k : {"unmatched_completes", "map_full", "dropped"}) EXPECT_EQ((*s)[k], 0) << k;
        const uint64_t runs = (*s)["complete_runs"], lost = (*s)["lost_completes"];
        EXPECT_LE(runs, r_.kernel_completes_all) << counters(*s);
        const uint64_t unseen_min = r_.kernel_completes_marked > runs ? r_.kernel_completes_marked - runs : 0;
        const uint64_t unseen_max = r_.kernel_completes_all - std::min(runs, r_.kernel_completes_all);
        EXPECT_LE(lost, unseen_max) << "a completion a program ran for was lost: " << counters(*s);
        if (s != &r_.d2c)  // --d2c-sample has state (and so a loss to find) for 1 request in 16 only
            EXPECT_GE(lost, unseen_min) << "a completion no program ran for was not reported: " << counters(*s);
        if (lost)
            std::cout << "lost completions (no program ran): " << lost << " of " << r_.kernel_completes_marked << ", "
                      << counters(*s) << "\n";
    }
    if (!r_.lost_context.empty()) std::cout << r_.lost_context;
}

TEST_F(TraceQd, DefaultCountsEveryCommandsDepth) {
    EXPECT_EQ(r_.exact["qd_sample_every"], 1);
    const json& h1 = device(r_.exact, r_.qd1)["histograms"]["qd_read"];
    EXPECT_EQ(h1["count"], kQd1Cmds);
    // QD 1: every depth is 1, but for reads that found another command of the device in flight (the --events
    // tracer, run beside, saw each one)
    std::string others;
    json want = json::array();
    for (auto [qd, n] : qd1_depths(r_, others)) want.push_back({qd, qd + 1, n});
    EXPECT_EQ(h1["buckets"], want) << "other commands on the QD 1 device:\n"
                                   << others << "counters: " << counters(r_.exact)
                                   << "\nevents tracer's: " << counters(r_.events_summary);
    const json& h4 = device(r_.exact, r_.qd4)["histograms"]["qd_read"];
    EXPECT_EQ(h4["count"], kQd4Cmds);
    // the last of each batch of 4 finds the other 3 in flight (the loop device completes them on a worker), and a lost
    // completion one more until it is found lost
    expect_depths_within(h4, 4 + lost_on(r_.events, r_.qd4), "exact QD 4");
    uint64_t at4 = 0;
    for (const auto& b : h4["buckets"]) at4 += b[0] == 4 ? b[2].get<uint64_t>() : 0;
    EXPECT_GT(at4, 0u) << h4.dump();
}

TEST_F(TraceQd, QdSampleSamplesAndWeighsTheDepth) {
    const uint64_t n = kSample;
    EXPECT_EQ(r_.sampled["qd_sample_every"], n);
    for (auto [dev, cmds, qd] : {std::tuple{r_.qd1, kQd1Cmds, 1u}, {r_.qd4, kQd4Cmds, 4u}}) {
        const json& h = device(r_.sampled, dev)["histograms"]["qd_read"];
        const uint64_t count = h["count"];
        EXPECT_EQ(count % n, 0u) << h.dump();
        // 1 in n of the issues (golden-ratio spacing): within 4 samples of cmds / n
        EXPECT_LE(std::llabs(int64_t(count) - int64_t(cmds)), int64_t(4 * n)) << "QD " << qd << ": " << h.dump();
        expect_depths_within(h, qd + lost_on(r_.events, dev), "sampled QD " + std::to_string(qd));
    }
    if (!lost_on(r_.events, r_.qd1))  // a lost completion is one more in flight until it is found lost
        EXPECT_EQ(device(r_.sampled, r_.qd1)["histograms"]["qd_read"]["buckets"].size(), 1u)
            << "QD 1: every depth is 1";
    // The sampled mean is the exact one's (a sampler locked on the batches' phase would see depth 1 only).
    const json& hx = device(r_.exact, r_.qd4)["histograms"]["qd_read"];
    const json& hs = device(r_.sampled, r_.qd4)["histograms"]["qd_read"];
    EXPECT_NEAR(mean(hs), mean(hx), 0.5) << "sampled " << hs.dump() << "\nexact " << hx.dump();
    EXPECT_NE(r_.sampled_text.find("qd_read [depth sampled at 1 issue in " + std::to_string(n) +
                                   ", each sample counted " + std::to_string(n) + " times] ("),
              std::string::npos)
        << r_.sampled_text;
    EXPECT_EQ(r_.sampled_text.find("bssplit_read ["), std::string::npos) << "only the QD histograms are sampled";
}

TEST_F(TraceQd, EventsStayExact) {
    EXPECT_EQ(r_.events_summary["qd_sample_every"], 1);
    uint64_t n1 = 0, n4 = 0, at4 = 0;
    const auto spans1 = spans_of(r_.events, r_.qd1);
    std::vector<const json*> seen1;  // the QD 1 device's commands so far: the context of a first mismatch
    bool told = false;
    for (const auto& e : r_.events) {
        if (e["type"] == "cmd" && e["dev"] == r_.qd1) seen1.push_back(&e);
        if (e["type"] != "cmd" || e["op"] != "read") continue;
        const uint64_t qd = e["qd"];
        if (e["dev"] == r_.qd1) {
            ++n1;
            const uint64_t want = depth_at_issue(spans1, e["ts_issue"]);  // 1 unless another was in flight
            if (qd != want && !told) {
                told = true;
                std::string before;
                for (size_t i = seen1.size() > 5 ? seen1.size() - 5 : 0; i < seen1.size(); ++i)
                    before += seen1[i]->dump() + "\n";
                ADD_FAILURE() << "first QD 1 read at depth " << qd << " where " << want
                              << " commands were in flight; the device's last commands:\n"
                              << before << "counters: " << counters(r_.events_summary);
            }
            EXPECT_EQ(qd, want) << e.dump();
        } else if (e["dev"] == r_.qd4) {
            ++n4;
            EXPECT_GE(qd, 1u) << e.dump();
            EXPECT_LE(qd, 4u + lost_on(r_.events, r_.qd4)) << e.dump();
            at4 += qd == 4;
        }
    }
    EXPECT_EQ(n1, kQd1Cmds);
    EXPECT_EQ(n4, kQd4Cmds);
    EXPECT_GT(at4, 0u);
    EXPECT_EQ(device(r_.events_summary, r_.qd4)["histograms"]["qd_read"]["count"], kQd4Cmds);
}

/// The names of `summary`'s programs_attached without their attach kind (_btf, _raw: the kernel decides which).
std::set<std::string> attached(const json& summary) {
    std::set<std::string> out;
    for (const auto& p : summary["programs_attached"]) {
        std::string n = p;
        for (const char* k : {"_btf", "_raw"})
            if (n.size() > 4 && n.compare(n.size() - 4, 4, k) == 0) n.resize(n.size() - 4);
        out.insert(n);
    }
    return out;
}

TEST_F(TraceQd, D2cSampleCountsEveryCommandAndTimesOneInN) {
    const uint64_t n = kD2cSample;
    EXPECT_EQ(r_.d2c["d2c_sample_every"], n);
    EXPECT_EQ(r_.exact["d2c_sample_every"], 1);
    // Binomial(cmds, 1/16) samples: the bounds are 4.9 (QD 1, 1024 commands) and 6.6 (QD 4) standard deviations wide
    uint64_t depth_only = 0;  // samples with a depth and no D2C: timed requests whose completion no program saw
    for (auto [dev, cmds, bound] : {std::tuple{r_.qd1, kQd1Cmds, 0.6}, {r_.qd4, kQd4Cmds, 0.4}}) {
        const json& hs = device(r_.d2c, dev)["histograms"];
        EXPECT_EQ(hs["bssplit_read"]["count"], cmds) << "sizes are counted for every command";
        EXPECT_EQ(hs["lba_read"]["count"], cmds);
        const uint64_t timed = hs["d2c_read"]["count"];
        EXPECT_EQ(timed % n, 0u) << hs["d2c_read"].dump();
        EXPECT_NEAR(double(timed), double(cmds), bound * double(cmds)) << hs["d2c_read"].dump();
        const uint64_t depths = hs["qd_read"]["count"];
        ASSERT_GE(depths, timed) << "each timed request carries its depth";
        depth_only += depths - timed;
    }
    EXPECT_EQ(depth_only, n * r_.d2c["lost_completes"].get<uint64_t>())
        << "a depth without a D2C is a lost completion's, each counted " << n << " times";
    // The sampled D2C is the exact tracer's over the same commands: median within a factor of 2, mean depth within 0.5
    const json& dx = device(r_.exact, r_.qd4)["histograms"];
    const json& ds = device(r_.d2c, r_.qd4)["histograms"];
    const double px = dx["d2c_read"]["percentiles"]["p50"]["value"], ps = ds["d2c_read"]["percentiles"]["p50"]["value"];
    EXPECT_GT(ps, px / 2) << ds["d2c_read"].dump() << "\nexact " << dx["d2c_read"].dump();
    EXPECT_LT(ps, px * 2) << ds["d2c_read"].dump() << "\nexact " << dx["d2c_read"].dump();
    EXPECT_NEAR(mean(ds["qd_read"]), mean(dx["qd_read"]), 0.5) << ds["qd_read"].dump() << "\nexact " << dx["qd_read"];
    const std::string note =
        " [1 request in " + std::to_string(n) + " timed, each counted " + std::to_string(n) + " times] (";
    EXPECT_NE(r_.d2c_text.find("d2c_read" + note), std::string::npos) << r_.d2c_text;
    EXPECT_EQ(r_.d2c_text.find("bssplit_read ["), std::string::npos) << "sizes are not sampled";
}

// Which programs each mode pays for: a program attached where its mode does not need it costs every command (or
// every fork, every syscall) of the machine.
TEST_F(TraceQd, EachModeAttachesOnlyWhatItNeeds) {
    const std::set<std::string> block = {"block_rq_complete", "block_rq_insert", "block_rq_issue", "block_rq_merge",
                                         "block_rq_requeue"};
    EXPECT_EQ(attached(r_.d2c), block) << "--block-only: the request's life only; " << r_.d2c.dump();
    EXPECT_EQ(r_.d2c["syscall_hooks"], "none");
    // histograms with syscalls, no task filter: no submitter (block_getrq) and no fork to follow
    const auto x = attached(r_.exact);
    for (const auto& p : block) EXPECT_EQ(x.count(p), 1u) << p;
    EXPECT_EQ(x.count("block_getrq"), 0u) << r_.exact["programs_attached"];
    EXPECT_EQ(x.count("sched_process_fork"), 0u) << r_.exact["programs_attached"];
    EXPECT_NE(r_.exact["syscall_hooks"], "none");
    EXPECT_GT(x.size(), block.size()) << "the syscall programs: " << r_.exact["programs_attached"];
    // --events: each command's submitter
    EXPECT_EQ(attached(r_.events_summary).count("block_getrq"), 1u) << r_.events_summary["programs_attached"];
}

TEST_F(TraceQd, D2cSampleRefusedWhereEveryRequestIsNeeded) {
    for (const std::string& mode : {"--events " + dir_->file("refused.jsonl"), std::string("--files"),
                                    std::string("-c fio"), std::string("--per-process")}) {
        auto r = run(kvio_bin() + " trace -d " + a_->name + " --d2c-sample 16 --duration 0.1 " + mode);
        EXPECT_NE(r.status, 0) << mode;
        EXPECT_NE(r.err.find("--d2c-sample 16 needs histogram mode"), std::string::npos) << mode << ": " << r.err;
    }
}

}  // namespace
