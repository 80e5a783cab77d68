// Outputs whole or absent, an MPI launcher seen without --mpi, and a dead run's temporary cache directory.
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/jsonl.h"
#include "common/output_file.h"
#include "common/temp_name.h"
#include "common/warn.h"
#include "report/report_html.h"
#include "workload/model.h"
#include "workload/serving/cluster/multi_client.h"
#include "workload/serving/mlperf/closed_run.h"
#include "workload/serving/results/metrics.h"
#include "workload/serving/tiers/storage_common.h"

namespace fs = std::filesystem;
using namespace kvio;

namespace {

std::string temp_dir(const char* base) {
    std::string t = std::string(base) + "/kvio-unit-rel-XXXXXX";
    if (!::mkdtemp(t.data())) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    return t;
}

/// A 64 KiB tmpfs with every block taken: creating a file works, every write fails with ENOSPC (root only).
struct FullTmpfs {
    FullTmpfs() : dir(temp_dir("/var/tmp")) {
        ok = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") == 0;
        if (!ok) return;
        std::ofstream f(dir + "/filler");
        std::string block(4096, 'x');
        while (f.write(block.data(), std::streamsize(block.size())) && f.flush()) {}
    }
    ~FullTmpfs() {
        if (ok) ::umount2(dir.c_str(), MNT_DETACH);
        fs::remove_all(dir);
    }
    size_t entries() const {
        size_t n = 0;
        for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename() != "filler";
        return n;
    }
    std::string dir;
    bool ok = false;
};

}  // namespace

TEST(WholeOrAbsent, TextAndStreamedFilesOnAFullFilesystem) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (tmpfs mount)";
    FullTmpfs full;
    ASSERT_TRUE(full.ok) << std::strerror(errno);
    const std::string big(1 << 20, 'x');
    try {
        write_text_file(full.dir + "/a.json", big);
        FAIL() << "a write to a full filesystem succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), full.dir + "/a.json: write failed: No space left on device");
    }
    try {
        OutputFile out(full.dir + "/b.jsonl");
        out.stream() << big;
        out.close();
        FAIL() << "a write to a full filesystem succeeded";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), full.dir + "/b.jsonl: write failed: No space left on device");
    }
    EXPECT_EQ(full.entries(), 0u) << "nothing under the final names, no temporary file left";
}

TEST(WholeOrAbsent, PendingRenameKeepsTheOldFileUntilCommit) {
    const std::string d = temp_dir("/tmp");
    const std::string p = d + "/out.json";
    std::ofstream(p) << "old\n";
    {
        PendingRename pr(p);
        EXPECT_EQ(pr.write_path(), p + ".tmp-" + std::to_string(getpid()));
        std::ofstream(pr.write_path()) << "new\n";
        // not committed: the old file stays, the temporary goes
    }
    EXPECT_FALSE(fs::exists(p + ".tmp-" + std::to_string(getpid())));
    std::ifstream in(p);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "old");
    {
        PendingRename pr(p);
        std::ofstream(pr.write_path()) << "new\n";
        pr.commit();
    }
    std::ifstream in2(p);
    std::getline(in2, line);
    EXPECT_EQ(line, "new");
    PendingRename dev("/dev/null");  // a device is written in place
    EXPECT_EQ(dev.write_path(), "/dev/null");
    fs::remove_all(d);
}

TEST(MpiLaunch, RanksWithoutMpiAreRefused) {
    auto env_of = [](std::map<std::string, std::string> m) {
        return [m](const char* n) -> const char* {
            auto it = m.find(n);
            return it == m.end() ? nullptr : it->second.c_str();
        };
    };
    EXPECT_EQ(serving::mpi_launch_without_mpi(env_of({})), "");
    // Open MPI's mpirun -np 2
    std::string m = serving::mpi_launch_without_mpi(
        env_of({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"PMIX_RANK", "0"}}));
    EXPECT_NE(m.find("OMPI_COMM_WORLD_SIZE=2"), std::string::npos) << m;
    EXPECT_NE(m.find("--mpi"), std::string::npos) << m;
    // MPICH / Hydra
    EXPECT_NE(serving::mpi_launch_without_mpi(env_of({{"PMI_SIZE", "4"}, {"PMI_RANK", "3"}})), "");
    // a PMIx launcher that exports only the rank: rank 1 means there are two
    EXPECT_NE(serving::mpi_launch_without_mpi(env_of({{"PMIX_RANK", "1"}})), "");
    // mpirun -np 1: one copy, an ordinary run
    EXPECT_EQ(serving::mpi_launch_without_mpi(env_of({{"OMPI_COMM_WORLD_SIZE", "1"}, {"PMIX_RANK", "0"}})), "");
    EXPECT_EQ(serving::mpi_launch_without_mpi(env_of({{"PMI_SIZE", "x"}})), "");
    // --mpi by hand: no launcher variable at all is refused with the fix; any launcher's, even one rank, is not
    const std::string by_hand = serving::mpi_flag_without_launcher(env_of({}));
    EXPECT_NE(by_hand.find("not started by an MPI launcher"), std::string::npos) << by_hand;
    EXPECT_NE(by_hand.find("mpirun -np N"), std::string::npos) << by_hand;
    EXPECT_EQ(serving::mpi_flag_without_launcher(env_of({{"OMPI_COMM_WORLD_SIZE", "1"}})), "");
    EXPECT_EQ(serving::mpi_flag_without_launcher(env_of({{"PMI_RANK", "0"}})), "");
    EXPECT_EQ(serving::mpi_flag_without_launcher(env_of({{"PMIX_RANK", "0"}})), "");
    // the rank that says a command-line error: Open MPI's, Hydra's, PMIx's; none or not a number: -1
    EXPECT_EQ(serving::mpi_rank_from_env(env_of({})), -1);
    EXPECT_EQ(serving::mpi_rank_from_env(env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"PMIX_RANK", "3"}})), 3);
    EXPECT_EQ(serving::mpi_rank_from_env(env_of({{"PMI_RANK", "2"}})), 2);
    EXPECT_EQ(serving::mpi_rank_from_env(env_of({{"PMIX_RANK", "0"}})), 0);
    EXPECT_EQ(serving::mpi_rank_from_env(env_of({{"PMIX_RANK", "1x"}})), -1);
}

// A SIGKILLed writer leaves PATH.tmp-PID: the next writer of PATH removes it and says so; a live process's
// temporary and other names stay.
TEST(WholeOrAbsent, TheNextWriterRemovesADeadWritersTemporary) {
    const std::string d = temp_dir("/tmp");
    const std::string p = d + "/events.jsonl";
    pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);  // `child` no longer runs
    const std::string dead = p + ".tmp-" + std::to_string(child);
    const std::string live = p + ".tmp-" + std::to_string(getppid());
    const std::string other = p + ".tmp-x1", sibling = d + "/other.jsonl.tmp-" + std::to_string(child);
    for (const auto& f : {dead, live, other, sibling}) std::ofstream(f) << "partial";
    std::vector<std::string> warnings;
    auto old = set_warning_sink([&](const std::string& m) { warnings.push_back(m); });
    {
        PendingRename pr(p);
        std::ofstream(pr.write_path()) << "new\n";
        pr.commit();
    }
    set_warning_sink(old);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(live));
    EXPECT_TRUE(fs::exists(other));
    EXPECT_TRUE(fs::exists(sibling)) << "another output's temporary is its own writer's to remove";
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(dead), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("process " + std::to_string(child) + " is gone"), std::string::npos) << warnings[0];
    fs::remove_all(d);
}

// NAME.tmp-PID is the one shape both cleaners (the next writer of NAME, kvio run's guard) remove; anything else stays.
TEST(WholeOrAbsent, TemporaryNamesAreParsedOneWay) {
    EXPECT_EQ(temporary_name("/d/r.json", 4242), "/d/r.json.tmp-4242");
    EXPECT_EQ(temporary_writer("r.json.tmp-4242"), 4242);
    EXPECT_EQ(temporary_writer("r.json.tmp-4242", "r.json"), 4242);
    EXPECT_EQ(temporary_writer("r.json.tmp-4242", "r.jso"), 0) << "another output's temporary";
    EXPECT_EQ(temporary_writer("x.r.json.tmp-4242", "r.json"), 0);
    for (const char* no : {"r.json", "r.json.tmp-", "r.json.tmp-12a", "r.json.tmp-0", "r.json.tmp-1234567890",
                           ".tmp-12", "r.json.tmp--1", "r.json.tmp-12.zst"})
        EXPECT_EQ(temporary_writer(no), 0) << no;
}

// A valid file of another kind is named by what it is, not called invalid JSON or short of a field.
TEST(WrongKind, ReadersNameTheKindTheyFound) {
    const std::string d = temp_dir("/tmp");
    const std::string events = d + "/events.jsonl", trace = d + "/trace.json";
    std::ofstream(events) << R"({"type":"cmd","src":"block","dev":"7:0","op":"read","bytes":4096,"ts_issue":1})"
                          << "\n"
                          << R"({"type":"summary","dev":"7:0"})"
                          << "\n";
    std::ofstream(trace) << "{\n  \"schema\": \"kvio.trace/1\",\n  \"devices\": []\n}\n";
    auto what = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(what([&] { read_json_file(events); }),
              events + ":1: holds kvio.events/1 records (kvio trace --events) as JSON lines, not one JSON document");
    EXPECT_EQ(what([&] {
                  JsonlReader r(trace);
                  json j;
                  r.next(j);
              }),
              trace + ":1: is a kvio.trace/1 document (one JSON document), not JSON lines");
    JsonSource first{events, 1, "kvio.semantic/1"};
    const json cmd = json::parse(R"({"type":"cmd","src":"block","dev":"7:0"})");
    EXPECT_EQ(what([&] { get_string(cmd, "schema", first); }),
              events + ":1: field 'schema': missing: the file holds kvio.events/1 records (kvio trace --events)");
    JsonSource later{events, 2, "kvio.semantic/1"}, unset{events, 1};
    EXPECT_EQ(what([&] { get_string(cmd, "schema", later); }), events + ":2: field 'schema': missing");
    EXPECT_EQ(what([&] { get_string(cmd, "schema", unset); }), events + ":1: field 'schema': missing");
    const json sem = json::parse(R"({"type":"meta","schema":"kvio.semantic/1"})");
    EXPECT_EQ(what([&] { get_string(sem, "engine", first); }), events + ":1: field 'engine': missing")
        << "the kind expected is not named";
    // A model config and an HTML report given kvio's own outputs.
    const json results = json::parse(R"({"requests_completed": 3, "summary": {}})");
    EXPECT_EQ(what([&] { workload::model_from_hf_json(results, "r.json"); }),
              "r.json: expected a Hugging Face config.json: the file holds kvio simulate / MLPerf KV-cache results");
    std::ofstream(d + "/r.json") << results.dump();
    EXPECT_EQ(what([&] { report::write_trace_report({.trace_json = d + "/r.json", .out = d + "/r.html"}); }),
              d + "/r.json: field 'schema': expected \"kvio.trace/1\" (a kvio trace --json summary): the file holds "
                  "kvio simulate / MLPerf KV-cache results");
    EXPECT_FALSE(fs::exists(d + "/r.html"));
    fs::remove_all(d);
}

TEST(TempCacheDir, DeadOwnersDirectoriesAreRemovedLiveOnesKept) {
    const std::string parent = temp_dir("/tmp");
    pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);  // `child` no longer runs
    const std::string dead = parent + "/kv_cache_" + std::to_string(child) + "_abc123";
    const std::string live = parent + "/kv_cache_" + std::to_string(getpid()) + "_def456";
    const std::string other = parent + "/kv_cache_XYZ123";  // an old-style name: whose it was is unknown
    for (const auto& p : {dead, live, other}) fs::create_directory(p);
    std::ofstream(dead + "/k.npy") << "x";
    const auto removed = serving::remove_dead_temp_cache_dirs(parent);
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_EQ(removed[0], dead);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(live));
    EXPECT_TRUE(fs::exists(other));
    const std::string made = serving::make_temp_cache_dir(parent);
    EXPECT_EQ(fs::path(made).filename().string().rfind("kv_cache_" + std::to_string(getpid()) + "_", 0), 0u) << made;
    EXPECT_TRUE(serving::remove_dead_temp_cache_dirs(parent).empty()) << "our own directory is a live one";
    fs::remove_all(parent);
}

// Top-level multi_turn_cache_hits summed the hits of completed requests only, so it disagreed with
// cache_stats.multi_turn_hits (0 vs 2, 5 vs 8, 17 vs 32) whenever the stop cut requests after their multi-turn reads.
TEST(MultiTurnCounts, ReadsCountWhenTheyHappenNotWhenTheRequestCompletes) {
    serving::RunMetrics m;
    m.count_multi_turn(true);
    m.count_multi_turn(true);
    m.count_multi_turn(false);  // a request that never completes: no record()
    const auto top = m.top_level_json(42);
    EXPECT_EQ(top["multi_turn_cache_hits"], 2);
    EXPECT_EQ(top["multi_turn_cache_misses"], 1);
    EXPECT_EQ(m.multi_turn_json()["cache_hits"], 2);
}

// Each of N clients' automatic storage limit on one shared filesystem (docs/mlperf-benchmark.md, "Each rank's share
// of a shared cache filesystem"): whole blocks, and the N shares together within 95 % of what statvfs says an
// unprivileged writer may still allocate (f_bavail); measured on this machine's /dev/shm and on fixed numbers.
TEST(StorageShare, SharesOfOneFilesystemNeverPassItsRoom) {
    const kvio::serving::FsRoom fixed{4096, 2419518};  // a 10 GiB ext4 as mkfs.ext4 leaves it
    EXPECT_EQ(kvio::serving::shared_auto_capacity(fixed, 2), 1149271ull * 4096);
    EXPECT_EQ(kvio::serving::shared_auto_capacity(fixed, 0), kvio::serving::shared_auto_capacity(fixed, 1));
    const std::optional<kvio::serving::FsRoom> room = kvio::serving::dir_room("/dev/shm");
    ASSERT_TRUE(room.has_value());
    ASSERT_GT(room->block, 0u);
    for (int n = 1; n <= 7; ++n) {
        const uint64_t share = kvio::serving::shared_auto_capacity(*room, n);
        EXPECT_EQ(share % room->block, 0u) << n;
        const double usable = 0.95 * double(room->avail_blocks) * double(room->block);
        EXPECT_LE(double(share) * n, usable) << n;
        EXPECT_GT(double(share) * n + double(room->block) * n, usable - double(room->block)) << n;
    }
    EXPECT_FALSE(kvio::serving::dir_room("/nonexistent-kvio-unit").has_value());
}

// A client's results placed as a CLOSED rank file: marked, its output the rank file itself. On a full results disk
// the marked copy cannot be written: before, the client's file was renamed into place unmarked (no
// kvio.mlperf_closed, flags.output naming the client's temporary name) and the run went on as if it were whole; now
// no file stays under either name and the failure names the rank file.
TEST(ClosedRankFile, PlacedMarkedOrNotAtAll) {
    const std::string src = temp_dir("/var/tmp");
    const std::string from = src + "/kvio_merged_results.json.rank0.json", to = src + "/kvcache_results_x.json";
    const nlohmann::ordered_json doc = {{"seed", 42}, {"kvio", {{"config", {{"flags", {{"output", from}}}}}}}};
    const nlohmann::ordered_json mark = {{"option", 1}, {"trial", 0}, {"rank", 0}, {"closed_submission", false}};
    std::ostringstream progress;
    EXPECT_EQ(serving::place_marked_file(from, to, mark, progress), serving::Placement::Absent);
    std::ofstream(from) << doc.dump();
    ASSERT_EQ(serving::place_marked_file(from, to, mark, progress), serving::Placement::Placed) << progress.str();
    EXPECT_FALSE(fs::exists(from));
    std::ifstream in(to);
    const auto placed = nlohmann::ordered_json::parse(in);
    EXPECT_EQ(placed["kvio"]["config"]["flags"]["output"], to);
    EXPECT_EQ(placed["kvio"]["mlperf_closed"], mark);
    if (geteuid() != 0) GTEST_SKIP() << "needs root (tmpfs mount)";
    FullTmpfs full;
    ASSERT_TRUE(full.ok) << std::strerror(errno);
    std::ofstream(from) << doc.dump();
    const std::string full_to = full.dir + "/kvcache_results_x.json";
    EXPECT_EQ(serving::place_marked_file(from, full_to, mark, progress), serving::Placement::Failed);
    EXPECT_FALSE(fs::exists(from)) << "the unmarked results stayed";
    EXPECT_EQ(full.entries(), 0u) << "a file under the rank file's name or a temporary one";
    EXPECT_NE(progress.str().find("mlperf-closed: " + full_to + ": not written: " + full_to +
                                  ": write failed: No space left on device (" + from + " removed"),
              std::string::npos)
        << progress.str();
    fs::remove_all(src);
}
