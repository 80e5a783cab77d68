// kvio trace's in-flight tables (bpf/kvio_trace.h: rq_table, bio_table) and backup programs, through their test
// hooks: tables of one slot send nearly every request and bio owner to the fallback hashes, and primaries that skip
// every third run (a hook only build/kvio-test-hooks has) leave those runs to the backups. Either way every command
// is traced once, with its submitter.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

// 2 fio jobs x 64 random 4 KiB reads; io_uring submits 16 SQEs per io_uring_enter, so up to 16 bios wait in the
// plug between block_getrq and issue (their owners are all in the tables at once).
constexpr int kReads = 128;
std::string fio_reads(const LoopDevice& loop) {
    return "fio --name=r --filename=" + loop.path +
           " --direct=1 --rw=randread --bs=4k --size=256k --numjobs=2 "
           "--ioengine=io_uring --iodepth=16 --iodepth_batch_submit=16 --norandommap --output=/dev/null";
}

struct Traced {
    json summary;
    std::vector<json> reads;  // the read commands of the events file
};

// `BIN trace -d LOOP --events --json -- fio` with the environment `env`; with `scheduler`, the loop device uses it.
Traced trace_reads(const std::string& env, const std::string& scheduler = "", const std::string& bin = kvio_bin()) {
    LoopDevice loop(16 * 1024 * 1024);
    loop.set_queue_attr("nomerges", "2");  // adjacent random reads in one plug would merge: one command each
    if (!scheduler.empty()) loop.set_queue_attr("scheduler", scheduler);
    TempDir dir;
    auto r = run(env + " " + bin + " trace -q -d " + loop.name + " --events " + dir.file("ev.jsonl") + " --json " +
                 dir.file("t.json") + " -- " + fio_reads(loop));
    EXPECT_EQ(r.status, 0) << env << ": " << r.err;
    Traced t;
    t.summary = json::parse(slurp(dir.file("t.json")));
    for (const auto& e : read_jsonl(dir.file("ev.jsonl")))
        if (e["type"] == "cmd" && e["dev"] == loop.majmin && e["op"] == "read") t.reads.push_back(e);
    return t;
}

// Every read once, with its D2C and its submitter, none lost or unattributed.
void expect_exact(const Traced& t, const std::string& what) {
    ASSERT_EQ(t.reads.size(), size_t(kReads)) << what;
    for (const auto& c : t.reads) {
        EXPECT_EQ(c["comm"], "fio") << what << ": " << c.dump();
        EXPECT_EQ(c["d2c_ns"].get<uint64_t>(), c["ts_complete"].get<uint64_t>() - c["ts_issue"].get<uint64_t>())
            << what;
    }
    const json& s = t.summary;
    ASSERT_EQ(s["devices"].size(), 1u) << what << ": " << s.dump();
    const json& d = s["devices"][0];
    EXPECT_EQ(d["read"]["cmds"], kReads) << what;
    for (const char* h : {"d2c_read", "bssplit_read", "qd_read", "lba_read"})
        EXPECT_EQ(d["histograms"][h]["count"], kReads) << what << " " << h;
    for (const char* k : {"unattributed", "lost_completes", "unmatched_completes", "map_full", "dropped"})
        EXPECT_EQ(s[k], 0) << what << " " << k;
}

TEST(TraceTables, OneSlotTablesSpillEveryRequestAndOwnerAndLoseNone) {
    for (const std::string sched : {"none", "mq-deadline"}) {  // mq-deadline: each request is inserted before its issue
        Traced t = trace_reads("KVIO_TRACE_SLOTS=1", sched);
        expect_exact(t, sched);
        EXPECT_GT(t.summary["rq_table_spills"].get<uint64_t>(), 0u) << sched;
        EXPECT_GT(t.summary["owner_table_spills"].get<uint64_t>(), 0u) << sched;
        if (sched == "mq-deadline") EXPECT_EQ(t.summary["devices"][0]["histograms"]["q2d_read"]["count"], kReads);
    }
}

TEST(TraceTables, DefaultTablesHoldEveryRequest) {
    Traced t = trace_reads("");
    expect_exact(t, "default");
    EXPECT_EQ(t.summary["rq_table_spills"], 0);
    EXPECT_EQ(t.summary["owner_table_spills"], 0);
    EXPECT_EQ(t.summary["backups_attached"], json::array()) << "backups run only after a primary missed a run";
}

TEST(TraceTables, BackupsRescueWhatThePrimariesSkip) {
    // The rescued runs' histograms are in a second per-CPU set (rescue_hists) that the collector adds in.
    Traced t = trace_reads("KVIO_TRACE_TEST_SKIP_EVERY=3", "", kvio_test_hooks_bin());
    expect_exact(t, "skip every 3rd");
    EXPECT_GT(t.summary["rescued_by_backup"].get<uint64_t>(), 0u);
    EXPECT_EQ(t.summary["backups_attached"], json::parse(R"(["issue", "complete"])"));
}

TEST(TraceTables, ProductionBinaryHasNoTestHooks) {
    Traced t = trace_reads("KVIO_TRACE_TEST_SKIP_EVERY=3");  // build/kvio: the primaries run every time
    expect_exact(t, "production, hook set");
    EXPECT_EQ(t.summary["rescued_by_backup"], 0);
    EXPECT_EQ(t.summary["backups_attached"], json::array());
}

}  // namespace
