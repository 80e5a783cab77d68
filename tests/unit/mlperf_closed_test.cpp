// Unit tests of the CLOSED protocol's rules and arithmetic (workload/serving/mlperf/closed_rules.h) and of SHA-256
// (common/sha256.h): the refusals and their rules, and aggregate_option over rank files written here with known
// values (docs/mlperf-benchmark.md, "The CLOSED rules").
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/sha256.h"
#include "workload/serving/mlperf/check.h"
#include "workload/serving/mlperf/closed_rules.h"
#include "workload/serving/mlperf/closed_run.h"
#include "workload/serving/mlperf/provenance.h"
#include "workload/serving/mlperf/sizing.h"

using namespace kvio::serving;
namespace fs = std::filesystem;

TEST(Sha256, KnownVectors) {
    // FIPS 180-4 examples (the empty string, "abc", the two-block message).
    EXPECT_EQ(kvio::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(kvio::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(kvio::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(kvio::sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(ClosedRules, TheTable) {
    ASSERT_EQ(closed_options().size(), 3u);
    EXPECT_EQ(closed_option(1).num_users, 200);
    EXPECT_EQ(closed_option(2).cpu_mem_gb, 4);
    EXPECT_EQ(closed_option(3).max_concurrent_allocs, 4);
    EXPECT_EQ(std::string(closed_option(3).model), "llama3.1-70b-instruct");
    for (const auto& o : closed_options()) {
        EXPECT_EQ(o.duration_s, 300);
        EXPECT_EQ(o.gpu_mem_gb, 0);
        EXPECT_EQ(std::string(o.generation_mode), "none");
    }
    EXPECT_THROW(closed_option(4), std::exception);
    SimConfig base;
    base.config = "x.yaml";
    base.enable_autoscaling = true;
    const SimConfig c = closed_option_config(base, closed_option(2), 300);
    EXPECT_EQ(c.num_users, 100);
    EXPECT_EQ(c.cpu_mem_gb, 4);
    EXPECT_EQ(*c.seed, 42);
    EXPECT_TRUE(c.config.empty());
    EXPECT_FALSE(c.enable_autoscaling);
}

TEST(ClosedRules, RefusalsNameTheRule) {
    EXPECT_TRUE(closed_refusals({"--cache-dir", "--num-clients", "--quiet", "--seed"}, 42).empty());
    auto one = [](const std::string& flag, std::optional<int64_t> seed = std::nullopt) {
        const auto v = closed_refusals({flag}, seed);
        return v.size() == 1 ? v[0] : std::string("(") + std::to_string(v.size()) + " refusals)";
    };
    EXPECT_NE(one("--config").find("kvcacheClosedSequenceLocks"), std::string::npos);
    EXPECT_NE(one("--seed", 7).find("kvcacheClosedSequenceLocks"), std::string::npos);
    EXPECT_NE(one("--enable-autoscaling").find("kvcacheAutoscalingProhibited"), std::string::npos);
    EXPECT_NE(one("--target-saturation").find("kvcacheAutoscalingProhibited"), std::string::npos);
    EXPECT_NE(one("--cpu-mem-gb").find("kvcacheFixedWorkloadPerOption"), std::string::npos);
    EXPECT_NE(one("--enable-rag").find("kvcacheClosedImmutable"), std::string::npos);
    EXPECT_NE(one("--output").find("kvcachePerClientIsolation"), std::string::npos);
}

namespace {
void write_rank(const std::string& dir, int option, int trial, int rank, double rbw, double wbw, double tps,
                double rp95, std::optional<double> wp95, int entries) {
    const std::string d = dir + "/" + rank_dir_name(option, trial, rank);
    fs::create_directories(d);
    nlohmann::json cs = {{"tier_storage_read_bandwidth_gbps", rbw},
                         {"tier_storage_write_bandwidth_gbps", wbw},
                         {"storage_read_device_p95_ms", rp95},
                         {"storage_entries", entries}};
    if (wp95) cs["storage_write_device_p95_ms"] = *wp95;
    cs["tier_storage_kv_bytes_read_gb"] = rbw;  // a rank that read nothing has 0 read bandwidth too
    nlohmann::json j = {{"seed", 42 + rank},
                        {"summary", {{"storage_throughput_tokens_per_sec", tps}, {"cache_stats", cs}}}};
    std::ofstream(d + "/kvcache_results_20260101_000000.json") << j.dump();
}
}  // namespace

// A trial with no rank file (a full results disk) measured nothing: it is left out of the mean, not averaged in as
// zero (which halved a headline), and per_trial says it had no rank file.
TEST(ClosedRules, ATrialWithoutRankFilesIsNotAveragedInAsZero) {
    const std::string dir = testing::TempDir() + "/kvio-closed-empty-" + std::to_string(::getpid());
    fs::remove_all(dir);
    write_rank(dir, 1, 0, 0, 2, 0.5, 100, 2.0, 1.0, 3);
    write_rank(dir, 1, 0, 1, 3, 0.5, 200, 9.0, 1.0, 3);
    fs::create_directories(dir + "/" + rank_dir_name(1, 1, 0));  // trial 1: directories, no file
    const auto a = aggregate_option(dir, 1, 2, 2);
    EXPECT_DOUBLE_EQ(a["aggregated_read_bandwidth_gbps"].get<double>(), 5.0);
    EXPECT_EQ(a["scored_trial_count"], 1);
    EXPECT_EQ(a["per_trial"][0]["rank_files"], 2);
    EXPECT_EQ(a["per_trial"][1]["rank_files"], 0);
    EXPECT_EQ(a["partial_failure"], true);
    EXPECT_EQ(a["valid"], false);
    fs::remove_all(dir);
}

// A rank file that records storage I/O errors is a failed trial: the trial is left out of the figures, listed with why,
// and the Option is not valid; a complete Option is valid and has no invalid_reason.
TEST(ClosedRules, ATrialWithStorageIOErrorsIsNotScored) {
    const std::string dir = testing::TempDir() + "/kvio-closed-eio-" + std::to_string(::getpid());
    fs::remove_all(dir);
    for (int t = 0; t < 2; ++t)
        for (int n = 0; n < 2; ++n) write_rank(dir, 1, t, n, 1 + t, 0.5, 100, 2.0, 1.0, 3);
    const auto clean = aggregate_option(dir, 1, 2, 2);
    EXPECT_EQ(clean["valid"], true);
    EXPECT_FALSE(clean.contains("invalid_reason"));
    EXPECT_DOUBLE_EQ(clean["aggregated_read_bandwidth_gbps"].get<double>(), (2.0 + 4.0) / 2);
    const std::string f = rank_result_files(dir + "/" + rank_dir_name(1, 1, 0)).at(0);
    nlohmann::json d = nlohmann::json::parse(std::ifstream(f));
    d["kvio"]["cache"] = {{"capacity_refusals", 0}, {"write_io_errors", 3}, {"failed_reads", 1}};
    std::ofstream(f) << d.dump();
    const auto a = aggregate_option(dir, 1, 2, 2);
    EXPECT_DOUBLE_EQ(a["aggregated_read_bandwidth_gbps"].get<double>(), 2.0);
    EXPECT_EQ(a["scored_trial_count"], 1);
    EXPECT_EQ(a["partial_failure"], false);  // every rank file is there
    EXPECT_EQ(a["valid"], false);
    EXPECT_EQ(a["failed_trials_excluded"],
              nlohmann::json::array({{{"trial", 1}, {"why", "rank_0: 4 storage I/O error(s)"}}}));
    fs::remove_all(dir);
}

// A rank that completed no request measured nothing: in a trial of the rules' 300 s the trial fails (left out,
// the Option not valid); in a shortened test trial (--trial-seconds) it is scored and the Option's notes say so.
TEST(ClosedRules, ATrialWhereARankCompletedNoRequestIsNotScoredOrIsNoted) {
    const std::string dir = testing::TempDir() + "/kvio-closed-zero-" + std::to_string(::getpid());
    fs::remove_all(dir);
    for (int t = 0; t < 2; ++t)
        for (int n = 0; n < 2; ++n) write_rank(dir, 1, t, n, 1 + t, 0.5, 100, 2.0, 1.0, 3);
    const std::string f = rank_result_files(dir + "/" + rank_dir_name(1, 1, 1)).at(0);
    nlohmann::json d = nlohmann::json::parse(std::ifstream(f));
    auto with = [&](int64_t completed, int64_t duration) {
        d["requests_completed"] = completed;
        d["kvio"]["config"]["flags"]["duration"] = duration;
        std::ofstream(f) << d.dump();
        return aggregate_option(dir, 1, 2, 2);
    };
    nlohmann::ordered_json a = with(5, 300);  // requests completed: scored, no note
    EXPECT_EQ(a["valid"], true);
    EXPECT_EQ(a["scored_trial_count"], 2);
    EXPECT_EQ(a["notes"], nlohmann::json::array());
    a = with(0, 300);
    EXPECT_EQ(a["valid"], false);
    EXPECT_EQ(a["scored_trial_count"], 1);
    EXPECT_DOUBLE_EQ(a["aggregated_read_bandwidth_gbps"].get<double>(), 2.0);  // trial 0 alone: 1 + 1
    EXPECT_EQ(a["failed_trials_excluded"],
              nlohmann::json::array({{{"trial", 1}, {"why", "rank_1: 0 requests completed"}}}));
    EXPECT_NE(a["invalid_reason"].get<std::string>().find("trial_1 failed (rank_1: 0 requests completed)"),
              std::string::npos)
        << a["invalid_reason"];
    a = with(0, 1);  // a shortened test trial: scored, with a note
    EXPECT_EQ(a["valid"], true);
    EXPECT_EQ(a["scored_trial_count"], 2);
    EXPECT_DOUBLE_EQ(a["aggregated_read_bandwidth_gbps"].get<double>(), (2.0 + 4.0) / 2);
    EXPECT_EQ(a["notes"], nlohmann::json::array({"trial_1: rank_1 completed 0 requests in its 1 s trial "
                                                 "(--trial-seconds): its figures measure no request; in a trial of "
                                                 "300 s that is a failed trial"}));
    fs::remove_all(dir);
}

// --system-name: any printable name up to 128 characters (UTF-8 counted by character); empty, longer, '/' or a
// control character is refused with one line naming the flag; not given is no error.
TEST(ClosedRun, SystemNameIsCheckedNamingTheFlag) {
    EXPECT_EQ(system_name_error("", false), "");
    EXPECT_EQ(system_name_error("acme-kv 2x NVMe (gen5)", true), "");
    EXPECT_EQ(system_name_error(std::string(128, 'x'), true), "");
    EXPECT_EQ(system_name_error("..", true), "--system-name: '..' names no system: give at least one letter or digit");
    EXPECT_NE(system_name_error(" ", true), "");
    EXPECT_EQ(system_name_error("\xc3\xa9", true), "");  // one non-ASCII letter
    std::string utf8;
    for (int i = 0; i < 128; ++i) utf8 += "\u00e9";  // 128 characters, 256 bytes
    EXPECT_EQ(system_name_error(utf8, true), "");
    EXPECT_EQ(system_name_error("", true), "--system-name: must not be empty");
    EXPECT_EQ(system_name_error(std::string(129, 'x'), true), "--system-name: 129 characters, at most 128");
    EXPECT_EQ(system_name_error("a/b", true), "--system-name: must not contain '/' (it may name a file or directory)");
    EXPECT_EQ(system_name_error("a\tb", true), "--system-name: must not contain control character 0x09");
    EXPECT_EQ(system_name_error("ab\n", true), "--system-name: must not contain control character 0x0a");
    EXPECT_EQ(system_name_error("a\x7f", true), "--system-name: must not contain control character 0x7f");
}

TEST(ClosedRules, AggregateSumsRanksAveragesTrialsAndTakesTheMaxP95) {
    const std::string dir = testing::TempDir() + "/kvio-closed-agg-" + std::to_string(::getpid());
    fs::remove_all(dir);
    // trial 0: ranks (1, 2) GB/s read; trial 1: (3, 4); trial 2: rank 1 missing, rank 0 = 5: a failed trial, not
    // scored (before, its sum counted the missing rank as zero and was averaged in).
    write_rank(dir, 1, 0, 0, 1, 0.5, 100, 2.0, 1.0, 3);
    write_rank(dir, 1, 0, 1, 2, 0.5, 200, 9.0, std::nullopt, 3);
    write_rank(dir, 1, 1, 0, 3, 1.0, 300, 4.0, 7.0, 3);
    write_rank(dir, 1, 1, 1, 4, 1.0, 400, 1.0, 2.0, 0);
    write_rank(dir, 1, 2, 0, 5, 2.0, 500, 3.0, 3.0, 3);
    const auto a = aggregate_option(dir, 1, 3, 2);
    EXPECT_DOUBLE_EQ(a["aggregated_read_bandwidth_gbps"].get<double>(), (3.0 + 7.0) / 2);
    EXPECT_DOUBLE_EQ(a["aggregated_write_bandwidth_gbps"].get<double>(), (1.0 + 2.0) / 2);
    EXPECT_DOUBLE_EQ(a["aggregated_storage_throughput_tokens_per_sec"].get<double>(), (300.0 + 700.0) / 2);
    EXPECT_EQ(a["scored_trial_count"], 2);
    EXPECT_EQ(a["valid"], false);
    EXPECT_EQ(a["failed_trials_excluded"], nlohmann::json::array({{{"trial", 2}, {"why", "rank_1: no rank file"}}}));
    EXPECT_EQ(a["invalid_reason"],
              "trial_2 failed (rank_1: no rank file): the figures cover only the 2 complete "
              "trial(s); not a valid submission");
    EXPECT_DOUBLE_EQ(a["aggregated_device_read_p95_ms"].get<double>(), 9.0);
    EXPECT_DOUBLE_EQ(a["aggregated_device_write_p95_ms"].get<double>(), 7.0);
    EXPECT_EQ(a["partial_failure"], true);
    ASSERT_EQ(a["missing_files"].size(), 1u);
    EXPECT_NE(a["missing_files"][0].get<std::string>().find("option_1/trial_2/rank_1"), std::string::npos);
    EXPECT_EQ(a["cpu_tier_ranks"].size(), 1u);
    EXPECT_EQ(a["storage_unread_ranks"].size(), 0u);
    EXPECT_EQ(a["rank_count"], 2);
    // entries on storage, none read back: listed apart from the CPU-tier rank (which read none either)
    write_rank(dir, 1, 2, 1, 0, 2.0, 50, 0, 3.0, 4);
    write_rank(dir, 1, 1, 1, 0, 1.0, 400, 1.0, 2.0, 0);
    const auto b = aggregate_option(dir, 1, 3, 2);
    ASSERT_EQ(b["storage_unread_ranks"].size(), 1u) << b.dump();
    EXPECT_NE(b["storage_unread_ranks"][0].get<std::string>().find("option_1/trial_2/rank_1"), std::string::npos);
    ASSERT_EQ(b["cpu_tier_ranks"].size(), 1u);
    EXPECT_NE(b["cpu_tier_ranks"][0].get<std::string>().find("option_1/trial_1/rank_1"), std::string::npos);
    fs::remove_all(dir);
}

namespace {

/// The message check_closed_run throws ("" when it accepts).
std::string closed_refusal(const std::string& cache_dir, const std::string& results_dir,
                           bool test_memory_cache = false) {
    SimConfig c;
    c.cache_dir = cache_dir;
    c.num_clients = 1;
    ClosedRunOptions o;
    o.results_dir = results_dir;
    o.test_memory_cache = test_memory_cache;
    try {
        check_closed_run(c, o);
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}

struct ScratchDir {
    std::string path;
    explicit ScratchDir(const std::string& parent) : path(parent + "/kvio-closed-unit-" + std::to_string(::getpid())) {
        fs::create_directories(path);
    }
    ~ScratchDir() { fs::remove_all(path); }
};

}  // namespace

// A cache directory with no parent is named as missing, not created on the root filesystem; a refused run creates
// neither directory.
TEST(ClosedRun, MissingDirectoriesAreRefusedAndNothingIsCreated) {
    ScratchDir r("/var/tmp");
    const std::string e = closed_refusal("/nonexistent-kvio-unit/kv", r.path + "/run");
    EXPECT_NE(e.find("--cache-dir /nonexistent-kvio-unit/kv: No such file or directory"), std::string::npos) << e;
    EXPECT_EQ(e.find("one filesystem"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists("/nonexistent-kvio-unit"));
    EXPECT_FALSE(fs::exists(r.path + "/run"));
    const std::string same = closed_refusal(r.path + "/kv", r.path + "/run");
    EXPECT_NE(same.find("are on one filesystem"), std::string::npos) << same;
    EXPECT_FALSE(fs::exists(r.path + "/kv"));
    EXPECT_FALSE(fs::exists(r.path + "/run"));
    std::ofstream(r.path + "/file") << "x\n";
    const std::string file = closed_refusal("/dev/shm", r.path + "/file");
    EXPECT_NE(file.find("--results-dir " + r.path + "/file: Not a directory"), std::string::npos) << file;
}

// A cache backed by memory measures memory, not storage: refused at the start naming the rule, the directory and what
// backs it (nothing created), unless the test flag allows it, which the results then record as no submission.
TEST(ClosedRun, AMemoryBackedCacheIsRefusedNamingWhatBacksIt) {
    ScratchDir cache("/dev/shm"), results("/var/tmp");
    const std::string e = closed_refusal(cache.path + "/kv", results.path + "/run");
    EXPECT_NE(e.find("--cache-dir " + cache.path +
                     "/kv is backed by memory (tmpfs): a CLOSED run measures storage "
                     "(rule kvioCacheOnMemory)"),
              std::string::npos)
        << e;
    EXPECT_FALSE(fs::exists(cache.path + "/kv"));
    EXPECT_FALSE(fs::exists(results.path + "/run"));
    EXPECT_EQ(closed_refusal(cache.path + "/kv", results.path + "/run", true), "");
    ClosedRunOptions o;
    o.test_memory_cache = true;
    EXPECT_NE(not_a_submission_reason(o).find("a cache backed by memory allowed (--test-memory-cache)"),
              std::string::npos)
        << not_a_submission_reason(o);
    EXPECT_EQ(memory_backing(filesystem_provenance(cache.path)), "tmpfs");
    EXPECT_EQ(memory_backing(filesystem_provenance(results.path)), "") << filesystem_provenance(results.path).dump();
}

// What memory_backing reads from a recorded provenance: the filesystem's type, a RAM disk under it, a loop device's
// backing file followed down (two loops deep here), and nothing for a disk or a loop over a file on one.
TEST(ClosedRun, MemoryBackingFollowsLoopDevicesToTheirBackingFile) {
    using J = nlohmann::ordered_json;
    EXPECT_EQ(memory_backing(J{{"fstype", "ramfs"}}), "ramfs");
    EXPECT_EQ(memory_backing(J{{"fstype", "xfs"}, {"device", {{"name", "zram0"}, {"whole_disk", "zram0"}}}}),
              "xfs on zram0 (a compressed RAM disk)");
    EXPECT_EQ(memory_backing(J{{"fstype", "ext4"}, {"device", {{"name", "ram1"}, {"whole_disk", "ram1"}}}}),
              "ext4 on ram1 (a brd RAM disk)");
    EXPECT_EQ(memory_backing(J{{"fstype", "ext4"}, {"device", {{"name", "vda1"}, {"whole_disk", "vda"}}}}), "");
    EXPECT_EQ(memory_backing(J{{"fstype", "ext4"}, {"device", {{"name", "ramdisk"}, {"whole_disk", "ramdisk"}}}}), "");
    const J on_shm = {{"fstype", "tmpfs"}};
    const J inner = {{"fstype", "xfs"},
                     {"device",
                      {{"name", "loop4"},
                       {"whole_disk", "loop4"},
                       {"backing_file", "/dev/shm/a.img"},
                       {"backing_filesystem", on_shm}}}};
    EXPECT_EQ(memory_backing(inner), "xfs on loop4 over /dev/shm/a.img, on tmpfs");
    const J outer = {{"fstype", "ext4"},
                     {"device",
                      {{"name", "loop5p1"},
                       {"whole_disk", "loop5"},
                       {"backing_file", "/mnt/x/b.img"},
                       {"backing_filesystem", inner}}}};
    EXPECT_EQ(memory_backing(outer),
              "ext4 on loop5p1 over /mnt/x/b.img, on xfs on loop4 over /dev/shm/a.img, on tmpfs");
    J on_disk = outer;
    on_disk["device"]["backing_filesystem"] = {{"fstype", "ext4"},
                                               {"device", {{"name", "vda"}, {"whole_disk", "vda"}}}};
    EXPECT_EQ(memory_backing(on_disk), "");
}

// /var/tmp (the root disk: storage) and /dev/shm (tmpfs) are two filesystems: accepted, and both created; a results
// directory that already holds a run (a summary, or option_<O>/) is refused.
TEST(ClosedRun, AResultsDirectoryHoldsOneRun) {
    ScratchDir cache("/var/tmp"), results("/dev/shm");
    EXPECT_EQ(closed_refusal(cache.path + "/kv", results.path + "/run"), "");
    EXPECT_TRUE(fs::is_directory(cache.path + "/kv"));
    EXPECT_TRUE(fs::is_directory(results.path + "/run"));
    EXPECT_EQ(closed_refusal(cache.path + "/kv", results.path + "/run"), "");  // empty: accepted again
    std::ofstream(results.path + "/run/kvcache_run_summary_20261204_120000.json") << "{}\n";
    std::string e = closed_refusal(cache.path + "/kv", results.path + "/run");
    EXPECT_NE(e.find("already holds a CLOSED run (kvcache_run_summary_20261204_120000.json)"), std::string::npos) << e;
    fs::remove(results.path + "/run/kvcache_run_summary_20261204_120000.json");
    fs::create_directories(results.path + "/run/option_1");
    e = closed_refusal(cache.path + "/kv", results.path + "/run");
    EXPECT_NE(e.find("already holds a CLOSED run (option_1)"), std::string::npos) << e;
    // Like every refusal of the protocol, it names the rule it applies.
    EXPECT_NE(e.find("(rule kvcachePerClientIsolation: one output per client, trial and Option)"), std::string::npos)
        << e;
}

TEST(MlperfCheckDir, MissingAndEmptyDirectories) {
    try {
        check_results_dir("/nonexistent-kvio-unit", {});
        ADD_FAILURE() << "no error";
    } catch (const kvio::UsageError& e) {
        EXPECT_STREQ(e.what(), "/nonexistent-kvio-unit: No such file or directory");
    }
    ScratchDir d("/var/tmp");
    const CheckReport r = check_results_dir(d.path, {});
    EXPECT_TRUE(r.no_run);
    ASSERT_EQ(r.problems.size(), 1u);
    EXPECT_EQ(r.problems[0], d.path +
                                 ": no CLOSED run in it (no kvcache_run_summary_*.json, no option_<O>/) (rule "
                                 "kvcacheHeadlineResult)");
    fs::create_directories(d.path + "/option_1");
    EXPECT_FALSE(check_results_dir(d.path, {}).no_run);
}

namespace {

/// A shortened one-Option run of 3 trials x 2 ranks written here, with a summary whose aggregates are
/// aggregate_option's over `trials` trials: what `kvio simulate --mlperf-closed --mlperf-option 1` leaves.
std::string write_synthetic_run(const std::string& dir, int trials) {
    fs::remove_all(dir);
    for (int t = 0; t < trials; ++t)
        for (int n = 0; n < 2; ++n) write_rank(dir, 1, t, n, 1.0 + t + n, 0.5, 100.0 * (n + 1), 2.0 + n, 1.0, 3);
    nlohmann::ordered_json s = {{"total_ranks", 2},
                                {"trials_per_option", 3},
                                {"closed_submission", false},
                                {"not_a_closed_submission", "shortened"},
                                {"kvio", {{"metadata", {{"options_run", {1}}, {"trial_seconds", 2}}}}}};
    s["options"]["1"] = aggregate_option(dir, 1, trials, 2);
    const std::string path = dir + "/kvcache_run_summary_20261204_120000.json";
    std::ofstream(path) << s.dump(2);
    return path;
}

nlohmann::ordered_json load_json(const std::string& path) {
    std::ifstream f(path);
    return nlohmann::ordered_json::parse(f);
}

void save_json(const std::string& path, const nlohmann::ordered_json& j) { std::ofstream(path) << j.dump(); }

std::string rank_file(const std::string& dir, int trial, int rank) {
    return dir + "/" + rank_dir_name(1, trial, rank) + "/kvcache_results_20260101_000000.json";
}

/// The report's problems on one line each, for failure messages and searches.
std::string joined(const CheckReport& r) {
    std::string s;
    for (const auto& p : r.problems) s += p + "\n";
    return s;
}

const CheckOptions kShortened{.allow_shortened = true};

/// Rank file (trial `t`, rank `n`) of the synthetic run as kvio's CLOSED run places it: its parameters
/// (kvio.config.flags, trial length `seconds`, its own path as `output`) and its kvio.mlperf_closed marks.
void mark_as_kvio(const std::string& dir, int t, int n, int seconds) {
    const std::string f = rank_file(dir, t, n);
    auto rk = load_json(f);
    rk["kvio"]["config"]["flags"] = closed_option_parameters(closed_option(1), seconds);
    rk["kvio"]["config"]["flags"]["output"] = f;
    rk["kvio"]["mlperf_closed"] = {{"option", 1},
                                   {"trial", t},
                                   {"rank", n},
                                   {"closed_submission", false},
                                   {"not_a_closed_submission", "shortened"}};
    save_json(f, rk);
}

}  // namespace

// The synthetic run is clean; a run stopped after two trials (its summary aggregates trial_count 2) is checked over
// the trials it ran: the missing trial is the one problem, not its aggregates.
TEST(MlperfCheckDir, AStoppedRunIsCheckedOverTheTrialsItRan) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    CheckReport r = check_results_dir(d.path, kShortened);
    EXPECT_TRUE(r.problems.empty()) << joined(r);
    EXPECT_EQ(r.rank_files, 6);
    write_synthetic_run(d.path, 2);
    r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_NE(r.problems[0].find("option_1/trial_2: missing trial"), std::string::npos) << joined(r);
    // The summary's figures still have to be the rank files': one changed is found.
    const std::string sp = d.path + "/kvcache_run_summary_20261204_120000.json";
    auto s = load_json(sp);
    s["options"]["1"]["aggregated_storage_throughput_tokens_per_sec"] = 1.0;
    save_json(sp, s);
    r = check_results_dir(d.path, kShortened);
    EXPECT_NE(joined(r).find("aggregated_storage_throughput_tokens_per_sec 1, the rank files give 300 (rule "
                             "kvcacheAggregateThroughput)"),
              std::string::npos)
        << joined(r);
}

// Valid JSON of the wrong shape is a problem naming the file and field, and the check goes on to the rest.
TEST(MlperfCheckDir, WrongShapesNameTheFileAndFieldAndTheCheckGoesOn) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    auto s = load_json(sp);
    s["trials_per_option"] = nullptr;
    save_json(sp, s);
    save_json(rank_file(d.path, 0, 0), nlohmann::ordered_json::array({1, 2}));
    auto rk = load_json(rank_file(d.path, 1, 0));
    rk["summary"] = nullptr;
    save_json(rank_file(d.path, 1, 0), rk);
    rk = load_json(rank_file(d.path, 2, 1));
    rk["summary"]["cache_stats"]["tier_storage_read_bandwidth_gbps"] = "x";
    rk["seed"] = 7;
    save_json(rank_file(d.path, 2, 1), rk);
    CheckReport r;
    ASSERT_NO_THROW(r = check_results_dir(d.path, kShortened));
    const std::string all = joined(r);
    EXPECT_NE(all.find(sp + ": trials_per_option null: not an integer"), std::string::npos) << all;
    EXPECT_NE(all.find(rank_file(d.path, 0, 0) + ": not a JSON object (array)"), std::string::npos) << all;
    EXPECT_EQ(r.rank_files, 5) << "the array is found but not read";
    EXPECT_NE(all.find(rank_file(d.path, 1, 0) + ": summary null: not an object"), std::string::npos) << all;
    EXPECT_NE(all.find(rank_file(d.path, 2, 1) +
                       ": summary.cache_stats.tier_storage_read_bandwidth_gbps \"x\": not a number"),
              std::string::npos)
        << all;
    // The check went on past the broken files: the seed in the same file is still judged.
    EXPECT_NE(all.find(rank_file(d.path, 2, 1) + ": seed 7, expected 42 + rank 1 = 43"), std::string::npos) << all;
    // A summary that is an array, and options[1] of the wrong type.
    save_json(sp, nlohmann::ordered_json::array({1}));
    ASSERT_NO_THROW(r = check_results_dir(d.path, kShortened));
    EXPECT_NE(joined(r).find(sp + ": not a JSON object (array)"), std::string::npos) << joined(r);
}

// A rank directory beyond the run's clients (total_ranks) is not one of its ranks.
TEST(MlperfCheckDir, RankDirectoriesBeyondTheClientsAreFound) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    fs::create_directories(d.path + "/" + rank_dir_name(1, 0, 2));
    fs::copy_file(rank_file(d.path, 0, 1), rank_file(d.path, 0, 2));
    const CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], d.path +
                                 "/option_1/trial_0/rank_2: unexpected rank directory: the run had 2 clients "
                                 "(total_ranks) (rule kvcacheClientDefinition)");
}

// Option and trial directories a CLOSED run never writes are named, not read; a summary that claims fewer trials
// does not hide the third trial's files from the checks.
TEST(MlperfCheckDir, UnexpectedOptionAndTrialDirectoriesAreFound) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    fs::create_directories(d.path + "/option_1/trial_3/rank_0");
    fs::copy_file(rank_file(d.path, 2, 0), d.path + "/option_1/trial_3/rank_0/kvcache_results_20260101_000000.json");
    fs::create_directories(d.path + "/option_1/trial_x");
    fs::create_directories(d.path + "/option_4/trial_0");
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 3u) << joined(r);
    EXPECT_EQ(r.problems[0], d.path +
                                 "/option_4: unexpected Option directory: CLOSED runs Options 1, 2 and 3 (rule "
                                 "kvcacheFixedWorkloadPerOption)");
    EXPECT_EQ(r.problems[1], d.path +
                                 "/option_1/trial_3: unexpected trial directory: CLOSED runs trials 0, 1 and 2 (rule "
                                 "kvcacheClosedSequenceLocks)");
    EXPECT_EQ(r.problems[2], d.path +
                                 "/option_1/trial_x: unexpected trial directory: CLOSED runs trials 0, 1 and 2 (rule "
                                 "kvcacheClosedSequenceLocks)");
    EXPECT_EQ(r.rank_files, 6);
    fs::remove_all(d.path + "/option_1/trial_3");
    fs::remove_all(d.path + "/option_1/trial_x");
    fs::remove_all(d.path + "/option_4");
    auto sj = load_json(sp);
    sj["trials_per_option"] = 2;
    save_json(sp, sj);
    auto rk = load_json(rank_file(d.path, 2, 0));
    rk["seed"] = 99;
    save_json(rank_file(d.path, 2, 0), rk);
    r = check_results_dir(d.path, kShortened);
    const std::string all = joined(r);
    EXPECT_NE(all.find(sp + ": trials_per_option 2, CLOSED runs 3"), std::string::npos) << all;
    EXPECT_NE(all.find(rank_file(d.path, 2, 0) + ": seed 99"), std::string::npos) << all;
}

// A trial a signal stopped is not a scored trial, and a stopped run is not what --allow-shortened accepts: each is a
// problem naming its file and field, even in a shortened run, where every other figure here is clean.
TEST(MlperfCheckDir, AStoppedTrialAndAStoppedRunAreProblemsEvenWhenShortened) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    auto rk = load_json(rank_file(d.path, 2, 1));
    rk["kvio"]["stop"] = {{"reason", "signal Terminated"}, {"signal", 15}, {"stop_requested_at_s", 2.25}};
    save_json(rank_file(d.path, 2, 1), rk);
    auto s = load_json(sp);
    s["kvio"]["metadata"]["stopped_by_signal"] = 15;
    // As the run writes it: the stopped trial_2 left out of the headline.
    s["options"]["1"] = aggregate_option(d.path, 1, 3, 2);
    EXPECT_EQ(s["options"]["1"]["stopped_trials_excluded"], nlohmann::json::array({2}));
    EXPECT_EQ(s["options"]["1"]["scored_trial_count"], 2);
    save_json(sp, s);
    const CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 2u) << joined(r);
    EXPECT_EQ(r.problems[0], sp + ": kvio.metadata.stopped_by_signal 15: the run was stopped before its end (rule "
                                  "kvcacheClosedSequenceLocks)");
    EXPECT_EQ(r.problems[1], rank_file(d.path, 2, 1) +
                                 ": kvio.stop.signal 15 (signal Terminated) 2.2 s into the trial: a stopped trial is "
                                 "not a scored trial (rule kvcacheClosedSequenceLocks)");
    // Without --allow-shortened the stop is the same line under the same rule, beside the marks' own line.
    const std::string full = joined(check_results_dir(d.path, CheckOptions{}));
    EXPECT_NE(full.find(sp + ": kvio.metadata.stopped_by_signal 15: the run was stopped before its end (rule "
                             "kvcacheClosedSequenceLocks)"),
              std::string::npos)
        << full;
    // A rank another rank's signal stopped records signal 0 and says so in its reason: a stop as well.
    rk["kvio"]["stop"] = {
        {"reason", "signal Interrupt to another client"}, {"signal", 0}, {"stop_requested_at_s", 3.6}};
    save_json(rank_file(d.path, 2, 1), rk);
    const CheckReport other = check_results_dir(d.path, kShortened);
    ASSERT_EQ(other.problems.size(), 2u) << joined(other);
    EXPECT_EQ(other.problems[1],
              rank_file(d.path, 2, 1) +
                  ": kvio.stop.reason \"signal Interrupt to another client\" 3.6 s into the trial: a "
                  "stopped trial is not a scored trial (rule kvcacheClosedSequenceLocks)");
    // A client that ran to its end records signal 0: not a stop.
    rk["kvio"]["stop"] = {{"reason", "duration"}, {"signal", 0}};
    save_json(rank_file(d.path, 2, 1), rk);
    s["options"]["1"] = aggregate_option(d.path, 1, 3, 2);
    EXPECT_EQ(s["options"]["1"]["stopped_trials_excluded"], nlohmann::json::array());
    save_json(sp, s);
    EXPECT_EQ(check_results_dir(d.path, kShortened).problems.size(), 1u);
}

// A summary that is not JSON is one problem: not one more per Option ("options[1] missing") on top of it.
TEST(MlperfCheckDir, AnUnreadableSummaryIsOneProblem) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    std::ofstream(sp, std::ios::trunc) << "{\"total_ranks\": 2, \"opti";
    const CheckReport r = check_results_dir(d.path, {});
    // Options 2 and 3 are missing from this one-Option run: two problems of their own, and nothing more.
    ASSERT_EQ(r.problems.size(), 3u) << joined(r);
    // FILE:LINE:COLUMN of where the parser stopped: the end of the cut-off text (24 bytes).
    EXPECT_EQ(r.problems[0].rfind(sp + ":1:25: not valid JSON (", 0), 0u) << joined(r);
    EXPECT_EQ(joined(r).find("options["), std::string::npos) << joined(r);
    EXPECT_EQ(r.rank_files, 6);
}

// A broken summary with a newer name beside the run's own: it is a problem of its own, and the readable one is the
// one checked (said in the notes), so the run's aggregates are still compared.
TEST(MlperfCheckDir, ABrokenNewerSummaryDoesNotHideTheReadableOne) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    const CheckReport clean = check_results_dir(d.path, {});
    const std::string broken = d.path + "/kvcache_run_summary_zzzz.json";
    std::ofstream(broken) << "{\"total_ranks\": 2, \"opti";
    const CheckReport r = check_results_dir(d.path, {});
    ASSERT_EQ(r.problems.size(), clean.problems.size() + 1) << joined(r);
    EXPECT_EQ(r.problems[0].rfind(broken + ":1:25: not valid JSON (", 0), 0u) << joined(r);
    bool said = false;
    for (const auto& n : r.notes)
        said = said || n.find("checked " + sp + ", the newest readable one") != std::string::npos;
    EXPECT_TRUE(said) << joined(r);
    // its aggregates are still compared: an edited one is found
    auto sum = load_json(sp);
    sum["options"]["1"]["aggregated_read_bandwidth_gbps"] = 123.0;
    save_json(sp, sum);
    EXPECT_NE(joined(check_results_dir(d.path, {})).find("aggregated_read_bandwidth_gbps"), std::string::npos);
}

// The summary's per_trial sums and its lists of rank files are recomputed from the rank files: a forged one is a
// problem naming the field, the summary's value and the rank files'; a moved results directory still compares.
TEST(MlperfCheckDir, ForgedPerTrialAndRankListsAreFound) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    const CheckReport clean = check_results_dir(d.path, {});
    auto sum = load_json(sp);
    ASSERT_TRUE(sum["options"]["1"]["per_trial"].is_array());
    for (auto& f : sum["options"]["1"]["missing_files"])
        f = "/elsewhere/" + f.get<std::string>().substr(d.path.size() + 1);
    save_json(sp, sum);
    EXPECT_EQ(check_results_dir(d.path, {}).problems.size(), clean.problems.size())
        << joined(check_results_dir(d.path, {}));
    sum["options"]["1"]["per_trial"][1]["read_bandwidth_gbps_sum"] = 99.0;
    sum["options"]["1"]["cpu_tier_ranks"] = nlohmann::json::array({d.path + "/option_1/trial_0/rank_0/x.json"});
    save_json(sp, sum);
    const CheckReport r = check_results_dir(d.path, {});
    ASSERT_EQ(r.problems.size(), clean.problems.size() + 2) << joined(r);
    const std::string all = joined(r);
    EXPECT_NE(all.find("options[1].per_trial[1].read_bandwidth_gbps_sum 99, the rank files give"), std::string::npos)
        << all;
    EXPECT_NE(all.find("options[1].cpu_tier_ranks [\""), std::string::npos) << all;
    EXPECT_NE(all.find("(rule kvcacheLatencyValidity)"), std::string::npos) << all;
}

// A shortened run whose summary was cut off: the recorded trial length is lost, so every rank file's duration
// differs from the Option's 300 s. That is one problem with its count and rank files, not one line per file.
TEST(MlperfCheckDir, OneParameterProblemOfManyRankFilesIsOneLine) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) mark_as_kvio(d.path, t, n, 2);
    EXPECT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) {
            auto rk = load_json(rank_file(d.path, t, n));
            rk["kvio"]["config"]["flags"]["max_concurrent_allocs"] = 4;
            save_json(rank_file(d.path, t, n), rk);
        }
    const CheckReport r = check_results_dir(d.path, kShortened);
    std::vector<std::string> allocs;
    for (const auto& p : r.problems)
        if (p.find("max_concurrent_allocs") != std::string::npos) allocs.push_back(p);
    ASSERT_EQ(allocs.size(), 1u) << joined(r);
    EXPECT_EQ(allocs[0],
              d.path +
                  "/option_1: max_concurrent_allocs 4 in 6 rank files (trial_0/rank_0, trial_0/rank_1, trial_1/rank_0, "
                  "trial_1/rank_1, trial_2/rank_0, trial_2/rank_1), Option 1 requires 16 (rule "
                  "kvcacheFixedWorkloadPerOption)");
    // One rank file alone keeps its own line, naming the file.
    auto rk = load_json(rank_file(d.path, 1, 1));
    rk["kvio"]["config"]["flags"]["num_users"] = 7;
    save_json(rank_file(d.path, 1, 1), rk);
    const std::string all = joined(check_results_dir(d.path, kShortened));
    EXPECT_NE(all.find(rank_file(d.path, 1, 1) + ": num_users 7, Option 1 requires 200 (rule "), std::string::npos)
        << all;
}

// --allow-shortened still applies when no summary is readable: the rank files' own marks (kvio.mlperf_closed
// closed_submission false) and parameters say the run was shortened and what its trial length was, so the 2 s trials
// are not reported against 300 s; a rank file whose duration differs from the others' still is. Without
// --allow-shortened the same files are checked against the Option's 300 s.
TEST(MlperfCheckDir, AllowShortenedAppliesWithoutAReadableSummary) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) mark_as_kvio(d.path, t, n, 2);
    for (const bool remove : {false, true}) {
        SCOPED_TRACE(remove ? "no summary" : "unreadable summary");
        if (remove)
            fs::remove(sp);
        else
            std::ofstream(sp, std::ios::trunc) << "{\"total_ranks\": 2, \"opti";
        const CheckReport r = check_results_dir(d.path, kShortened);
        EXPECT_EQ(joined(r).find("duration"), std::string::npos) << joined(r);
        ASSERT_EQ(r.problems.size(), 1u) << joined(r);  // the summary's own problem, no more
        EXPECT_EQ(r.problems[0].rfind(remove ? d.path + ": no kvcache_run_summary" : sp + ":1:25: not valid JSON", 0),
                  0u)
            << joined(r);
        EXPECT_EQ(r.rank_files, 6);
        EXPECT_NE(joined(check_results_dir(d.path, {})).find("duration 2 in 6 rank files"), std::string::npos);
    }
    auto rk = load_json(rank_file(d.path, 2, 0));
    rk["kvio"]["config"]["flags"]["duration"] = 3;
    save_json(rank_file(d.path, 2, 0), rk);
    EXPECT_NE(
        joined(check_results_dir(d.path, kShortened))
            .find(rank_file(d.path, 2, 0) + ": duration 3, Option 1 requires 2 (rule kvcacheFixedWorkloadPerOption)"),
        std::string::npos)
        << joined(check_results_dir(d.path, kShortened));
}

// What a full results disk left before the run refused to place an unmarked file: a rank file moved into place as
// its client wrote it (no kvio.mlperf_closed, kvio.config.flags.output naming the client's temporary name). Each is
// named, as is a mark for another trial or rank.
TEST(MlperfCheckDir, ARankFileWithoutItsRunsMarksIsAProblem) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) mark_as_kvio(d.path, t, n, 2);
    ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    auto rk = load_json(rank_file(d.path, 0, 1));
    rk["kvio"].erase("mlperf_closed");
    rk["kvio"]["config"]["flags"]["output"] = d.path + "/option_1/trial_0/kvio_merged_results.json.rank1.json";
    save_json(rank_file(d.path, 0, 1), rk);
    rk = load_json(rank_file(d.path, 2, 0));
    rk["kvio"]["mlperf_closed"]["trial"] = 1;
    save_json(rank_file(d.path, 2, 0), rk);
    const CheckReport r = check_results_dir(d.path, kShortened);
    const std::string all = joined(r);
    EXPECT_EQ(r.problems.size(), 3u) << all;
    EXPECT_NE(all.find(rank_file(d.path, 0, 1) + ": no kvio.mlperf_closed: the CLOSED run did not mark this rank file"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(rank_file(d.path, 0, 1) + ": kvio.config.flags.output \"" + d.path +
                       "/option_1/trial_0/kvio_merged_results.json.rank1.json\" is not this file"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(rank_file(d.path, 2, 0) + ": kvio.mlperf_closed.trial 1, the file is trial 2's"),
              std::string::npos)
        << all;
    // A results directory moved after the run (its recorded output under another root) is still its own file.
    ScratchDir moved("/var/tmp");
    write_synthetic_run(moved.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) {
            mark_as_kvio(moved.path, t, n, 2);
            auto m = load_json(rank_file(moved.path, t, n));
            m["kvio"]["config"]["flags"]["output"] =
                "/elsewhere/run/" + rank_dir_name(1, t, n) + "/kvcache_results_20260101_000000.json";
            save_json(rank_file(moved.path, t, n), m);
        }
    EXPECT_TRUE(check_results_dir(moved.path, kShortened).problems.empty())
        << joined(check_results_dir(moved.path, kShortened));
}

// A JSON file the checker cannot parse is named with the line and column where the parser stopped: a rank file, a
// summary (above) and an mlpstorage metadata file.
TEST(MlperfCheckDir, ParseErrorsNameFileLineAndColumn) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    std::ofstream(rank_file(d.path, 1, 0), std::ios::trunc) << "{\n  \"seed\": 42,\n  \"summary\": ]\n}\n";
    std::ofstream(d.path + "/kv_cache_20261204_120000_metadata.json") << "{\"parameters\": {\n\n\"model\" 1}}";
    const std::string all = joined(check_results_dir(d.path, kShortened));
    EXPECT_NE(all.find(rank_file(d.path, 1, 0) + ":3:14: not valid JSON (syntax error"), std::string::npos) << all;
    EXPECT_NE(all.find(d.path + "/kv_cache_20261204_120000_metadata.json:3:9: not valid JSON ("), std::string::npos)
        << all;
}

// Failed storage operations of a kvio rank file: an I/O error on a tier that had room is always a problem naming the
// rank file and counts; capacity refusals only past 1 % of the trial's write bytes.
TEST(MlperfCheckDir, StorageIoErrorsAndMaterialCapacityRefusalsAreProblems) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    const std::string f = rank_file(d.path, 2, 1);
    auto rk = load_json(f);
    rk["summary"]["cache_stats"]["total_write_bytes"] = 1000000;
    rk["kvio"]["cache"] = {{"failed_writes", 1},
                           {"failed_reads", 0},
                           {"capacity_refusals", 1},
                           {"capacity_refused_bytes", 10000},
                           {"write_io_errors", 0}};
    save_json(f, rk);
    EXPECT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << "a refusal of 1.0 % of the bytes is under the threshold: " << joined(check_results_dir(d.path, kShortened));
    rk["kvio"]["cache"]["capacity_refused_bytes"] = 20000;
    save_json(f, rk);
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], f + ": 1 entry (20000 bytes) larger than any tier could hold, refused unwritten "
                                 "(kvio.cache.capacity_refusals, capacity_refused_bytes): 2.0 % of the trial's write "
                                 "bytes, more than 1 %: the cache filesystem is too small for the Option (rule "
                                 "kvioCapacityRefusals)");
    // Several entries: capacity_refused_bytes is their sum, said as such (not "3 entries of B bytes" each).
    rk["kvio"]["cache"]["capacity_refusals"] = 3;
    rk["kvio"]["cache"]["failed_writes"] = 3;
    save_json(f, rk);
    r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0].rfind(f + ": 3 entries (20000 bytes in all) larger than any tier could hold", 0), 0u)
        << joined(r);
    rk["kvio"]["cache"] = {{"failed_writes", 3},
                           {"failed_reads", 2},
                           {"capacity_refusals", 0},
                           {"write_io_errors", 3},
                           {"first_write_error", "storage write of entry 'k': No space left on device"}};
    save_json(f, rk);
    {  // as the run writes it: the trial with I/O errors left out of the figures (aggregate_option)
        const std::string sp = d.path + "/kvcache_run_summary_20261204_120000.json";
        auto s = load_json(sp);
        s["options"]["1"] = aggregate_option(d.path, 1, 3, 2);
        save_json(sp, s);
    }
    r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], f + ": 3 storage write(s) and 2 read(s) failed on a tier that had room "
                                 "(kvio.cache.write_io_errors, failed_reads); first_write_error: storage write of "
                                 "entry 'k': No space left on device (rule kvioStorageIoErrors)");
}

// A cache the summary records on tmpfs measured memory: a problem even in a shortened run (it was called clean).
TEST(MlperfCheckDir, ACacheInMemoryIsAProblem) {
    ScratchDir d("/var/tmp");
    const std::string path = write_synthetic_run(d.path, 3);
    auto sj = load_json(path);
    sj["kvio"]["provenance"]["cache_dir"] = {{"fstype", "ext4"}, {"st_dev", "7:0"}};
    save_json(path, sj);
    EXPECT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    sj["kvio"]["provenance"]["cache_dir"]["fstype"] = "tmpfs";
    save_json(path, sj);
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], path +
                                 ": kvio.provenance.cache_dir: the cache was backed by memory (tmpfs), no storage was "
                                 "measured (rule kvioCacheOnMemory)");
}

// The cache's backing as provenance recorded it, followed as memory_backing follows it: an ext4 on a loop device over
// a file on tmpfs (which the filesystem type alone called storage), or on a zram disk, is a problem; a run that
// recorded the test-only --test-memory-cache gets a note instead; a record of the wrong shape is a problem, not a
// crash.
TEST(MlperfCheckDir, ACacheOnALoopDeviceOverMemoryIsAProblem) {
    ScratchDir d("/var/tmp");
    const std::string path = write_synthetic_run(d.path, 3);
    auto sj = load_json(path);
    sj["kvio"]["provenance"]["cache_dir"] = {{"fstype", "ext4"},
                                             {"st_dev", "7:3"},
                                             {"device",
                                              {{"name", "loop3"},
                                               {"whole_disk", "loop3"},
                                               {"backing_file", "/dev/shm/kv.img"},
                                               {"backing_filesystem", {{"fstype", "tmpfs"}, {"st_dev", "0:26"}}}}}};
    save_json(path, sj);
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], path +
                                 ": kvio.provenance.cache_dir: the cache was backed by memory (ext4 on loop3 over "
                                 "/dev/shm/kv.img, on tmpfs), no storage was measured (rule kvioCacheOnMemory)");
    sj["not_a_closed_submission"] = "not a CLOSED submission: a cache backed by memory allowed (--test-memory-cache)";
    save_json(path, sj);
    r = check_results_dir(d.path, kShortened);
    EXPECT_TRUE(r.problems.empty()) << joined(r);
    bool noted = false;
    for (const auto& n : r.notes)
        noted = noted || n == path +
                                  ": kvio.provenance.cache_dir: the cache was backed by memory (ext4 on loop3 over "
                                  "/dev/shm/kv.img, on tmpfs), no storage was measured; allowed by the test-only "
                                  "--test-memory-cache the run recorded";
    EXPECT_TRUE(noted);
    sj["not_a_closed_submission"] = "shortened";
    sj["kvio"]["provenance"]["cache_dir"] = {{"fstype", "ext4"}, {"device", {{"name", "zram0"}}}};
    save_json(path, sj);
    r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_NE(r.problems[0].find("(ext4 on zram0 (a compressed RAM disk))"), std::string::npos) << r.problems[0];
    sj["kvio"]["provenance"]["cache_dir"] = {{"fstype", 5}};
    save_json(path, sj);
    ASSERT_NO_THROW(r = check_results_dir(d.path, kShortened));
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_NE(r.problems[0].find(": kvio.provenance.cache_dir: not a filesystem record ("), std::string::npos)
        << r.problems[0];
}

// A rank file whose run was shorter than the trial is a problem, whatever its flags say: the measured
// summary.elapsed_time against the trial length (an mlpstorage result of a --duration 2 run, without kvio's marks or
// with its flags edited, was called clean). A run that ran its trial (drain included) passes; a stopped one is
// said once, as stopped.
TEST(MlperfCheckDir, ARunShorterThanItsTrialIsAProblem) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);  // shortened: 2 s trials
    const std::string f = rank_file(d.path, 1, 0);
    auto rk = load_json(f);
    rk["summary"]["elapsed_time"] = 2.4;  // the 2 s trial and its drain
    save_json(f, rk);
    EXPECT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    rk["summary"]["elapsed_time"] = 1.99;  // inside the 0.1 s slack
    save_json(f, rk);
    EXPECT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    rk["summary"]["elapsed_time"] = 1.2;
    save_json(f, rk);
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], f + ": summary.elapsed_time 1.2 s: the run was shorter than the trial's 2 s (rule "
                                 "kvcacheFixedWorkloadPerOption)");
    // stopped by a signal: said as stopped (and the summary, which says otherwise, disagrees), not as short
    rk["kvio"]["stop"] = {{"signal", 15}, {"reason", "signal Terminated"}, {"stop_requested_at_s", 1.0}};
    save_json(f, rk);
    r = check_results_dir(d.path, kShortened);
    EXPECT_NE(r.problems.at(0).find("a stopped trial is not a scored trial"), std::string::npos) << joined(r);
    EXPECT_EQ(joined(r).find("elapsed_time"), std::string::npos) << joined(r);
}

// The rank_count line names its rule, as every problem line does.
TEST(MlperfCheckDir, ARankCountThatIsNotTheRanksNamesItsRule) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    auto s = load_json(sp);
    s["options"]["1"]["rank_count"] = 3;
    save_json(sp, s);
    const CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], sp + ": options[1].rank_count 3, total_ranks 2 (rule kvcacheHeadlineResult)");
}

namespace {

/// Whether `line` names the rule it applies: "(rule kvcache...", "(rule kvio..." (docs/mlperf-benchmark.md, "Checking a
/// results directory: kvio mlperf-check").
bool names_rule(const std::string& line) {
    return line.find("(rule kvcache") != std::string::npos || line.find("(rule kvio") != std::string::npos;
}

}  // namespace

// Every problem line names its rule, whatever is wrong: a run with a broken and planted file of each kind the checker
// reads (summary fields of the wrong type, an unparseable rank file, figures that are not numbers, a missing
// aggregate, a bad options list, a metadata file that does not parse, a missing trial), with and without
// --allow-shortened, and directories with no run or no rank directories.
TEST(MlperfCheckDir, EveryProblemNamesItsRule) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    auto s = load_json(sp);
    s["trials_per_option"] = "three";
    s["total_ranks"] = 2.5;
    s["kvio"]["metadata"]["trial_seconds"] = "2";
    s["kvio"]["metadata"]["options_run"] = "one";
    s["options"]["1"].erase("aggregated_device_read_p95_ms");
    save_json(sp, s);
    std::ofstream(rank_file(d.path, 0, 0), std::ios::trunc) << "{\"seed\": ";
    save_json(rank_file(d.path, 0, 1), nlohmann::ordered_json::array());
    auto rk = load_json(rank_file(d.path, 1, 0));
    rk["summary"]["cache_stats"] = 3;
    rk["summary"]["storage_throughput_tokens_per_sec"] = "fast";
    save_json(rank_file(d.path, 1, 0), rk);
    rk = load_json(rank_file(d.path, 1, 1));
    rk["summary"]["cache_stats"]["storage_entries"] = "many";
    save_json(rank_file(d.path, 1, 1), rk);
    fs::remove_all(d.path + "/option_1/trial_2");
    std::ofstream(d.path + "/kv_cache_20261204_120000_metadata.json") << "[";
    int lines = 0;
    for (const CheckOptions& o : {kShortened, CheckOptions{}}) {
        const CheckReport r = check_results_dir(d.path, o);
        EXPECT_GE(r.problems.size(), 10u) << joined(r);
        for (const auto& p : r.problems) {
            ++lines;
            EXPECT_TRUE(names_rule(p)) << p;
        }
    }
    ScratchDir empty("/var/tmp");
    for (const auto& p : check_results_dir(empty.path, {}).problems) EXPECT_TRUE(names_rule(p)) << p, ++lines;
    fs::create_directories(empty.path + "/option_1");
    for (const auto& p : check_results_dir(empty.path, {}).problems) EXPECT_TRUE(names_rule(p)) << p, ++lines;
    EXPECT_GE(lines, 24);
}

// The holes of kvioRankFileMarks: a kvio rank file whose flags.output is missing or null, a `kvio` member that is not
// an object, and a rank file swapped in from another run (its run id not the summary's, or not the other rank files'
// when there is no summary) are each a problem naming the file and the field.
TEST(MlperfCheckDir, RankMarkHolesAndForeignRankFilesAreProblems) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) {
            mark_as_kvio(d.path, t, n, 2);
            auto rk = load_json(rank_file(d.path, t, n));
            rk["kvio"]["mlperf_closed"]["run_id"] = "run-a";
            save_json(rank_file(d.path, t, n), rk);
        }
    auto s = load_json(sp);
    s["kvio"]["metadata"]["run_id"] = "run-a";
    save_json(sp, s);
    ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    auto edit = [&](int t, int n, const std::function<void(nlohmann::ordered_json&)>& f) {
        auto rk = load_json(rank_file(d.path, t, n));
        f(rk);
        save_json(rank_file(d.path, t, n), rk);
    };
    edit(0, 0, [](auto& rk) { rk["kvio"]["config"]["flags"].erase("output"); });
    edit(0, 1, [](auto& rk) { rk["kvio"]["config"]["flags"]["output"] = nullptr; });
    edit(1, 0, [](auto& rk) { rk["kvio"] = "kvio"; });
    edit(1, 1, [](auto& rk) { rk["kvio"]["mlperf_closed"]["run_id"] = "run-b"; });
    edit(2, 0, [](auto& rk) { rk["kvio"]["mlperf_closed"].erase("run_id"); });
    CheckReport r = check_results_dir(d.path, kShortened);
    std::string all = joined(r);
    EXPECT_EQ(r.problems.size(), 5u) << all;
    EXPECT_NE(all.find(rank_file(d.path, 0, 0) + ": kvio.config.flags.output missing: every rank file kvio's CLOSED "
                                                 "run places names itself there (rule kvioRankFileMarks)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(rank_file(d.path, 0, 1) + ": kvio.config.flags.output null: "), std::string::npos) << all;
    EXPECT_NE(all.find(rank_file(d.path, 1, 0) + ": kvio \"kvio\": not an object: its marks and parameters cannot be "
                                                 "read (rule kvioRankFileMarks)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(rank_file(d.path, 1, 1) + ": kvio.mlperf_closed.run_id \"run-b\", the summary's is \"run-a\": "
                                                 "a rank file of another run (rule kvioRankFileMarks)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(rank_file(d.path, 2, 0) + ": kvio.mlperf_closed.run_id missing, the summary's is \"run-a\""),
              std::string::npos)
        << all;
    // Without a summary the run's id is the one most rank files record.
    fs::remove(sp);
    r = check_results_dir(d.path, kShortened);
    all = joined(r);
    EXPECT_NE(all.find(rank_file(d.path, 1, 1) + ": kvio.mlperf_closed.run_id \"run-b\", the other rank files' is "
                                                 "\"run-a\": a rank file of another run (rule kvioRankFileMarks)"),
              std::string::npos)
        << all;
}

// --allow-shortened without a summary takes the trial length from every marked rank file, not the first one read: one
// file with another duration is named (and checked against the others' length), the rest pass.
TEST(MlperfCheckDir, WithoutASummaryTheTrialLengthIsEveryRankFilesAndDisagreementIsAProblem) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) mark_as_kvio(d.path, t, n, 2);
    fs::remove(sp);
    for (const auto& [t, n] : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 1}}) {
        SCOPED_TRACE(rank_file(d.path, t, n));
        write_synthetic_run(d.path, 3);
        fs::remove(sp);
        for (int tt = 0; tt < 3; ++tt)
            for (int nn = 0; nn < 2; ++nn) mark_as_kvio(d.path, tt, nn, tt == t && nn == n ? 3 : 2);
        const CheckReport r = check_results_dir(d.path, kShortened);
        const std::string all = joined(r);
        ASSERT_EQ(r.problems.size(), 3u) << all;  // no summary; the lengths disagree; the odd file's duration
        EXPECT_NE(all.find(d.path +
                           ": the rank files record 2 trial lengths (kvio.config.flags.duration): 5 of 6 "
                           "record 2 s, taken as the run's; the others: " +
                           rank_dir_name(1, t, n) +
                           "/kvcache_results_20260101_000000.json 3 s (rule kvcacheFixedWorkloadPerOption)"),
                  std::string::npos)
            << all;
        EXPECT_NE(all.find(rank_file(d.path, t, n) + ": duration 3, Option 1 requires 2"), std::string::npos) << all;
        ASSERT_EQ(r.notes.size(), 1u);
        EXPECT_NE(r.notes[0].find("checked against the trial length (2 s)"), std::string::npos) << r.notes[0];
    }
}

// What a CLOSED run killed with SIGKILL leaves in a trial (a client's own results not yet moved into its rank
// directory, a temporary of a file being written) makes the checker call the run stopped, naming the files: not a
// rank "missing".
TEST(MlperfCheckDir, AKilledRunIsStoppedNamingItsLeftoverFiles) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    fs::remove(sp);
    const std::string tdir = d.path + "/option_1/trial_2";
    fs::rename(rank_file(d.path, 2, 1), tdir + "/kvio_merged_results.rank1.json");
    fs::remove(d.path + "/" + rank_dir_name(1, 2, 1));
    std::ofstream(d.path + "/" + rank_dir_name(1, 2, 0) + "/kvcache_results_20260101_000001.json.tmp-4242") << "{";
    const CheckReport r = check_results_dir(d.path, kShortened);
    const std::string all = joined(r);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.killed_trials, 1);
    EXPECT_NE(all.find(tdir + ": stopped: the run ended before this trial was complete (killed, e.g. SIGKILL: files "
                              "it was still writing or moving are left: kvio_merged_results.rank1.json, rank_0/"
                              "kvcache_results_20260101_000001.json.tmp-4242): an incomplete trial, not a submittable "
                              "run (rule kvcacheClosedSequenceLocks)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(tdir + "/rank_1: no kvcache_results_*.json: rank 1 not placed: the run was stopped first"),
              std::string::npos)
        << all;
    EXPECT_EQ(all.find("rank 1 missing"), std::string::npos) << all;
    EXPECT_EQ(r.problems.at(0).rfind(d.path + ": a stopped run: 0 rank file(s) record a stop signal, 1 trial(s) hold "
                                              "files left by a killed run",
                                     0),
              0u)
        << all;
}

namespace {

/// A tmpfs of `bytes` on a fresh directory under /var/tmp (a limit, not an allocation: nothing is written to it),
/// unmounted and removed at destruction (root only).
struct SizedTmpfs {
    explicit SizedTmpfs(uint64_t bytes)
        : path("/var/tmp/kvio-closed-unit-" + std::to_string(::getpid()) + "-tmpfs-" + std::to_string(bytes)) {
        fs::create_directories(path);
        ok = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) == 0;
    }
    ~SizedTmpfs() {
        if (ok) ::umount2(path.c_str(), MNT_DETACH);
        std::error_code ec;
        fs::remove(path, ec);
    }
    std::string path;
    bool ok = false;
};

}  // namespace

// Each Option's need per rank against the cache filesystem's share per rank: on 10 GiB at 2 clients a share is ~5.1
// GB, below what an Option 3 entry can take (a 70B user of ~22600 tokens x 327680 bytes: ~7.4 GB) but above Option 1's
// (~3.3 GB): the warning fires for Option 3 alone, naming Option, share and need; on 20 GiB for none. The tokens are
// the largest context of the seed-42 user table (rank 0), which a logical `kvio simulate` of the Option's users
// recorded as 22617 (70 users) and 24836 (200 users).
TEST(ClosedSizing, AnOptionWhoseEntriesPassTheShareIsNamed) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (tmpfs mount)";
    SizedTmpfs small(10ull << 30), big(20ull << 30);
    ASSERT_TRUE(small.ok && big.ok);
    const std::vector<ClosedOption> rows = closed_options();
    SimConfig base;
    const auto rank0 = closed_sizing(base, rows, small.path, 2, {0});
    ASSERT_EQ(rank0.size(), 3u);
    EXPECT_EQ(rank0[2].need_tokens, 22617);
    EXPECT_EQ(rank0[0].need_tokens, 24836);
    EXPECT_EQ(rank0[2].bytes_per_token, 327680u);
    EXPECT_EQ(rank0[0].bytes_per_token, 131072u);
    const auto s = closed_sizing(base, rows, small.path, 2, {0, 1});
    for (const auto& o : s) {
        SCOPED_TRACE("option " + std::to_string(o.option));
        EXPECT_GE(o.need_tokens, rank0[size_t(o.option - 1)].need_tokens);  // the max over both ranks
        const uint64_t bytes = 128 + uint64_t(o.need_tokens) * o.bytes_per_token;
        EXPECT_EQ(o.need_bytes, (bytes + 4095) / 4096 * 4096);
        // 95 % of the tmpfs's free blocks in two whole-block shares.
        EXPECT_NEAR(double(o.share_bytes), 0.95 * double(10ull << 30) / 2, 4096.0 * 2);
    }
    EXPECT_FALSE(s[0].short_of_need());
    EXPECT_FALSE(s[1].short_of_need());
    EXPECT_TRUE(s[2].short_of_need());
    EXPECT_EQ(sizing_warning(s[0], 2), "");
    char want[320];
    std::snprintf(want, sizeof want,
                  "mlperf-closed: WARNING: option 3 (llama3.1-70b-instruct): each rank's share of the cache "
                  "filesystem is %.2f GB (95 %% of its free space over 2 client(s)), below the %.2f GB",
                  double(s[2].share_bytes) / 1e9, double(s[2].need_bytes) / 1e9);
    EXPECT_EQ(sizing_warning(s[2], 2).rfind(want, 0), 0u) << sizing_warning(s[2], 2);
    EXPECT_NE(sizing_warning(s[2], 2).find("(rule kvioCapacityRefusals)"), std::string::npos);
    for (const auto& o : closed_sizing(base, rows, big.path, 2, {0, 1})) {
        EXPECT_FALSE(o.short_of_need()) << o.option;
        EXPECT_EQ(sizing_warning(o, 2), "");
    }
}

// Under MPI the ranks whose cache filesystem is one (the same host and st_dev: "HOST ST_DEV") share it; the lowest of
// them warns for all. Two hosts of two ranks each, rank order interleaved as a round-robin mapping gives it, and on
// host b a rank whose --cache-dir is another filesystem: each rank's group, ascending, is exactly its own.
TEST(ClosedSizing, RanksSharingACacheFilesystemAreGroupedByHostAndDevice) {
    const std::vector<std::string> keys = {"a 7:1", "b 7:1", "a 7:1", "b 7:1", "b 8:3"};
    EXPECT_EQ(ranks_sharing(keys, 0), (std::vector<int>{0, 2}));
    EXPECT_EQ(ranks_sharing(keys, 2), (std::vector<int>{0, 2}));
    EXPECT_EQ(ranks_sharing(keys, 1), (std::vector<int>{1, 3}));
    EXPECT_EQ(ranks_sharing(keys, 3), (std::vector<int>{1, 3}));
    EXPECT_EQ(ranks_sharing(keys, 4), (std::vector<int>{4}));  // same host, another filesystem: alone
    // One warning per group: the ranks that are the first of their group.
    std::vector<int> warners;
    for (int r = 0; r < int(keys.size()); ++r)
        if (ranks_sharing(keys, r).front() == r) warners.push_back(r);
    EXPECT_EQ(warners, (std::vector<int>{0, 1, 4}));
    EXPECT_EQ(ranks_sharing({"h 0:5"}, 0), (std::vector<int>{0}));
    EXPECT_THROW(ranks_sharing(keys, 5), kvio::Error);
    EXPECT_THROW(ranks_sharing(keys, -1), kvio::Error);
}

// `kvio simulate --help`'s CLOSED section comes from the table: every Option's parameters as the flags a plain run
// would take, the trials, seed and pause, every allowed flag, what is refused and the exit statuses; lines that fit.
TEST(ClosedRules, TheHelpSaysTheProtocolFromTheTable) {
    const std::string h = closed_protocol_help();
    for (const ClosedOption& o : closed_options()) {
        char want[200];
        std::snprintf(want, sizeof want, "Option %d (%s): --model %s --num-users %lld --duration %lld ", o.option,
                      o.name, o.model, static_cast<long long>(o.num_users), static_cast<long long>(o.duration_s));
        EXPECT_NE(h.find(want), std::string::npos) << want << "\n" << h;
    }
    EXPECT_NE(h.find("--cpu-mem-gb 4 "), std::string::npos) << h;  // Option 2's CPU tier
    EXPECT_NE(h.find("the Options in order, 3 trials each, client N seeded 42 + N, 90 s between Options"),
              std::string::npos)
        << h;
    for (const char* f : {"--num-clients", "--mpi", "--quiet", "--progress-interval", "--log-level", "--seed 42"}) {
        EXPECT_NE(h.find(std::string(" ") + f), std::string::npos) << f;
        EXPECT_TRUE(closed_refusals({f == std::string("--seed 42") ? "--seed" : f}, 42).empty()) << f;
    }
    EXPECT_FALSE(closed_refusals({"--config"}, 42).empty());
    EXPECT_NE(h.find("Refused before anything runs, naming its rule (exit 1): any other flag"), std::string::npos) << h;
    EXPECT_NE(h.find("exit 0 complete, 1 failed or refused, 128 + signal when stopped"), std::string::npos) << h;
    size_t longest = 0;
    for (size_t at = 0, nl = 0; at <= h.size(); at = nl + 1) {
        nl = h.find('\n', at);
        if (nl == std::string::npos) nl = h.size();
        longest = std::max(longest, nl - at);
    }
    EXPECT_LE(longest, 120u) << h;
}

// Every flag a CLOSED run fixes is checked in a kvio rank file, not only the seven Option parameters: each flag
// `kvio simulate --mlperf-closed` refuses at launch, edited into a rank file's kvio.config.flags, is one problem whose
// line is that refusal (naming its rule). A rank file holding every flag at its default, and the values a run sets
// itself (its output, its cache directory, its client count, the computed storage capacity), is clean.
TEST(MlperfCheckDir, EveryFlagTheClosedRulesFixIsChecked) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) {
            mark_as_kvio(d.path, t, n, 2);
            auto rk = load_json(rank_file(d.path, t, n));
            nlohmann::ordered_json all =
                config_to_json(closed_option_config(SimConfig{}, closed_option(1), 2))["flags"];
            all["output"] = rank_file(d.path, t, n);
            all["cache_dir"] = "/mnt/kv/rank_" + std::to_string(n);
            all["num_clients"] = 2;
            all["storage_capacity_gb"] = 12.5;
            all["seed"] = 42 + n;
            rk["kvio"]["config"]["flags"] = all;
            save_json(rank_file(d.path, t, n), rk);
        }
    ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    const std::vector<std::tuple<const char*, nlohmann::ordered_json, const char*>> planted = {
        {"storage_io", "direct", "kvcacheClosedImmutable"},
        {"disable_prefix_caching", true, "kvcacheClosedImmutable"},
        {"enable_rag", true, "kvcacheClosedImmutable"},
        {"max_requests", 10, "kvcacheClosedImmutable"},
        {"storage_throttle_mibps", 5, "kvcacheClosedImmutable"},
        {"performance_profile", "throughput", "kvcacheClosedImmutable"},
        {"enable_autoscaling", true, "kvcacheAutoscalingProhibited"},
        {"config", "my.yaml", "kvcacheClosedSequenceLocks"},
    };
    const std::string f = rank_file(d.path, 1, 0);
    const auto clean = load_json(f);
    for (const auto& [key, value, rule] : planted) {
        auto rk = clean;
        rk["kvio"]["config"]["flags"][key] = value;
        save_json(f, rk);
        const CheckReport r = check_results_dir(d.path, kShortened);
        ASSERT_EQ(r.problems.size(), 1u) << key << "\n" << joined(r);
        EXPECT_EQ(r.problems[0].rfind(f + ": " + key + " " + value.dump() + ", kvio simulate's default ", 0), 0u)
            << r.problems[0];
        EXPECT_NE(r.problems[0].find("(rule " + std::string(rule)), std::string::npos) << r.problems[0];
    }
    save_json(f, clean);
    // The same edit in every rank file of the Option is one line naming the files.
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) {
            auto rk = load_json(rank_file(d.path, t, n));
            rk["kvio"]["config"]["flags"]["enable_rag"] = true;
            save_json(rank_file(d.path, t, n), rk);
        }
    const CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0].rfind(d.path + "/option_1: enable_rag true in 6 rank files (trial_0/rank_0, ", 0), 0u)
        << r.problems[0];
}

// A rank file of the Python benchmark records no flags; what it records of them is checked: a throughput timeline
// (only the autoscaler writes one) and entries in a tier the Option runs at 0 GiB.
TEST(MlperfCheckDir, APythonRankFileIsCheckedForWhatItRecords) {
    ScratchDir d("/var/tmp");
    write_synthetic_run(d.path, 3);
    const std::string f = rank_file(d.path, 2, 1);
    auto rk = load_json(f);
    rk["throughput_timeline"] = nlohmann::ordered_json::array();
    rk["summary"]["cache_stats"]["gpu_entries"] = 0;
    rk["summary"]["cache_stats"]["cpu_entries"] = 0;
    save_json(f, rk);
    ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    rk["throughput_timeline"] = {{{"t", 1.0}, {"tokens_per_sec", 10.0}}};
    rk["summary"]["cache_stats"]["gpu_entries"] = 12;
    rk["summary"]["cache_stats"]["cpu_entries"] = 3;
    save_json(f, rk);
    const CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 3u) << joined(r);
    EXPECT_EQ(r.problems[0], f + ": throughput_timeline has 1 entries: the autoscaler ran (--enable-autoscaling) "
                                 "(rule kvcacheAutoscalingProhibited)");
    EXPECT_EQ(r.problems[1], f + ": summary.cache_stats.gpu_entries 12, Option 1 runs --gpu-mem-gb 0: the tier held "
                                 "entries (rule kvcacheFixedWorkloadPerOption)");
    EXPECT_NE(r.problems[2].find("cpu_entries 3, Option 1 runs --cpu-mem-gb 0"), std::string::npos) << r.problems[2];
}

// A run that measured nothing is not clean: a rank file with requests_completed 0 (and 0 storage tokens/s), or one
// that read nothing back from storage, is a problem naming the file and the rule; in a test-only shortened trial
// (--trial-seconds, recorded) it is a note instead.
TEST(MlperfCheckDir, ARankThatMeasuredNothingIsAProblem) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    auto plant = [&](int64_t trial_seconds, const std::function<void(nlohmann::ordered_json&)>& edit) {
        write_synthetic_run(d.path, 3);
        for (int t = 0; t < 3; ++t)
            for (int n = 0; n < 2; ++n) {
                auto rk = load_json(rank_file(d.path, t, n));
                rk["requests_completed"] = 40;
                edit(rk);
                save_json(rank_file(d.path, t, n), rk);
            }
        auto s = load_json(sp);
        s["kvio"]["metadata"]["trial_seconds"] = trial_seconds;
        s["options"]["1"] = aggregate_option(d.path, 1, 3, 2);  // the summary agrees with the planted files
        save_json(sp, s);
        return check_results_dir(d.path, kShortened);
    };
    auto nothing_notes = [](const CheckReport& rep) {
        std::vector<std::string> out;
        for (const auto& n : rep.notes)
            if (n.find("measured nothing") != std::string::npos) out.push_back(n);
        return out;
    };
    CheckReport r = plant(300, [](nlohmann::ordered_json&) {});
    EXPECT_TRUE(r.problems.empty()) << joined(r);
    EXPECT_TRUE(nothing_notes(r).empty());
    auto nothing = [](nlohmann::ordered_json& rk) {
        rk["requests_completed"] = 0;
        rk["summary"]["storage_throughput_tokens_per_sec"] = 0;
        rk["summary"]["cache_stats"]["tier_storage_kv_bytes_read_gb"] = 0;
    };
    r = plant(300, nothing);
    ASSERT_EQ(r.problems.size(), 6u) << joined(r);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n)
            EXPECT_NE(joined(r).find(rank_file(d.path, t, n) +
                                     ": requests_completed 0: the rank completed no request, it measured nothing "
                                     "(rule kvcacheHeadlineResult)\n"),
                      std::string::npos)
                << joined(r);
    r = plant(2, nothing);  // the test-only 2 s trials the synthetic run records
    EXPECT_TRUE(r.problems.empty()) << joined(r);
    ASSERT_EQ(nothing_notes(r).size(), 6u);
    EXPECT_EQ(nothing_notes(r)[0], rank_file(d.path, 0, 0) +
                                       ": requests_completed 0: the rank completed no request, it measured nothing, "
                                       "in a test-only shortened trial (--trial-seconds)");
    // Requests completed, but nothing read back from storage: one rank file.
    r = plant(300, [&](nlohmann::ordered_json& rk) {
        if (rk["seed"] == 43) rk["summary"]["cache_stats"]["tier_storage_kv_bytes_read_gb"] = 0;
    });
    ASSERT_EQ(r.problems.size(), 3u) << joined(r);
    EXPECT_EQ(r.problems[0], rank_file(d.path, 0, 1) +
                                 ": summary.cache_stats.tier_storage_kv_bytes_read_gb 0 "
                                 "(storage_throughput_tokens_per_sec 200): the rank read nothing back from storage, "
                                 "which every Option reads (rule kvcacheLatencyValidity)");
}

// Every problem kind the checker emits names its rule (docs/mlperf-benchmark.md, "Checking a results directory: kvio
// mlperf-check"): each kind planted alone in a fresh kvio-marked run must add at least one problem, and every line,
// with and without --allow-shortened, names a rule. A plant that adds nothing is a kind this walk no longer reaches.
TEST(MlperfCheckDir, EveryProblemKindNamesItsRule) {
    using J = nlohmann::ordered_json;
    ScratchDir d("/var/tmp");
    auto fresh = [&] {
        const std::string sp = write_synthetic_run(d.path, 3);
        for (int t = 0; t < 3; ++t)
            for (int n = 0; n < 2; ++n) {
                mark_as_kvio(d.path, t, n, 2);
                auto rk = load_json(rank_file(d.path, t, n));
                rk["kvio"]["mlperf_closed"]["run_id"] = "run-a";
                rk["requests_completed"] = 40;
                save_json(rank_file(d.path, t, n), rk);
            }
        auto s = load_json(sp);
        s["kvio"]["metadata"]["run_id"] = "run-a";
        save_json(sp, s);
        return sp;
    };
    auto rank = [&](int t, int n, const std::function<void(J&)>& f) {
        auto rk = load_json(rank_file(d.path, t, n));
        f(rk);
        save_json(rank_file(d.path, t, n), rk);
    };
    auto summary = [&](const std::string& sp, const std::function<void(J&)>& f) {
        auto s = load_json(sp);
        f(s);
        save_json(sp, s);
    };
    const std::vector<std::pair<const char*, std::function<void(const std::string&)>>> kinds = {
        {"seed", [&](auto&) { rank(0, 1, [](J& rk) { rk["seed"] = 7; }); }},
        {"option parameter", [&](auto&) { rank(0, 0, [](J& rk) { rk["kvio"]["config"]["flags"]["num_users"] = 5; }); }},
        {"fixed flag",
         [&](auto&) { rank(0, 0, [](J& rk) { rk["kvio"]["config"]["flags"]["storage_io"] = "direct"; }); }},
        {"config", [&](auto&) { rank(0, 0, [](J& rk) { rk["kvio"]["config"]["flags"]["config"] = "x.yaml"; }); }},
        {"shared cache",
         [&](auto&) {
             rank(1, 0, [](J& rk) { rk["kvio"]["config"]["flags"]["cache_dir"] = "/nonexistent-kvio/kv"; });
             rank(1, 1, [](J& rk) { rk["kvio"]["config"]["flags"]["cache_dir"] = "/nonexistent-kvio/kv"; });
         }},
        {"mark of another trial", [&](auto&) { rank(2, 0, [](J& rk) { rk["kvio"]["mlperf_closed"]["trial"] = 1; }); }},
        {"no mark", [&](auto&) { rank(2, 0, [](J& rk) { rk["kvio"].erase("mlperf_closed"); }); }},
        {"output elsewhere",
         [&](auto&) { rank(2, 1, [](J& rk) { rk["kvio"]["config"]["flags"]["output"] = "/x/y.json"; }); }},
        {"output missing", [&](auto&) { rank(2, 1, [](J& rk) { rk["kvio"]["config"]["flags"].erase("output"); }); }},
        {"kvio not an object", [&](auto&) { rank(2, 1, [](J& rk) { rk["kvio"] = 1; }); }},
        {"flags not an object", [&](auto&) { rank(2, 1, [](J& rk) { rk["kvio"]["config"]["flags"] = 1; }); }},
        {"foreign run id", [&](auto&) { rank(1, 1, [](J& rk) { rk["kvio"]["mlperf_closed"]["run_id"] = "run-b"; }); }},
        {"closed_submission true",
         [&](auto&) { rank(1, 1, [](J& rk) { rk["kvio"]["mlperf_closed"]["closed_submission"] = true; }); }},
        {"stopped rank", [&](auto&) { rank(1, 0, [](J& rk) {
                                          rk["kvio"]["stop"] = {{"signal", 15}};
                                      }); }},
        {"results pending",
         [&](auto&) { rank(1, 0, [](J& rk) { rk["kvio"]["mlperf_closed"]["results_pending"] = true; }); }},
        {"storage I/O errors",
         [&](auto&) {
             rank(1, 0, [](J& rk) {
                 rk["kvio"]["cache"] = {{"capacity_refusals", 0}, {"write_io_errors", 2}, {"failed_reads", 0}};
             });
         }},
        {"capacity refusals",
         [&](auto&) {
             rank(1, 0, [](J& rk) {
                 rk["kvio"]["cache"] = {
                     {"capacity_refusals", 5}, {"capacity_refused_bytes", 1000}, {"write_io_errors", 0}};
                 rk["summary"]["cache_stats"]["total_write_bytes"] = 1000;
             });
         }},
        {"short trial", [&](auto&) { rank(0, 1, [](J& rk) { rk["summary"]["elapsed_time"] = 0.5; }); }},
        {"nothing measured",
         [&](const std::string& sp) {
             rank(0, 1, [](J& rk) { rk["requests_completed"] = 0; });
             summary(sp, [](J& s) { s["kvio"]["metadata"]["trial_seconds"] = 300; });
         }},
        {"figure not a number",
         [&](auto&) { rank(0, 1, [](J& rk) { rk["summary"]["storage_throughput_tokens_per_sec"] = "x"; }); }},
        {"no summary object", [&](auto&) { rank(0, 1, [](J& rk) { rk.erase("summary"); }); }},
        {"unparseable rank file", [&](auto&) { std::ofstream(rank_file(d.path, 0, 1), std::ios::trunc) << "{"; }},
        {"missing rank file", [&](auto&) { fs::remove(rank_file(d.path, 0, 1)); }},
        {"two results files",
         [&](auto&) {
             fs::copy_file(rank_file(d.path, 0, 1), d.path + "/" + rank_dir_name(1, 0, 1) + "/kvcache_results_2.json");
         }},
        {"unexpected rank", [&](auto&) { fs::create_directories(d.path + "/" + rank_dir_name(1, 0, 7)); }},
        {"leftover of a killed run", [&](auto&) { std::ofstream(d.path + "/option_1/trial_0/x.json.tmp-12"); }},
        {"missing trial", [&](auto&) { fs::remove_all(d.path + "/option_1/trial_2"); }},
        {"missing Option",
         [&](const std::string& sp) { summary(sp, [](J& s) {
                                          s["kvio"]["metadata"]["options_run"] = {1, 2};
                                      }); }},
        {"aggregate",
         [&](const std::string& sp) {
             summary(sp, [](J& s) { s["options"]["1"]["aggregated_read_bandwidth_gbps"] = 1e6; });
         }},
        {"aggregate missing",
         [&](const std::string& sp) {
             summary(sp, [](J& s) { s["options"]["1"].erase("aggregated_device_write_p95_ms"); });
         }},
        {"rank list",
         [&](const std::string& sp) { summary(sp, [](J& s) { s["options"]["1"]["cpu_tier_ranks"] = {"x"}; }); }},
        {"per_trial",
         [&](const std::string& sp) { summary(sp, [](J& s) { s["options"]["1"]["per_trial"] = J::array(); }); }},
        {"rank_count", [&](const std::string& sp) { summary(sp, [](J& s) { s["options"]["1"]["rank_count"] = 5; }); }},
        {"option missing in summary",
         [&](const std::string& sp) { summary(sp, [](J& s) { s["options"].erase("1"); }); }},
        {"trials_per_option", [&](const std::string& sp) { summary(sp, [](J& s) { s["trials_per_option"] = 2; }); }},
        {"total_ranks type", [&](const std::string& sp) { summary(sp, [](J& s) { s["total_ranks"] = "two"; }); }},
        {"stopped by signal",
         [&](const std::string& sp) { summary(sp, [](J& s) { s["kvio"]["metadata"]["stopped_by_signal"] = 2; }); }},
        {"one filesystem",
         [&](const std::string& sp) {
             summary(sp, [](J& s) {
                 s["kvio"]["provenance"] = {{"cache_dir", {{"st_dev", "8:1"}}}, {"results_dir", {{"st_dev", "8:1"}}}};
             });
         }},
        {"cache in memory",
         [&](const std::string& sp) {
             summary(sp, [](J& s) {
                 s["kvio"]["provenance"]["cache_dir"] = {{"fstype", "tmpfs"}, {"st_dev", "0:40"}};
             });
         }},
        {"unreadable summary", [&](const std::string& sp) { std::ofstream(sp, std::ios::trunc) << "[1,"; }},
        {"no summary", [&](const std::string& sp) { fs::remove(sp); }},
        {"metadata default",
         [&](auto&) {
             save_json(d.path + "/kv_cache_1_metadata.json", {{"gpu_mem_gb", 16.0}});
         }},
        {"metadata unparseable", [&](auto&) { std::ofstream(d.path + "/kv_cache_1_metadata.json") << "{"; }},
    };
    int lines = 0;
    for (const auto& [kind, plant] : kinds) {
        const std::string sp = fresh();
        ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
            << joined(check_results_dir(d.path, kShortened));
        plant(sp);
        for (const CheckOptions& o : {kShortened, CheckOptions{}}) {
            const CheckReport r = check_results_dir(d.path, o);
            if (o.allow_shortened) {
                EXPECT_FALSE(r.problems.empty()) << kind << ": no problem found";
            }
            for (const auto& p : r.problems) {
                ++lines;
                EXPECT_TRUE(names_rule(p)) << kind << ": " << p;
            }
        }
    }
    EXPECT_GE(lines, int(kinds.size()) * 2);
}

// A damaged summary is blamed on the summary: an edited kvio.metadata.option_parameters is one problem naming the
// summary and the field, not the untouched rank files checked against it; an edited seed_base is reported.
TEST(MlperfCheckDir, ADamagedSummaryIsNamedNotTheRankFiles) {
    ScratchDir d("/var/tmp");
    const std::string sp = write_synthetic_run(d.path, 3);
    for (int t = 0; t < 3; ++t)
        for (int n = 0; n < 2; ++n) mark_as_kvio(d.path, t, n, 2);
    auto s = load_json(sp);
    s["kvio"]["metadata"]["option_parameters"]["1"] = closed_option_parameters(closed_option(1), 2);
    s["kvio"]["metadata"]["seed_base"] = 42;
    save_json(sp, s);
    ASSERT_TRUE(check_results_dir(d.path, kShortened).problems.empty())
        << joined(check_results_dir(d.path, kShortened));
    s["kvio"]["metadata"]["option_parameters"]["1"]["num_users"] = 5;
    save_json(sp, s);
    CheckReport r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0], sp + ": kvio.metadata.option_parameters.1.num_users 5, Option 1 runs 200 (rule "
                                  "kvcacheFixedWorkloadPerOption)");
    s["kvio"]["metadata"]["option_parameters"]["1"]["num_users"] = 200;
    s["kvio"]["metadata"]["seed_base"] = 7;
    save_json(sp, s);
    r = check_results_dir(d.path, kShortened);
    ASSERT_EQ(r.problems.size(), 1u) << joined(r);
    EXPECT_EQ(r.problems[0],
              sp + ": kvio.metadata.seed_base 7, CLOSED seeds rank N with 42 + N (rule kvcacheClosedSequenceLocks)");
    EXPECT_NE(joined(check_results_dir(d.path, {})).find(": kvio.metadata.seed_base 7, "), std::string::npos)
        << "without --allow-shortened too";
}
