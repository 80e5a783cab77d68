// kvio drives' pure parts: target specs, the job rewritten per target, the spread over rounds and the verdict.
#include <gtest/gtest.h>

#include "common/error.h"
#include "drives/drives_html.h"
#include "drives/figures.h"
#include "drives/diagnosis.h"
#include "drives/job_text.h"
#include "drives/kv_line.h"
#include "drives/process.h"
#include "drives/prom_scrape.h"
#include "drives/sim_workload.h"
#include "drives/summary.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace kvio::drives;

TEST(DrivesSpec, LocalAndRemoteForms) {
    DriveSpec a = parse_drive_spec("fast=/dev/loop3");
    EXPECT_EQ(a.name, "fast");
    EXPECT_EQ(a.path, "/dev/loop3");
    EXPECT_FALSE(a.remote());
    DriveSpec b = parse_drive_spec("h1=127.0.0.2:9000:/dev/loop4");
    EXPECT_EQ(b.host, "127.0.0.2");
    EXPECT_EQ(b.port, 9000);
    EXPECT_EQ(b.path, "/dev/loop4");
    DriveSpec c = parse_drive_spec("h2=lab-host:/srv/kv");
    EXPECT_EQ(c.host, "lab-host");
    EXPECT_EQ(c.port, 8765);
    EXPECT_EQ(c.path, "/srv/kv");
    EXPECT_THROW(parse_drive_spec("/dev/loop3"), kvio::UsageError);
    EXPECT_THROW(parse_drive_spec("x=host:70000:/p"), kvio::UsageError);
    EXPECT_THROW(parse_drive_spec("x=relative"), kvio::UsageError);
    EXPECT_THROW(parse_drive_spec("a b=/p"), kvio::UsageError);
}

// An IPv6 host in brackets, with and without a port: fio is given its ip6: client form, messages the bracketed one.
TEST(DrivesSpec, Ipv6HostInBrackets) {
    DriveSpec a = parse_drive_spec("v6=[::1]:9000:/dev/nvme0n1");
    EXPECT_EQ(a.host, "::1");
    EXPECT_EQ(a.port, 9000);
    EXPECT_EQ(a.path, "/dev/nvme0n1");
    EXPECT_EQ(a.fio_client(), "ip6:::1,9000");
    EXPECT_EQ(a.address(), "[::1]:9000");
    DriveSpec b = parse_drive_spec("v6=[fd00::2]:/srv/kv");
    EXPECT_EQ(b.host, "fd00::2");
    EXPECT_EQ(b.port, 8765);
    EXPECT_EQ(b.path, "/srv/kv");
    EXPECT_EQ(parse_drive_spec("v4=10.0.0.1:/p").fio_client(), "10.0.0.1,8765");
    EXPECT_EQ(parse_drive_spec("v4=10.0.0.1:/p").address(), "10.0.0.1:8765");
    for (const char* bad : {"x=[::1]/p", "x=[::1", "x=[]:/p", "x=[host]:/p", "x=[::1]:99999:/p", "x=[::1]:rel"})
        EXPECT_THROW(parse_drive_spec(bad), kvio::UsageError) << bad;
}

TEST(DrivesJob, TargetReplacedAndRatesDroppedForClosedLoop) {
    const std::string job =
        "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\n[p1]\nrw=randread\nrate_iops=100,0\n"
        "rate_process=poisson\nsize=8m\n[p2]\nstonewall\ndirectory=/mnt/x\nrw=write\nsize=4m\n";
    EXPECT_TRUE(job_is_paced(job));
    std::string closed = job_for_target(job, "/dev/loop7", TargetField::Filename, Pacing::Closed);
    EXPECT_EQ(closed.find("nvme0n1"), std::string::npos);
    EXPECT_EQ(closed.find("/mnt/x"), std::string::npos);
    EXPECT_EQ(closed.find("rate"), closed.find("rates and thinktime dropped"));  // only the comment mentions it
    EXPECT_NE(closed.find("[global]\nfilename=/dev/loop7\n"), std::string::npos);
    EXPECT_NE(closed.find("rw=randread"), std::string::npos);
    std::string open = job_for_target(job, "/srv/kv", TargetField::Directory, Pacing::Open);
    EXPECT_NE(open.find("[global]\ndirectory=/srv/kv\n"), std::string::npos);
    EXPECT_NE(open.find("rate_iops=100,0"), std::string::npos);
    EXPECT_FALSE(job_is_paced("[a]\nrw=read\nsize=1m\n"));
    EXPECT_FALSE(job_is_paced("[a]\nrw=read\nthinktime=0\n"));
    EXPECT_TRUE(job_is_paced("[a]\nrw=read\nthinktime=250\n"));
    // thinktime: the closed loop drops it (capacity at the job's depth) unless --keep-thinktime; the open loop keeps it
    const std::string paced = "[a]\nrw=read\nthinktime=250\nthinktime_blocks=4\nthinktime_spin=10\nsize=1m\n";
    const std::string c = job_for_target(paced, "/dev/loop7", TargetField::Filename, Pacing::Closed);
    EXPECT_EQ(c.find("thinktime="), std::string::npos) << c;
    EXPECT_EQ(c.find("thinktime_"), std::string::npos) << c;
    EXPECT_NE(c.find("rates and thinktime dropped"), std::string::npos) << c;
    for (Pacing p : {Pacing::ClosedKeepThinktime, Pacing::Open}) {
        const std::string k = job_for_target(paced, "/dev/loop7", TargetField::Filename, p);
        EXPECT_NE(k.find("thinktime=250\nthinktime_blocks=4\nthinktime_spin=10\n"), std::string::npos) << k;
    }
    EXPECT_EQ(job_declared(job).bytes, 12u << 20);
    EXPECT_EQ(job_declared(job).ios, 3072u);  // fio's default bs, 4 KiB
    EXPECT_EQ(job_declared("[global]\nsize=1g\n[a]\n[b]\nio_size=2m\n").bytes, (1u << 30) + (2u << 20));
    EXPECT_EQ(job_declared("[a]\nsize=1m\ntime_based=1\nruntime=5\n").bytes, 0u);
    EXPECT_EQ(job_declared("[a]\nsize=1m\ntime_based=1\nruntime=5\n").ios, 0u);
}

// A distilled job ends each section at number_ios commands under an io_size that is only an upper bound
// (docs/distill.md "Phases"): it declares number_ios × the one command size, not the bound.
TEST(DrivesJob, DeclaredBytesOfDistilledJobCountNumberIos) {
    const std::string distilled =
        "[global]\nioengine=libaio\n[kvio-distilled]\nrw=write\nbssplit=64k/100\nsize=4194304\n"
        "io_size=9437184\nnumber_ios=64\n";
    EXPECT_EQ(job_declared(distilled).bytes, 4u << 20);
    EXPECT_EQ(job_declared(distilled).ios, 64u);
    // A real mix of sizes: the commands are declared, the bytes are not.
    const std::string mix = "[a]\nrw=randrw\nbssplit=4k/50:64k/50,128k/100\nio_size=64m\nnumber_ios=100\n";
    EXPECT_EQ(job_declared(mix).bytes, 0u);
    EXPECT_EQ(job_declared(mix).ios, 100u);
    // The cap comes first: 1 MiB of 64 KiB commands is 16, though number_ios says 64.
    EXPECT_EQ(job_declared("[a]\nrw=read\nbs=64k\nio_size=1m\nnumber_ios=64\n").ios, 16u);
    // Passes: loops and numjobs restart number_ios; the distiller's idle section (null engine, one 4 KiB I/O).
    EXPECT_EQ(job_declared("[a]\nrw=read\nbs=8k\nnumber_ios=10\nloops=3\nnumjobs=2\n").bytes, 60u * 8192);
    EXPECT_EQ(job_declared("[i]\nioengine=null\nrw=read\nbs=4k\nsize=4k\nnumber_ios=1\n").bytes, 4096u);
    // Per-direction sizes: a write-only section takes the write size; a mix of two sizes says no bytes.
    EXPECT_EQ(job_declared("[a]\nrw=write\nbs=4k,16k\nnumber_ios=4\n").bytes, 4u * 16384);
    EXPECT_EQ(job_declared("[a]\nrw=randrw\nbs=4k,16k\nnumber_ios=4\n").bytes, 0u);
    EXPECT_EQ(job_declared("[a]\nrw=randrw\nbs=4k,16k\nnumber_ios=4\n").ios, 4u);
    EXPECT_EQ(job_declared("[a]\nrw=read\nsize=50%\n").bytes, 0u);
    EXPECT_EQ(job_declared("[a]\nrw=trim\nsize=1m\n").bytes, 0u);
}

TEST(DrivesVerdict, SeparatedRoundsNamedAndOverlapIsNoise) {
    Spread fast = spread_of({100, 104, 98});
    EXPECT_DOUBLE_EQ(fast.median, 100);
    EXPECT_DOUBLE_EQ(fast.min, 98);
    EXPECT_DOUBLE_EQ(fast.max, 104);
    Spread slow = spread_of({50, 52, 51});
    Spread close = spread_of({97, 101, 103});
    auto v = rank_and_compare({{"slow", slow}, {"close", close}, {"fast", fast}}, true, "MB/s");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].a, "close");  // median 101 > 100
    EXPECT_EQ(v[0].b, "fast");
    EXPECT_FALSE(v[0].separated);
    EXPECT_NE(v[0].text.find("inside noise"), std::string::npos);
    EXPECT_EQ(v[1].a, "fast");
    EXPECT_EQ(v[1].b, "slow");
    EXPECT_TRUE(v[1].separated);
    EXPECT_NEAR(v[1].pct, (100.0 / 51 - 1) * 100, 1e-9);
    EXPECT_NE(v[1].text.find("fast faster than slow by 96.1 %"), std::string::npos) << v[1].text;
    EXPECT_NE(v[1].text.find("by chance 1 in 10 at 3 and 3 rounds"), std::string::npos) << v[1].text;
    EXPECT_NEAR(separation_by_chance(2, 2), 1.0 / 3, 1e-12);
    EXPECT_NEAR(separation_by_chance(5, 5), 2.0 / 252, 1e-12);
    EXPECT_NEAR(separation_by_chance(2, 3), 2.0 / 10, 1e-12);
    // Latency: lower first.
    auto l = rank_and_compare({{"a", spread_of({900, 1000})}, {"b", spread_of({400, 500})}}, false, "p99");
    EXPECT_EQ(l[0].a, "b");
    EXPECT_TRUE(l[0].separated);
    EXPECT_NEAR(l[0].pct, 950.0 / 450 * 100 - 100, 1e-9);
    // A median of 0 (a drive that moved nothing) is no base for a percentage: "by 0.0 %" was printed.
    auto z = rank_and_compare({{"zero", spread_of({0, 0, 0})}, {"some", spread_of({5, 6, 7})}}, true, "tok/s");
    ASSERT_EQ(z.size(), 1u);
    EXPECT_EQ(z[0].text, "some ahead of zero in tok/s, zero's median being 0 (no percentage)");
}

TEST(DrivesFio, LocalJsonPhasesAndTotal) {
    auto dir = [](double iops, double bw, uint64_t bytes, uint64_t ios, double p99) {
        return nlohmann::json{{"iops", iops},
                              {"bw_bytes", bw},
                              {"io_bytes", bytes},
                              {"total_ios", ios},
                              {"clat_ns", {{"percentile", {{"50.000000", p99 / 2}, {"99.000000", p99}}}}}};
    };
    nlohmann::json j = {{"fio version", "fio-3.33"},
                        {"jobs",
                         {{{"jobname", "w"},
                           {"error", 0},
                           {"job_runtime", 1000},
                           {"read", dir(0, 0, 0, 0, 0)},
                           {"write", dir(100, 4e6, 4000000, 100, 5000)}},
                          {{"jobname", "r"},
                           {"error", 0},
                           {"job_runtime", 3000},
                           {"read", dir(300, 3e6, 9000000, 900, 7000)},
                           {"write", dir(0, 0, 0, 0, 0)}}}}};
    FioRun r = parse_fio_json(j, "x.json");
    ASSERT_EQ(r.phases.size(), 2u);
    EXPECT_EQ(r.total.write.io_bytes, 4000000u);
    EXPECT_EQ(r.total.read.io_bytes, 9000000u);
    EXPECT_DOUBLE_EQ(r.total.runtime_s, 4);
    EXPECT_DOUBLE_EQ(r.total.read.mb_s, 9.0 / 4);
    EXPECT_DOUBLE_EQ(r.total.read.iops, 900.0 / 4);
    EXPECT_DOUBLE_EQ(r.total.read.clat_p99, 7000);
    EXPECT_DOUBLE_EQ(r.phases[0].write.clat_p50, 2500);
    j["jobs"][1]["error"] = 5;
    EXPECT_THROW(parse_fio_json(j, "x.json"), kvio::Error);
}

// A direction's rate while the job moved it: the phases' bytes over their own times; the distiller's idle section
// (fio's null engine, one 4 KiB read and the gap's thinktime) is no device rate and is left out.
TEST(DrivesFio, MovingRateLeavesOutNullEngineSections) {
    auto dir = [](double bw, uint64_t bytes) {
        return nlohmann::json{{"iops", 1}, {"bw_bytes", bw}, {"io_bytes", bytes}, {"total_ios", 1}};
    };
    auto job = [&](const char* name, const char* engine, nlohmann::json rd, nlohmann::json wr) {
        nlohmann::json j = {{"jobname", name}, {"error", 0}, {"job_runtime", 1000}, {"read", rd}, {"write", wr}};
        if (engine) j["job options"] = {{"ioengine", engine}};
        return j;
    };
    nlohmann::json j = {
        {"jobs",
         {job("idle", "null", dir(12e3, 4096), dir(0, 0)), job("r", "libaio", dir(30e6, 30000000), dir(0, 0)),
          job("w", nullptr, dir(0, 0), dir(10e6, 5000000))}}};
    FioRun r = parse_fio_json(j, "x.json");
    ASSERT_EQ(r.phases.size(), 3u);
    EXPECT_TRUE(r.phases[0].null_engine);
    EXPECT_FALSE(r.phases[1].null_engine);
    EXPECT_FALSE(r.phases[2].null_engine);
    EXPECT_DOUBLE_EQ(moving_rate(r, false), 30e6);  // with the idle section: (30e6 + 4096) / 1.34 s
    EXPECT_DOUBLE_EQ(moving_rate(r, true), 10e6);
    r.phases[0].null_engine = false;
    EXPECT_LT(moving_rate(r, false), 23e6);
}

TEST(DrivesProm, DeviceFiguresAreTheDifferenceOfTwoScrapes) {
    const std::string before =
        "# HELP x\nkvio_device_bytes_total{device=\"loop1\",op=\"read\"} 1000\n"
        "kvio_device_commands_total{device=\"loop1\",op=\"read\"} 10\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"0.001\"} 10\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"0.002\"} 10\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"+Inf\"} 10\n"
        "kvio_queue_depth_sum{device=\"loop1\",op=\"read\"} 10\nkvio_queue_depth_count{device=\"loop1\",op=\"read\"} "
        "10\n";
    // 100 more reads: 50 under 1 ms, 50 between 1 and 2 ms, at depth 3 each.
    const std::string after =
        "kvio_device_bytes_total{device=\"loop1\",op=\"read\"} 410600\n"
        "kvio_device_commands_total{device=\"loop1\",op=\"read\"} 110\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"0.001\"} 60\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"0.002\"} 110\n"
        "kvio_d2c_seconds_bucket{device=\"loop1\",op=\"read\",le=\"+Inf\"} 110\n"
        "kvio_queue_depth_sum{device=\"loop1\",op=\"read\"} 310\nkvio_queue_depth_count{device=\"loop1\",op=\"read\"} "
        "110\n";
    DeviceFigures f = device_figures_between(parse_prom_text(before), parse_prom_text(after), "");
    ASSERT_TRUE(f.present);
    EXPECT_EQ(f.disk, "loop1");
    EXPECT_EQ(f.read_bytes, 409600u);
    EXPECT_EQ(f.read_cmds, 100u);
    EXPECT_NEAR(f.d2c_read_p50, 1e6, 1);     // the 50th of 100: the top of the first bucket
    EXPECT_NEAR(f.d2c_read_p99, 1.98e6, 1);  // 49 of 50 into [1 ms, 2 ms)
    EXPECT_DOUBLE_EQ(f.qd_read_mean, 3);
    EXPECT_FALSE(device_figures_between(parse_prom_text(before), parse_prom_text(after), "loop2").present);
}

TEST(DrivesSummary, InterruptedTargetAndStopSignalInJsonAndConsole) {
    Target t;
    t.spec = parse_drive_spec("x=/dev/loop9");
    t.interrupted = "stopped by signal 15 (Terminated) after 0 of 1 runs; round 1 closed cut";
    RunResult cut;
    cut.mode = "closed", cut.error = "cut short by signal 15 (Terminated)";
    t.runs.push_back(cut);
    RunContext ctx;
    ctx.rounds = 1, ctx.modes = {"closed"}, ctx.stopped_by_signal = 15;
    nlohmann::json j = drives_json({t}, ctx);
    EXPECT_EQ(j["stopped_by_signal"], 15);
    EXPECT_EQ(j["targets"][0]["status"], "interrupted");
    EXPECT_EQ(j["targets"][0]["interrupted"], t.interrupted);
    EXPECT_FALSE(j["targets"][0].contains("error"));
    std::ostringstream out;
    print_table(out, {t}, ctx);
    EXPECT_NE(out.str().find(", 1 round: median"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("x   INTERRUPTED: stopped by signal 15"), std::string::npos) << out.str();
    EXPECT_EQ(out.str().find("FAILED"), std::string::npos) << out.str();
    ctx.stopped_by_signal = 0, ctx.rounds = 2;
    EXPECT_TRUE(drives_json({}, ctx)["stopped_by_signal"].is_null());
}

// --simulate's flags: words split with quotes kept, checked against kvio simulate's flag table, the flags kvio drives
// sets refused; the results JSON's headline figures read back.
TEST(DrivesSimulate, FlagsCheckedAndResultsRead) {
    auto w = split_words("--model 'my model' --seed=42  --storage-io direct");
    ASSERT_EQ(w.size(), 5u);
    EXPECT_EQ(w[1], "my model");
    EXPECT_EQ(w[2], "--seed=42");
    EXPECT_EQ(check_simulate_flags(w), "direct");
    EXPECT_EQ(check_simulate_flags(split_words("--storage-io=io_uring")), "io_uring");
    EXPECT_EQ(check_simulate_flags(split_words("--num-u 4")), "");  // a unique prefix, as argparse takes it
    EXPECT_THROW(split_words("--model 'x"), kvio::UsageError);
    EXPECT_THROW(check_simulate_flags(split_words("--output r.json")), kvio::UsageError);
    EXPECT_THROW(check_simulate_flags(split_words("--cache-d /x")), kvio::UsageError);
    EXPECT_THROW(check_simulate_flags(split_words("--bogus 1")), kvio::UsageError);
    nlohmann::json r = {
        {"requests_completed", 10},
        {"summary",
         {{"elapsed_time", 4.2},
          {"storage_throughput_tokens_per_sec", 188.0},
          {"avg_throughput_tokens_per_sec", 50.0},
          {"storage_io_latency_ms", {{"p95", 900.0}}},
          {"cache_stats",
           {{"tier_storage_read_bandwidth_gbps", 0.036},
            {"tier_storage_write_bandwidth_gbps", 0.006},
            {"storage_read_device_p95_ms", 800.0},
            {"tier_storage_kv_bytes_read_gb", 0.15}}}}},
        {"kvio",
         {{"bandwidth_timeline", {{{"t_s", 1.0}, {"storage_read_gibps", 0.04}, {"storage_write_gibps", 0.01}}}}}}};
    SimFigures f = parse_sim_results(r, "r.json");
    EXPECT_EQ(f.requests, 10);
    EXPECT_EQ(f.storage_tokens_per_s, 188.0);
    EXPECT_EQ(f.read_gib_s, 0.036);
    EXPECT_EQ(f.read_device_p95_ms, 800.0);
    EXPECT_EQ(f.write_device_p95_ms, 0.0);  // absent: no device-side write list
    EXPECT_EQ(f.storage_io_p95_ms, 900.0);
    ASSERT_EQ(f.timeline.size(), 1u);
    EXPECT_EQ(f.timeline[0], (std::vector<double>{1.0, 0.04, 0.01}));
    EXPECT_THROW(parse_sim_results(nlohmann::json{{"requests_completed", 0}}, "r.json"), kvio::Error);
    EXPECT_EQ(sim_run_problem(f), "");
}

// A --simulate run that measured no drive fails its round (left out of the ranking, its reason said), where it used
// to be ranked: no request, no storage I/O at all, storage I/O errors, or entries refused for room above 1 % of the
// write bytes (a drive too small for the workload).
TEST(DrivesSimulate, RunThatMeasuredNoDriveIsAProblem) {
    auto doc = [](double reqs, double read_gb, const nlohmann::json& cache, double written = 1e9) {
        return nlohmann::json{
            {"requests_completed", reqs},
            {"summary",
             {{"elapsed_time", 4.0},
              {"cache_stats", {{"tier_storage_kv_bytes_read_gb", read_gb}, {"total_write_bytes", written}}}}},
            {"kvio", {{"cache", cache}}}};
    };
    const nlohmann::json clean = {{"write_io_errors", 0}, {"failed_reads", 0}, {"capacity_refusals", 0}};
    EXPECT_EQ(sim_run_problem(parse_sim_results(doc(10, 0.5, clean), "r")), "");
    EXPECT_EQ(sim_run_problem(parse_sim_results(doc(0, 0.5, clean), "r")), "the simulation served no request");
    EXPECT_NE(sim_run_problem(parse_sim_results(doc(10, 0, clean), "r")).find("did no storage I/O"), std::string::npos);
    nlohmann::json io = {
        {"write_io_errors", 26}, {"failed_reads", 1}, {"first_write_error", "write failed: No space left on device"}};
    EXPECT_EQ(sim_run_problem(parse_sim_results(doc(10, 0.5, io), "r")),
              "27 storage I/O error(s) in the simulation (first: write failed: No space left on device)");
    // an older results file: failed_writes counts both kinds
    EXPECT_NE(sim_run_problem(parse_sim_results(doc(10, 0.5, {{"failed_writes", 3}}), "r")).find("3 storage I/O"),
              std::string::npos);
    // refusals: 1 % of the write bytes is the line (kvio mlperf-check's rule)
    nlohmann::json few = {{"capacity_refusals", 1}, {"capacity_refused_bytes", 1e7}};  // 0.99 % of 1.01e9
    EXPECT_EQ(sim_run_problem(parse_sim_results(doc(10, 0.5, few), "r")), "");
    nlohmann::json many = {{"capacity_refusals", 2}, {"capacity_refused_bytes", 2.5e8}};  // 20 %
    EXPECT_EQ(sim_run_problem(parse_sim_results(doc(10, 0.5, many), "r")),
              "2 entries (20.0 % of the write bytes) larger than the drive could hold, refused unwritten: the drive "
              "is too small for this workload");
}

// The job asks fio for a bandwidth log per job; the job's own log lines would send it elsewhere and are dropped.
TEST(DrivesJob, BandwidthLogAskedAndJobsOwnLogLinesDropped) {
    const std::string job = "[global]\nwrite_bw_log=/tmp/x\nper_job_logs=0\n[a]\nrw=write\nlog_avg_msec=1000\n";
    std::string t = job_for_target(job, "/dev/loop7", TargetField::Filename, Pacing::Closed, "/run/d/runs/a-closed-r1");
    EXPECT_NE(t.find("[global]\nfilename=/dev/loop7\nwrite_bw_log=/run/d/runs/a-closed-r1\nlog_avg_msec=" +
                     std::to_string(kBwLogMs) + "\n"),
              std::string::npos);
    EXPECT_EQ(t.find("/tmp/x"), std::string::npos);
    EXPECT_EQ(t.find("per_job_logs"), std::string::npos);
    EXPECT_EQ(t.find("log_avg_msec=1000"), std::string::npos);
    EXPECT_EQ(job_for_target(job, "/dev/loop7", TargetField::Filename, Pacing::Closed).find("write_bw_log=/run"),
              std::string::npos);
}

// A remote /dev path that names no device: fio is told in the leading section not to create it, and a job's own
// allow_file_create line (which could say 1) is dropped; without the flag nothing is added.
TEST(DrivesJob, RefuseCreateTellsFioNotToCreateTheTarget) {
    const std::string job = "[global]\nallow_file_create=1\n[a]\nrw=read\nsize=1m\n";
    const std::string t = job_for_target(job, "/dev/nvme9n1", TargetField::Filename, Pacing::Closed, "", true);
    EXPECT_NE(t.find("[global]\nfilename=/dev/nvme9n1\nallow_file_create=0\n"), std::string::npos) << t;
    EXPECT_EQ(t.find("allow_file_create=1"), std::string::npos) << t;
    const std::string plain = job_for_target(job, "/dev/nvme9n1", TargetField::Filename, Pacing::Closed);
    EXPECT_EQ(plain.find("allow_file_create=0"), std::string::npos) << plain;
    EXPECT_NE(plain.find("allow_file_create=1"), std::string::npos) << plain;
}

// Two jobs' logs (fio 3.33's five columns and a newer six), times since the epoch: each sample is the mean rate
// since that job's previous one (the first: over one window), its bytes spread over the 100 ms windows its span
// overlaps; KiB/s to MB/s; trim samples skipped; the bytes in equal the bytes out.
TEST(DrivesFio, BandwidthLogsSpreadOverWindowsFromTheOrigin) {
    const double origin = 1796466316000;
    // job 1 writes 1000 KiB/s over (0,100], then 2000 KiB/s over (100,300] (a window fio skipped); job 2, a later
    // stonewalled phase, reads 500 KiB/s over (250,350] and 700 over (350,450].
    const std::string j1 = "1796466316100, 1000, 1, 1048576, 0\n1796466316300, 2000, 1, 1048576, 0\n";
    const std::string j2 =
        "1796466316350, 500, 0, 4096, 0, 0\n1796466316400, 9, 2, 4096, 0, 0\n1796466316450, 700, 0, 4096, 0, 0\n";
    auto tl = parse_bw_logs({j1, j2}, 100, origin, "test");
    ASSERT_EQ(tl.size(), 5u);     // windows ending 100 .. 500 ms
    const double k = 1024 / 1e6;  // KiB/s -> MB/s
    EXPECT_DOUBLE_EQ(tl[0][0], 0.1);
    EXPECT_DOUBLE_EQ(tl[0][2], 1000 * k);
    EXPECT_DOUBLE_EQ(tl[1][2], 2000 * k);
    EXPECT_DOUBLE_EQ(tl[2][2], 2000 * k);     // the skipped window holds its share, not 0
    EXPECT_DOUBLE_EQ(tl[2][1], 500 * k / 2);  // (250,300] of the read's first window
    EXPECT_DOUBLE_EQ(tl[3][1], 500 * k / 2 + 700 * k / 2);
    EXPECT_DOUBLE_EQ(tl[4][0], 0.5);
    EXPECT_DOUBLE_EQ(tl[4][1], 700 * k / 2);
    double read_bytes = 0, write_bytes = 0;
    for (const auto& w : tl) read_bytes += w[1] * 1e6 * 0.1, write_bytes += w[2] * 1e6 * 0.1;
    EXPECT_NEAR(read_bytes, (500 + 700) * 1024 * 0.1, 1e-6);
    EXPECT_NEAR(write_bytes, (1000 * 0.1 + 2000 * 0.2) * 1024, 1e-6);
    EXPECT_TRUE(parse_bw_logs({""}, 100, origin, "test").empty());
    try {
        parse_bw_logs({"100, 5, 1\n100, x, 1\n"}, 100, 0, "f_bw.1.log");
        FAIL() << "a malformed line was accepted";
    } catch (const kvio::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("f_bw.1.log:2: field 'KiB/s': not a number", 0), 0u) << e.what();
    }
}

// A timeline holding more than fio moved in a direction is scaled down to it, the shape kept; a direction holding
// less (fio's unlogged end) is left as logged.
TEST(DrivesFio, BandwidthTimelineCappedAtTheBytesMoved) {
    // 100 ms windows: read 10 + 30 MB/s = 4 MB logged, write 5 + 5 MB/s = 1 MB logged.
    std::vector<std::vector<double>> tl = {{0.1, 10, 5}, {0.2, 30, 5}};
    const uint64_t moved[2] = {2000000, 1500000};  // read moved half of what was logged, write more
    auto f = cap_bw_timeline(tl, moved, 100);
    EXPECT_DOUBLE_EQ(f[0], 0.5);
    EXPECT_DOUBLE_EQ(f[1], 1.0);
    EXPECT_DOUBLE_EQ(tl[0][1], 5);
    EXPECT_DOUBLE_EQ(tl[1][1], 15);
    EXPECT_DOUBLE_EQ(tl[0][2], 5);
    EXPECT_DOUBLE_EQ(tl[1][0], 0.2);
    const uint64_t none[2] = {0, 0};  // a direction fio never moved: its windows are emptied, not divided by zero
    auto g = cap_bw_timeline(tl, none, 100);
    EXPECT_DOUBLE_EQ(g[0], 0.0);
    EXPECT_DOUBLE_EQ(tl[1][1], 0.0);
}

// The KV line: an object's bytes over each direction's bandwidth; loads/s and users from the read side; a direction
// the workload did not move has no figure (null in JSON, "-" in the text).
TEST(DrivesKv, LineFromTheMeasuredMix) {
    KvObject obj{"m", 64ull << 20, 4};
    KvLine l = kv_line(obj, 512e6, 128e6);
    EXPECT_DOUBLE_EQ(l.load_ms, (64 << 20) / 512e6 * 1000);
    EXPECT_DOUBLE_EQ(l.store_ms, (64 << 20) / 128e6 * 1000);
    EXPECT_DOUBLE_EQ(l.loads_per_s, 512e6 / (64 << 20));
    EXPECT_DOUBLE_EQ(l.users, l.loads_per_s / 4);
    EXPECT_EQ(kv_line_text("a", obj, l),
              "KV a: store 524.3 ms, load 131.1 ms per 64.0 MiB object; 7.63 loads/s = 1.91 "
              "users at 4 object/s each");
    // a slow drive's figure below one is not rounded to 1 (or 0)
    EXPECT_NE(kv_line_text("a", obj, kv_line(obj, 43.3e6, 1e6)).find("; 0.645 loads/s = 0.161 users"),
              std::string::npos)
        << kv_line_text("a", obj, kv_line(obj, 43.3e6, 1e6));
    KvLine w = kv_line(obj, 0, 128e6);  // a write-only job
    EXPECT_TRUE(kv_line_json(w)["load_ms"].is_null());
    EXPECT_TRUE(kv_line_json(w)["users"].is_null());
    EXPECT_NE(kv_line_text("a", obj, w).find("load -"), std::string::npos);
    EXPECT_NE(kv_line_text("a", obj, w).find("no reads in the workload"), std::string::npos);
}

// job_below_ceiling: reported for a direction below half of every ceiling probed for it at a mean device depth
// below 8; not at or above either threshold, not for the open loop, not without a trace or a ceiling.
TEST(DrivesDiagnosis, JobBelowCeilingThresholds) {
    Target t;
    t.disk = "nvme0n1";
    t.ceiling = {{"seq_read_mb_s", 1000.0}, {"seq_write_mb_s", 800.0}, {"rand_read_4k_iops", 100000.0}};
    RunResult r;
    r.mode = "closed";
    r.dev.present = true;
    r.dev.qd_read_mean = 1.0, r.dev.qd_write_mean = 1.0;
    PhaseFigures p;
    p.read.mb_s = 120, p.read.iops = 30000;  // 12 % of the bandwidth, 30 % of the IOPS ceiling
    p.write.mb_s = 500;                      // 62.5 % of the write ceiling: no finding
    r.fio.phases = {p};
    auto f = headroom_findings(t, r);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].id, "job_below_ceiling");
    EXPECT_EQ(f[0].op, "read");
    EXPECT_EQ(f[0].device, "nvme0n1");
    EXPECT_DOUBLE_EQ(f[0].figures["share_pct"].get<double>(), 30.0);  // the closer ceiling
    EXPECT_NE(f[0].summary.find("12 % of this drive's bandwidth ceiling"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].summary.find("30 % of its IOPS ceiling"), std::string::npos) << f[0].summary;
    r.fio.phases[0].read.iops = 50000;  // half the IOPS ceiling: not below it
    EXPECT_TRUE(headroom_findings(t, r).empty());
    r.fio.phases[0].read.iops = 30000;
    r.dev.qd_read_mean = 8;  // deep enough: the drive, not the job, sets the figure
    EXPECT_TRUE(headroom_findings(t, r).empty());
    r.dev.qd_read_mean = 0;  // the tracer sampled no read's depth (kQdSample): unknown, not shallow
    EXPECT_TRUE(headroom_findings(t, r).empty());
    r.dev.qd_read_mean = 1;
    r.mode = "trace";
    EXPECT_TRUE(headroom_findings(t, r).empty());
    r.mode = "closed";
    r.dev.present = false;
    EXPECT_TRUE(headroom_findings(t, r).empty());
    r.dev.present = true;
    t.ceiling = nullptr;  // --probe-seconds 0
    EXPECT_TRUE(headroom_findings(t, r).empty());
    t.ceiling = {{"error", "probe read: fio exited 1"}};
    EXPECT_TRUE(headroom_findings(t, r).empty());
}

// What a failed child said: fio's error lines (not its job banner or the option list it prints after a bad value),
// at most the asked number; the last line when none names an error; nothing for a missing log.
TEST(DrivesProcess, ErrorLinesOfALog) {
    char path[] = "/tmp/kvio-unit-drives-log-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "w: (g=0): rw=write, bs=(R) 1024KiB-1024KiB\nfio: failed parsing rw=rread\n"
                           "        valid values: read       Sequential read\nfio: job global dropped\n\n";
    EXPECT_EQ(error_lines_of(path), "fio: failed parsing rw=rread; fio: job global dropped");
    EXPECT_EQ(error_lines_of(path, 1), "fio: failed parsing rw=rread");
    std::ofstream(path) << "Starting 1 process\nJobs: 1 (f=1)\n";
    EXPECT_EQ(error_lines_of(path), "Jobs: 1 (f=1)");
    std::ofstream(path) << "kvio: Unknown model 'nope'. Available models: tiny-1b\n";
    EXPECT_EQ(error_lines_of(path), "kvio: Unknown model 'nope'. Available models: tiny-1b");
    std::remove(path);
    EXPECT_EQ(error_lines_of(path), "");
}

// A target no verdict compares is named with why: one that failed after a measured round, one with no round; the
// ranked ones are not listed. The same lines in drives.json and on the console.
TEST(DrivesSummary, FailedTargetsNamedAsLeftOutOfTheVerdicts) {
    auto target = [](const std::string& spec, bool ok_round, const std::string& failed) {
        Target t;
        t.spec = parse_drive_spec(spec);
        RunResult r;
        r.mode = "closed", r.ok = ok_round;
        r.fio.total.read.mb_s = 100;
        t.runs.push_back(r);
        t.failed = failed;
        return t;
    };
    std::vector<Target> ts = {target("a=/dev/loop8", true, ""), target("b=127.0.0.3:/dev/loop9", true, "round 2 gone"),
                              target("c=/dev/loop7", false, "")};
    auto l = left_out_of_verdicts(ts, "closed", 3);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[0].first, "b");
    EXPECT_EQ(l[0].second, "b left out of the ranking: failed with 1 of 3 rounds measured (round 2 gone)");
    EXPECT_EQ(l[1].second, "c left out of the ranking: 0 of 3 rounds measured");
    RunContext ctx;
    ctx.rounds = 3, ctx.modes = {"closed"};
    nlohmann::json j = drives_json(ts, ctx);
    ASSERT_EQ(j["left_out_of_verdicts"]["closed"].size(), 2u);
    EXPECT_EQ(j["left_out_of_verdicts"]["closed"][0]["text"], l[0].second);
    std::ostringstream out;
    print_table(out, ts, ctx);
    EXPECT_NE(out.str().find("verdict: " + l[0].second), std::string::npos) << out.str();
    EXPECT_EQ(out.str().find("a left out"), std::string::npos) << out.str();
}

// drives.html's charts: a drive keeps one colour in every chart (its place among the targets), also when a drive
// before it has no line in a chart; a drive with measured rounds but no bandwidth-log sample is named under the
// throughput chart instead of silently missing.
TEST(DrivesHtml, OneColourPerDriveAndDrivesWithoutSamplesNamed) {
    auto target = [](const std::string& spec, bool timeline) {
        Target t;
        t.spec = parse_drive_spec(spec);
        RunResult r;
        r.mode = "closed", r.ok = true;
        r.fio.total.read.mb_s = 100;
        r.fio.total.read.clat_cdf = {{50, 1000}, {99, 2000}};
        t.info = nlohmann::json::object();
        if (timeline) r.fio.bw_timeline = {{0.1, 40, 0}, {0.2, 41, 0}};
        t.runs.push_back(r);
        return t;
    };
    RunContext ctx;
    ctx.rounds = 1, ctx.modes = {"closed"};
    const std::string html =
        drives_html(drives_json({target("fast=/dev/loop8", false), target("slow=/dev/loop9", true)}, ctx));
    const size_t tl = html.find("MB/s over time");
    ASSERT_NE(tl, std::string::npos);
    const size_t end = html.find("</svg>", tl);
    const std::string chart = html.substr(tl, end - tl);
    EXPECT_NE(chart.find("no sample: fast"), std::string::npos) << chart;
    // slow is the second target: the second colour, as in the CDF chart, though it is the chart's only line
    EXPECT_NE(chart.find("stroke='#d62728'"), std::string::npos) << chart;
    EXPECT_EQ(chart.find("stroke='#1f77b4'"), std::string::npos) << chart;
    const size_t cdf = html.find("completion latency CDF");
    ASSERT_NE(cdf, std::string::npos);
    const std::string cdf_chart = html.substr(cdf, html.find("</svg>", cdf) - cdf);
    EXPECT_NE(cdf_chart.find("stroke='#1f77b4'"), std::string::npos) << cdf_chart;
    EXPECT_NE(cdf_chart.find("stroke='#d62728'"), std::string::npos) << cdf_chart;
}

// The open loop's table shows its verdict figure (the worse direction's completion p99 of each round, median over
// rounds, µs) as its first column: a verdict that ranks by it can be checked against the table.
/// Drive "x" with three open-loop rounds whose read / write completion p99 are 8000 / 1000, 1000 / 3000 and 2000 / 2500
/// µs (ns in fio's figures), 10 MB/s of reads each: the worse direction per round is 8000, 3000, 2500.
static Target open_loop_target() {
    Target t;
    t.spec = parse_drive_spec("x=/dev/loop9");
    t.info = nlohmann::json::object();
    for (auto [rp, wp] : {std::pair{8000e3, 1000e3}, std::pair{1000e3, 3000e3}, std::pair{2000e3, 2500e3}}) {
        RunResult r;
        r.mode = "trace", r.ok = true;
        r.fio.total.read.clat_p99 = rp, r.fio.total.write.clat_p99 = wp;
        r.fio.total.read.mb_s = 10;
        t.runs.push_back(r);
    }
    return t;
}

TEST(DrivesSummary, OpenLoopTableShowsItsVerdictFigure) {
    const Target t = open_loop_target();
    RunContext ctx;
    ctx.rounds = 3, ctx.modes = {"trace"};
    std::ostringstream out;
    print_table(out, {t}, ctx);
    // worst per round 8000, 3000, 2500 µs: median 3000 [2500-8000]; the per-direction medians are 2000 and 2500
    EXPECT_NE(out.str().find("worst_p99us"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("x            3000.0 [2500.0-8000.0]"), std::string::npos) << out.str();
}

// drives.html's open-loop table carries the same verdict figure as the console's (the worse direction's completion
// p99 per round, median over rounds, µs) as its first column, so its verdict can be checked against the page.
TEST(DrivesHtml, OpenLoopTableShowsItsVerdictFigure) {
    const Target t = open_loop_target();
    RunContext ctx;
    ctx.rounds = 3, ctx.modes = {"trace"};
    const std::string html = drives_html(drives_json({t}, ctx));
    const size_t h2 = html.find("open loop at the job's rates");
    ASSERT_NE(h2, std::string::npos);
    const std::string table = html.substr(h2, html.find("</table>", h2) - h2);
    // the verdict column heads the table, and its cell is the median of the worst per round: 8000, 3000, 2500 µs
    const size_t head = table.find("<th>worst clat p99 (µs, verdict)</th>");
    ASSERT_NE(head, std::string::npos) << table;
    EXPECT_LT(head, table.find("<th>MB/s</th>")) << table;
    EXPECT_NE(table.find("<td>x</td><td class=best>3000 ★</td>"), std::string::npos) << table;
}

// The ceiling probe's console line is a sentence per drive, not the probe's JSON: sequential read and write MB/s and
// 4 KiB random read IOPS, with what the probe covered; a failed probe says so with its error.
TEST(DrivesSummary, CeilingProbeLineIsHuman) {
    Target t;
    t.spec = parse_drive_spec("nvme-a=/dev/loop9");
    t.ceiling = {{"seq_read_mb_s", 1234.56}, {"seq_write_mb_s", 987.61}, {"rand_read_4k_iops", 123456.7},
                 {"seconds", 0.5},           {"bytes", 64 << 20},        {"offset", 1 << 20}};
    EXPECT_EQ(ceiling_line(t),
              "probe nvme-a: sequential read 1234.6 MB/s, write 987.6 MB/s; 4 KiB random read 123457 IOPS "
              "(3 x 0.5 s over 64 MiB)");
    t.ceiling = {{"error", "probe read: fio exit status 1: fio: No space left on device (see x.log)"}};
    EXPECT_EQ(ceiling_line(t),
              "probe nvme-a failed: probe read: fio exit status 1: fio: No space left on device (see x.log)");
}

// drives.html's fio table has the console's QD and ceil% columns; ★ never goes to a drive left out of the ranking
// (b failed, with a faster partial round than a); a stopped run says which signal stopped it.
TEST(DrivesHtml, QdAndCeilingColumnsAndNoStarForALeftOutDrive) {
    auto target = [](const std::string& spec, double mb_s, const std::string& failed) {
        Target t;
        t.spec = parse_drive_spec(spec);
        t.info = nlohmann::json::object();
        t.ceiling = {{"seq_read_mb_s", 400.0}};
        RunResult r;
        r.mode = "closed", r.ok = true;
        r.fio.total.read.mb_s = mb_s;
        PhaseFigures ph;
        ph.read.mb_s = mb_s;
        r.fio.phases.push_back(ph);
        r.dev.present = true, r.dev.qd_read_mean = 3.5;
        t.runs.push_back(r);
        t.failed = failed;
        return t;
    };
    RunContext ctx;
    ctx.rounds = 2, ctx.modes = {"closed"}, ctx.stopped_by_signal = 2;
    const std::string html =
        drives_html(drives_json({target("a=/dev/loop8", 100, ""), target("b=/dev/loop9", 200, "round 2: gone")}, ctx));
    const size_t h2 = html.find("closed loop (capacity)");
    ASSERT_NE(h2, std::string::npos) << html;
    const std::string table = html.substr(h2, html.find("</table>", h2) - h2);
    EXPECT_NE(table.find("<th>QD</th><th>ceil%</th>"), std::string::npos) << table;
    const std::string row_a = table.substr(table.find("<td>a</td>"), table.find("</tr>", table.find("<td>a</td>")));
    const size_t b_at = table.find("<td>b <b class=bad>failed</b></td>");
    ASSERT_NE(b_at, std::string::npos) << table;
    const std::string row_b = table.substr(b_at, table.find("</tr>", b_at) - b_at);
    EXPECT_NE(row_a.find("<td class=best>100.0 ★</td>"), std::string::npos) << row_a;
    EXPECT_NE(row_a.find("<td>3.5</td><td>25</td>"), std::string::npos) << row_a;  // 100 of 400 MB/s: 25 %
    EXPECT_NE(row_b.find("<td>200.0</td>"), std::string::npos) << row_b;
    EXPECT_EQ(row_b.find("★"), std::string::npos) << row_b;
    EXPECT_NE(html.find("Stopped by signal 2 (Interrupt)"), std::string::npos);
}
