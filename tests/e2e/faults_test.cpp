// kvio on a disk with bad sectors (tests/e2e/fault_disk.h: a loop device over the tests' fault-injecting FUSE
// filesystem): read errors, write errors and stalls are counted and reported, nothing hangs past the stall, nothing
// crashes, and every result file stays valid JSON.
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/fault_disk.h"
#include "tests/e2e/helpers.h"

using json = nlohmann::json;
using namespace kvio::test;

namespace {

constexpr uint64_t MiB = 1 << 20;

/// The block commands of `dev` in a kvio.events/1 file.
std::vector<json> cmds_on(const std::string& events, const std::string& dev) {
    std::vector<json> out;
    for (const auto& e : read_jsonl(events))
        if (e.value("type", "") == "cmd" && e.value("dev", "") == dev) out.push_back(e);
    return out;
}

bool overlaps(const json& c, uint64_t off, uint64_t len) {
    const uint64_t lo = c["sector"].get<uint64_t>() * 512, hi = lo + c["bytes"].get<uint64_t>();
    return lo < off + len && off < hi;
}

/// Starts `argv` (argv[0] a path) with stdout and stderr to `log`; returns its pid.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        FILE* f = std::fopen(log.c_str(), "w");
        if (f) dup2(fileno(f), 1), dup2(fileno(f), 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    return pid;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// A read error and a write error reach the tracer as the failed commands' `error` field, on exactly the commands
// over the bad ranges; the summary (trace.json's failed counts) and the events file stay valid.
TEST(Faults, TraceReportsReadAndWriteErrorsOnTheFailedCommands) {
    FaultDisk disk(64 * MiB);
    TempDir d;
    ASSERT_TRUE(disk.rule("eio write " + std::to_string(4 * MiB) + " 65536"));
    ASSERT_TRUE(disk.rule("eio read " + std::to_string(1 * MiB) + " 65536"));
    // dd stops at its first failed transfer: 64 good writes then the bad one; 16 good reads then the bad one.
    auto r = run(kvio_bin() + " trace -q -d " + disk.name + " --events " + d.file("e.jsonl") + " --json " +
                 d.file("t.json") + " -- sh -c 'dd if=/dev/zero of=" + disk.path +
                 " bs=64k count=128 oflag=direct status=none; dd if=" + disk.path +
                 " of=/dev/null bs=64k count=32 iflag=direct status=none; true'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(json::accept(slurp(d.file("t.json"))));
    std::vector<json> bad_w, bad_r;
    size_t writes = 0, reads = 0;
    for (const auto& c : cmds_on(d.file("e.jsonl"), disk.majmin)) {
        const bool failed = c.value("error", 0) != 0;
        if (c["op"] == "write") {
            ++writes;
            if (failed) bad_w.push_back(c);
            EXPECT_EQ(failed, overlaps(c, 4 * MiB, 65536)) << c.dump();
        } else if (c["op"] == "read") {
            ++reads;
            if (failed) bad_r.push_back(c);
            EXPECT_EQ(failed, overlaps(c, 1 * MiB, 65536)) << c.dump();
        }
    }
    EXPECT_EQ(writes, 65u);
    EXPECT_EQ(reads, 17u);
    ASSERT_EQ(bad_w.size(), 1u);
    ASSERT_EQ(bad_r.size(), 1u);
    EXPECT_EQ(bad_w[0]["sector"], 4 * MiB / 512);
    EXPECT_EQ(bad_r[0]["sector"], 1 * MiB / 512);
    const auto n = disk.counters();
    EXPECT_EQ(n.at("eio_writes"), 1u);
    EXPECT_EQ(n.at("eio_reads"), 1u);
    // The summary counts them too: per device and direction, and in all.
    const json t = json::parse(slurp(d.file("t.json")));
    EXPECT_EQ(t["failed_cmds"], 2) << t.dump().substr(0, 600);
    for (const auto& dv : t["devices"]) {
        if (dv["dev"] != disk.majmin) continue;
        EXPECT_EQ(dv["failed"]["write"]["cmds"], 1) << dv["failed"].dump();
        EXPECT_EQ(dv["failed"]["write"]["bytes"], bad_w[0]["bytes"]) << dv["failed"].dump();
        EXPECT_EQ(dv["failed"]["read"]["cmds"], 1) << dv["failed"].dump();
        EXPECT_EQ(dv["failed"]["other"]["cmds"], 0) << dv["failed"].dump();
    }
}

// A stalled command holds its caller for the stall and no longer: the trace shows the stall as the command's D2C
// and ends with the command.
TEST(Faults, TraceOfAStalledCommandEndsAfterTheStall) {
    FaultDisk disk(64 * MiB);
    TempDir d;
    ASSERT_TRUE(disk.rule("stall read " + std::to_string(2 * MiB) + " 4096 1500"));
    const auto t0 = std::chrono::steady_clock::now();
    auto r =
        run(kvio_bin() + " trace -q -d " + disk.name + " --events " + d.file("e.jsonl") + " --json " +
            d.file("t.json") + " -- dd if=" + disk.path + " of=/dev/null bs=64k count=48 iflag=direct status=none");
    const double took = seconds_since(t0);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(json::accept(slurp(d.file("t.json"))));
    EXPECT_GE(took, 1.5);
    EXPECT_LT(took, 1.5 + 10) << "the trace outlived the stall by more than its start-up and teardown";
    uint64_t stalled = 0, reads = 0;
    for (const auto& c : cmds_on(d.file("e.jsonl"), disk.majmin)) {
        if (c["op"] != "read") continue;
        ++reads;
        EXPECT_EQ(c.value("error", 0), 0) << c.dump();
        if (overlaps(c, 2 * MiB, 4096)) {
            ++stalled;
            EXPECT_GE(c["d2c_ns"].get<uint64_t>(), 1'500'000'000u) << c.dump();
        } else {
            EXPECT_LT(c["d2c_ns"].get<uint64_t>(), 1'000'000'000u) << c.dump();
        }
    }
    EXPECT_EQ(reads, 48u);
    EXPECT_EQ(stalled, 1u);
    EXPECT_EQ(disk.counters().at("stalls"), 1u);
}

// Every read of the storage tier fails (after the filesystem was made and mounted): simulate counts the failed
// reads with the first error, warns, exits 0 at its duration and writes valid results.
TEST(Faults, SimulateCountsFailedReadsWithTheFirstError) {
    FaultDisk disk(256 * MiB);
    Ext4OnFaultDisk fs4(disk);
    ASSERT_TRUE(fs4.ok);
    TempDir d;
    // The cache directory first: made under the rule, its mkdir fails ("--cache-dir DIR: Input/output error").
    std::filesystem::create_directory(fs4.dir + "/cache");
    run("sync");
    ASSERT_TRUE(disk.rule("eio read 0 " + std::to_string(256 * MiB)));
    auto r = run(kvio_bin() +
                 " simulate --model tiny-1b --num-users 4 --duration 3 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                 "--generation-mode none --seed 42 --progress-interval 0 --storage-io direct --quiet --cache-dir " +
                 fs4.dir + "/cache --output " + d.file("r.json"));
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string text = slurp(d.file("r.json"));
    ASSERT_TRUE(json::accept(text)) << text.substr(0, 300);
    const json k = json::parse(text)["kvio"];
    EXPECT_GE(k["cache"]["failed_reads"].get<uint64_t>(), 1u) << k["cache"].dump();
    EXPECT_NE(k["cache"].value("first_error", "").find("Input/output error"), std::string::npos) << k["cache"].dump();
    // Where: the tier, the entry and the failed transfer's place, so the bad range can be found.
    const std::string first = k["cache"].value("first_read_error", "");
    EXPECT_EQ(first.rfind("storage read of entry '", 0), 0u) << first;
    EXPECT_NE(first.find(" bytes at byte "), std::string::npos) << first;
    EXPECT_NE(k["warnings"].dump().find("Input/output error"), std::string::npos) << k["warnings"].dump();
    EXPECT_GE(disk.counters().at("eio_reads"), k["cache"]["failed_reads"].get<uint64_t>());
}

// For its first 2 s the disk holds every request 1 s: simulate ends at its duration plus what the stall cost, not
// later, and its results are whole.
TEST(Faults, SimulateOnAStallingDiskEndsAfterItsDuration) {
    FaultDisk disk(256 * MiB);
    Ext4OnFaultDisk fs4(disk);
    ASSERT_TRUE(fs4.ok);
    TempDir d;
    ASSERT_TRUE(disk.rule("stall rw 0 " + std::to_string(256 * MiB) + " 1000"));
    std::thread lift([&] {
        std::this_thread::sleep_for(std::chrono::seconds(2));
        disk.rule("clear");
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run(kvio_bin() +
                 " simulate --model tiny-1b --num-users 4 --duration 3 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                 "--generation-mode none --seed 42 --progress-interval 0 --storage-io direct --quiet --cache-dir " +
                 fs4.dir + "/cache --output " + d.file("r.json"));
    const double took = seconds_since(t0);
    lift.join();
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string text = slurp(d.file("r.json"));
    ASSERT_TRUE(json::accept(text)) << text.substr(0, 300);
    EXPECT_GE(disk.counters().at("stalls"), 1u);
    std::cerr << "[ measured ] simulate --duration 3, the disk stalling every request 1 s for 2 s: " << took << " s\n";
    EXPECT_GE(took, 3.0);
    EXPECT_LT(took, 3 + 2 + 1 + 10) << "simulate hung past its duration and the stalls (10 s for start and teardown)";
}

// The disk holds every request 1 s for the whole run: the stop cuts each entry op between its transfers (O_DIRECT,
// posix and io_uring engines), so simulate ends about one stalled transfer (plus the ext4 metadata I/O of its
// start and end) after its duration with whole results, the cut ops counted. Before, the ops ran to their end at
// the disk's pace: a 3 s run took 495 s (entries of ~310 transfers). timeout(1) keeps a regression from taking
// that long.
TEST(Faults, SimulateOnADiskStallingEveryRequestEndsSoonAfterItsDuration) {
    for (const char* io : {"direct", "io_uring"}) {
        FaultDisk disk(256 * MiB);
        Ext4OnFaultDisk fs4(disk);
        ASSERT_TRUE(fs4.ok);
        TempDir d;
        std::filesystem::create_directory(fs4.dir + "/cache");
        run("sync");
        ASSERT_TRUE(disk.rule("stall rw 0 " + std::to_string(256 * MiB) + " 1000"));
        const auto t0 = std::chrono::steady_clock::now();
        auto r = run("timeout -s KILL 120 " + kvio_bin() +
                     " simulate --model tiny-1b --num-users 4 --duration 3 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                     "--generation-mode none --seed 42 --progress-interval 0 --quiet --storage-io " +
                     io + " --cache-dir " + fs4.dir + "/cache --output " + d.file("r.json"));
        const double took = seconds_since(t0);
        const auto n = disk.counters();
        disk.rule("clear");
        std::cerr << "[ measured ] " << io << ": simulate --duration 3, every request stalled 1 s: " << took << " s, "
                  << n.at("stalls") << " stalls\n";
        EXPECT_EQ(r.status, 0) << io << ": " << r.err;
        const std::string text = slurp(d.file("r.json"));
        ASSERT_TRUE(json::accept(text)) << io << ": " << text.substr(0, 300);
        const json k = json::parse(text)["kvio"];
        EXPECT_GE(n.at("stalls"), 1u) << io;
        EXPECT_GE(k["cache"]["cut_ops"].get<uint64_t>(), 1u) << io << ": " << k["cache"].dump().substr(0, 400);
        // What the stop waits for is the transfers in flight: 1 per user with the posix engine; with io_uring up to
        // --storage-qd (8) per user, which the loop device serves one after another (measured: direct 6.3 s, drain
        // under 4 s; io_uring 15.3 s, drain 12.2 s, at load ~15).
        const double in_flight_s = std::string(io) == "direct" ? 4 * 1.0 : 4 * 8 * 1.0;
        EXPECT_GE(took, 3.0) << io;
        EXPECT_LT(took, 3 + in_flight_s + 10) << io << ": simulate ran on past its duration at the stalled disk's pace";
        EXPECT_LT(k["stop"]["drain_s"].get<double>(), in_flight_s + 1) << io << ": " << k["stop"].dump();
    }
}

// The cache directory cannot be made (a read-only filesystem: EROFS; a disk failing its metadata reads: EIO):
// simulate stops before it runs with one line naming the path and the mkdir's errno. Before, the mkdir's error was
// dropped and the line named the opendir after it ("No such file or directory").
TEST(Faults, SimulateNamesTheCacheDirAndErrnoWhenItsMkdirFails) {
    TempDir d;
    std::filesystem::create_directory(d.file("ro"));
    ASSERT_EQ(::mount("tmpfs", d.file("ro").c_str(), "tmpfs", MS_RDONLY, "size=1m"), 0) << std::strerror(errno);
    const std::string cache = d.file("ro") + "/a/cache";
    auto r = run(kvio_bin() +
                 " simulate --model tiny-1b --num-users 1 --duration 1 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                 "--generation-mode none --seed 42 --progress-interval 0 --quiet --cache-dir " +
                 cache + " --output " + d.file("r.json"));
    ::umount2(d.file("ro").c_str(), MNT_DETACH);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("cannot create --cache-dir " + cache + ": Read-only file system"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(d.file("r.json")));
}

// gen on a disk with a bad sector: the store over it fails (and so does the load of that object, which finds no
// valid stamp); both are counted, the first named with the transfer's offset and the errno, the exit status is 1,
// and --semantic (every op, the failed ones with their error) and --record stay valid.
TEST(Faults, GenCountsFailedOpsAndKeepsItsOutputsValid) {
    FaultDisk disk(64 * MiB);
    TempDir d;
    ASSERT_TRUE(disk.rule("eio write " + std::to_string(8 * MiB) + " 4096"));
    auto r = run(kvio_bin() + " gen --model tiny-1b --num-chunks 4 --target " + disk.path + " --semantic " +
                 d.file("s.jsonl") + " --record " + d.file("r.json"));
    EXPECT_EQ(r.status, 1) << r.err;
    const std::string first = "kvio: gen: 2 ops failed; first: store of object 1: transfer at offset ";
    const auto at = r.err.find(first);
    ASSERT_NE(at, std::string::npos) << r.err;
    const uint64_t off = std::stoull(r.err.substr(at + first.size()));
    EXPECT_LE(off, 8 * MiB) << r.err;
    EXPECT_GT(off + 512 * 1024, 8 * MiB) << r.err;  // the failed transfer (at most the 512 KiB cap) covers the sector
    EXPECT_NE(r.err.find("failed: Input/output error"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("ERRORS 1"), std::string::npos) << r.out;
    size_t ops = 0, failed = 0;
    for (const auto& rec : read_jsonl(d.file("s.jsonl"))) {  // throws on a line that does not parse
        if (!rec.contains("op")) continue;                   // the meta record
        ++ops;
        failed += rec.contains("error");
    }
    EXPECT_EQ(ops, 8u);
    EXPECT_EQ(failed, 2u);
    EXPECT_TRUE(json::accept(slurp(d.file("r.json"))));
    EXPECT_GE(disk.counters().at("eio_writes"), 1u);
}

// replay on a disk with bad sectors: a --record replay counts its failed load, an --events replay its failed read
// and write commands, each naming the first; exit status 1, no hang.
TEST(Faults, ReplayCountsFailedOpsAndCommands) {
    FaultDisk disk(64 * MiB);
    TempDir d;
    auto r =
        run(kvio_bin() + " gen --model tiny-1b --num-chunks 4 --target " + disk.path + " --record " + d.file("r.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_TRUE(disk.rule("eio read " + std::to_string(20 * MiB) + " 4096"));
    r = run(kvio_bin() + " replay --record " + d.file("r.json") + " --target " + disk.path + " --force --semantic " +
            d.file("s.jsonl"));
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("kvio: replay: 1 ops failed; first: load of object "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("failed: Input/output error"), std::string::npos) << r.err;
    for (const auto& rec : read_jsonl(d.file("s.jsonl"))) EXPECT_TRUE(rec.is_object());
    // 32 writes then 32 reads of 64 KiB from sector 16384; the 6th write and the 10th read hit bad sectors.
    ASSERT_TRUE(disk.rule("clear"));
    const uint64_t base = 16384 * 512;
    ASSERT_TRUE(disk.rule("eio write " + std::to_string(base + 5 * 65536) + " 4096"));
    ASSERT_TRUE(disk.rule("eio read " + std::to_string(base + 9 * 65536) + " 4096"));
    {
        std::ofstream f(d.file("ev.jsonl"));
        for (int i = 0; i < 64; ++i)
            f << json{{"type", "cmd"},
                      {"src", "block"},
                      {"dev", "259:99"},
                      {"disk", "x"},
                      {"op", i < 32 ? "write" : "read"},
                      {"bytes", 65536},
                      {"sector", 16384 + (i % 32) * 128},
                      {"ts_issue", 1000000 + i * 100000}}
                     .dump()
              << "\n";
    }
    r = run(kvio_bin() + " replay --events " + d.file("ev.jsonl") + " --target " + disk.path + " --force");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.out.find("replayed 64 commands: 31 reads (2031616 bytes), 31 writes (2031616 bytes), 2 FAILED"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("kvio: replay: 2 commands failed; first: write of 65536 bytes at " +
                         std::to_string(base + 5 * 65536) + " on " + disk.path + ": Input/output error"),
              std::string::npos)
        << r.err;
}

// The disk flips a bit of every byte it returns: with --verify-reads the first wrong byte fails the read, naming
// the entry and offset.
TEST(Faults, VerifyReadsReportsABitFlipWithEntryAndOffset) {
    CacheOnFaultDisk c4(256 * MiB);
    ASSERT_TRUE(c4.ok);
    TempDir d;
    ASSERT_TRUE(c4.disk.rule("flip 0 " + std::to_string(256 * MiB)));
    const std::string sim = kvio_bin() +
                            " simulate --model tiny-1b --num-users 2 --duration 2 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                            "--generation-mode none --seed 42 --progress-interval 0 --quiet --cache-dir " +
                            c4.cache + " --output ";
    auto r = run(sim + d.file("checked.json") + " --verify-reads");
    // Data that came back wrong fails the run, after the results are written.
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("simulate: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" reads returned other bytes than were written; first: payload mismatch in entry "),
              std::string::npos)
        << r.err;
    const json k = json::parse(slurp(d.file("checked.json")))["kvio"];
    const json& c = k["cache"];
    EXPECT_GE(c["failed_reads"].get<uint64_t>(), 1u) << c.dump();
    EXPECT_EQ(c["corrupted_reads"], c["failed_reads"]) << "every failed read here is a flipped one: " << c.dump();
    for (const char* key : {"first_error", "first_read_error", "first_corruption"}) {
        const std::string e = c.value(key, "");
        EXPECT_EQ(e.rfind("payload mismatch in entry ", 0), 0u) << key << ": " << e;
        EXPECT_NE(e.find(" at payload byte 0 (file byte "), std::string::npos) << key << ": " << e;
    }
    // Writes fail here too (an entry larger than the 256 MiB disk): their first error is theirs, not a read's.
    EXPECT_EQ(c.value("first_write_error", "").find("payload mismatch"), std::string::npos) << c.dump();
    EXPECT_NE(k["warnings"].dump().find("reads returned other bytes than were written (--verify-reads)"),
              std::string::npos)
        << k["warnings"].dump();
    EXPECT_GE(c4.disk.counters().at("flipped_bytes"), 1u);
}

// Writes that fail (a filesystem too small for --storage-capacity-gb) and reads that come back flipped in one run:
// each kind names its own first error (a read's mismatch was shown as the failed writes' first error).
TEST(Faults, SimulateNamesTheFirstErrorOfEachKind) {
    CacheOnFaultDisk c4(48 * MiB);
    ASSERT_TRUE(c4.ok);
    TempDir d;
    ASSERT_TRUE(c4.disk.rule("flip 0 " + std::to_string(48 * MiB)));
    auto r = run(kvio_bin() +
                 " simulate --model tiny-1b --num-users 4 --duration 4 --gpu-mem-gb 0 --cpu-mem-gb 0 "
                 "--storage-capacity-gb 1 --generation-mode none --seed 42 --progress-interval 0 --quiet "
                 "--verify-reads --cache-dir " +
                 c4.cache + " --output " + d.file("r.json"));
    EXPECT_EQ(r.status, 1) << r.err;
    const json c = json::parse(slurp(d.file("r.json")))["kvio"]["cache"];
    ASSERT_GE(c["failed_writes"].get<uint64_t>(), 1u) << c.dump();
    ASSERT_GE(c.value("corrupted_reads", uint64_t(0)), 1u) << c.dump();
    EXPECT_NE(c.value("first_write_error", "").find("No space left on device"), std::string::npos) << c.dump();
    EXPECT_EQ(c.value("first_corruption", "").rfind("payload mismatch in entry ", 0), 0u) << c.dump();
    EXPECT_EQ(c.value("first_read_error", "").rfind("payload mismatch in entry ", 0), 0u) << c.dump();
}

// A healthy disk: --verify-reads reports what it checked (every payload byte the storage tier read) and the CPU time
// the check took, the figure its cost is judged by (bench stage `verify`); without the flag there is no such section.
// The run ends after 4 completed requests (each one's decode reads its entry from storage), not after a time: 2 s
// beside the other e2e shard once read nothing from storage (2026-12-07 CI).
TEST(Faults, VerifyReadsCountsTheBytesItCheckedAndItsCpuTime) {
    TempDir d;
    const std::string sim = kvio_bin() +
                            " simulate --model tiny-1b --num-users 2 --duration 120 --max-requests 4 --gpu-mem-gb 0 "
                            "--cpu-mem-gb 0 "
                            "--generation-mode none --seed 42 --progress-interval 0 --quiet --cache-dir " +
                            d.file("cache") + " --output ";
    auto r = run(sim + d.file("checked.json") + " --verify-reads");
    ASSERT_EQ(r.status, 0) << r.err;
    const json c = json::parse(slurp(d.file("checked.json")))["kvio"]["cache"];
    uint64_t storage_read = 0;
    for (const auto& t : c["tiers"])
        if (t["tier"] == "storage") storage_read = t["bytes_read"];
    ASSERT_GT(storage_read, 0u) << c.dump();
    EXPECT_EQ(c["failed_reads"], 0u);
    const json& v = c["verify_reads"];
    EXPECT_EQ(v["checked_bytes"].get<uint64_t>(), storage_read) << v.dump();
    EXPECT_GT(v["cpu_s"].get<double>(), 0.0) << v.dump();
    EXPECT_GT(v["checked_gb_per_cpu_s"].get<double>(), 0.0) << v.dump();
    const double share = v["share_of_read_time"].get<double>();
    EXPECT_GT(share, 0.0);
    EXPECT_LE(share, 1.0);
    r = run(sim + d.file("plain.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(json::parse(slurp(d.file("plain.json")))["kvio"]["cache"].contains("verify_reads"));
}

// A stop on a stalled disk: the first signal says what gen waits for (its ops in flight finish, here a 32 MiB
// store at 1 s a transfer: about a minute); a second one half a second or more later gives the ops up at the
// transfers in flight, so gen ends within a few stalls and says how many ops it gave up.
TEST(Faults, GenGivesUpItsOpsInFlightAtASecondSignal) {
    FaultDisk disk(128 * MiB);
    TempDir d;
    ASSERT_TRUE(disk.rule("stall write 0 " + std::to_string(128 * MiB) + " 1000"));
    const std::string log = d.file("gen.log");
    const pid_t pid = spawn_logged({kvio_bin(), "gen", "--model", "llama3.1-8b", "--num-chunks", "2", "--qd", "2",
                                    "--target", disk.path, "--semantic", d.file("s.jsonl")},
                                   log);
    std::this_thread::sleep_for(std::chrono::seconds(3));  // the first store's transfers are stalled by now
    kill(pid, SIGINT);
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_NE(slurp(log).find("kvio gen: stopping: the ops in flight finish (signal again"), std::string::npos)
        << slurp(log);
    kill(pid, SIGINT);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    const double took = seconds_since(t0);
    const std::string out = slurp(log);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << st << "\n" << out;
    std::cerr << "[ measured ] gen on a disk stalling every write 1 s: ended " << took << " s after the first signal\n";
    EXPECT_LT(took, 1 + 2 * 2 + 10) << "more than the transfers in flight (qd 2, 1 s each) and 10 s slack\n" << out;
    EXPECT_NE(out.find("kvio gen: stopped by signal 2"), std::string::npos) << out;
    EXPECT_NE(out.find(" ops given up at the second signal"), std::string::npos) << out;
    EXPECT_NE(out.find("ops in flight were given up at a second signal"), std::string::npos) << out;  // the summary
    EXPECT_EQ(out.find("the ops in flight were completed"), std::string::npos) << out;
    // No load completed: nothing was verified, and the summary does not say "ok".
    EXPECT_NE(out.find("loads verified against the pattern: none (no load completed)"), std::string::npos) << out;
    size_t ops = 0;
    for (const auto& rec : read_jsonl(d.file("s.jsonl"))) ops += rec.contains("op");  // the file parses whole
    EXPECT_EQ(ops, 0u) << "no op completed: the first store was given up";
}

// Stopped on a disk that holds every request 3 s, simulate's drain waits for the transfers in flight: it says how
// many, and a second signal is told why the run cannot end sooner; the results are still written whole.
TEST(Faults, SimulateSaysWhatItsDrainWaitsFor) {
    CacheOnFaultDisk c4(256 * MiB);
    ASSERT_TRUE(c4.ok);
    TempDir d;
    run("sync");
    ASSERT_TRUE(c4.disk.rule("stall rw 0 " + std::to_string(256 * MiB) + " 3000"));
    const std::string log = d.file("sim.log"), out = d.file("r.json");
    const pid_t pid = spawn_logged({kvio_bin(),
                                    "simulate",
                                    "--model",
                                    "tiny-1b",
                                    "--num-users",
                                    "2",
                                    "--duration",
                                    "60",
                                    "--gpu-mem-gb",
                                    "0",
                                    "--cpu-mem-gb",
                                    "0",
                                    "--generation-mode",
                                    "none",
                                    "--seed",
                                    "42",
                                    "--progress-interval",
                                    "0",
                                    "--quiet",
                                    "--storage-io",
                                    "direct",
                                    "--cache-dir",
                                    c4.cache,
                                    "--output",
                                    out},
                                   log);
    std::this_thread::sleep_for(std::chrono::seconds(5));  // every request is held by the disk by now
    kill(pid, SIGINT);
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    kill(pid, SIGINT);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    const double took = seconds_since(t0);
    c4.disk.rule("clear");
    const std::string text = slurp(log);
    std::cerr << "[ measured ] simulate stopped on a disk holding every request 3 s: ended " << took
              << " s after the first signal\n";
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << st << "\n" << text;
    EXPECT_NE(text.find("simulate: draining: "), std::string::npos) << text;
    EXPECT_NE(text.find("the transfers in flight cannot be cancelled"), std::string::npos) << text;
    // Each user's transfer in flight (a direct write of up to 4 MiB is many device requests, each held 3 s), then
    // the cut entry's unlink and the journal (measured 13.2 s and 64.3 s); ops run to their end at this pace
    // (hundreds of requests each) would take an hour.
    EXPECT_LT(took, 180) << "the drain went on past the transfers in flight";
    EXPECT_TRUE(json::accept(slurp(out))) << slurp(out).substr(0, 300);
}
