// The simulation cache's storage tier on real devices of this machine (root): buffered, direct and io_uring
// files on ext4-on-loop (sizes, header, data = the generated entry, LRU deletion, du = the cache's account,
// semantic records whose extents hold the entry's bytes on the raw device), the raw block device backend
// (extents, reuse after deletion, the bytes on the device) and its refusals (mounted, non-empty, read-only).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "common/error.h"
#include "tests/e2e/helpers.h"
#include "workload/serving/cache.h"
#include "workload/serving/tiers/kv_data.h"

using namespace kvio::test;
using namespace kvio::serving;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBpt = 24576;  // tiny-1b
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

SimConfig storage_config(const std::string& dir, const std::string& io) {
    SimConfig c;
    c.seed = 7;
    c.gpu_mem_gb = 0;
    c.cpu_mem_gb = 0;
    c.cache_dir = dir;
    c.storage_io = io;
    c.storage_qd = 4;
    return c;
}

std::string entry_bytes(const std::string& key, uint64_t n) {
    static NoisePool pool(7);
    std::string s(n, '\0');
    EntryData(pool, key_hash(key, 7)).fill(0, s.data(), n);
    return s;
}

/// The bytes of a semantic record's extents on the raw device.
std::string read_extents(const std::string& dev, const json& rec) {
    int fd = ::open(dev.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // the device's page cache may hold bytes from before the writes
    std::string out;
    for (const auto& e : rec["extents"]) {
        std::string b(e[1].get<uint64_t>(), '\0');
        EXPECT_EQ(::pread(fd, b.data(), b.size(), off_t(e[0].get<uint64_t>())), ssize_t(b.size()));
        out += b;
    }
    ::close(fd);
    return out;
}

uint64_t du_bytes(const std::string& dir) {
    uint64_t b = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        struct stat st;
        ::stat(e.path().c_str(), &st);
        b += uint64_t(st.st_blocks) * 512;
    }
    return b;
}

}  // namespace

TEST(ServingStorage, FilesOnExt4InEveryIoMode) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (loop devices)";
    Ext4Mount m(128 * kMiB);
    const uint64_t S = 100 * kBpt;  // 2,457,600 bytes
    for (std::string io : {"buffered", "direct", "io_uring"}) {
        SCOPED_TRACE(io);
        const std::string dir = m.mnt + "/kv_" + io;
        TempDir t;
        SimConfig c = storage_config(dir, io);
        const bool direct = io != "buffered";
        const uint64_t hdr = direct ? 4096 : 128;
        const uint64_t file_bytes = direct ? 4096 + (S + 4095) / 4096 * 4096 : 128 + S;
        const uint64_t fp = (file_bytes + 4095) / 4096 * 4096;  // >= the filesystem's block rounding
        c.storage_capacity_gb = 3.0 * double(fp) / kGiB;
        c.semantic_path = t.file("sem.jsonl");
        {
            MultiTierCache cache(c, kBpt, nullptr);
            EXPECT_NE(cache.storage_description().find(dir), std::string::npos);
            for (const char* k : {"k1", "k2", "k3"})
                ASSERT_TRUE(cache.allocate(k, 100).ok) << k << cache.stats().first_error;
            for (const char* k : {"k1", "k2", "k3"}) EXPECT_EQ(fs::file_size(dir + "/" + k + ".npy"), file_bytes) << k;
            std::string f = slurp(dir + "/k2.npy");
            EXPECT_EQ(f.substr(0, 6), "\x93NUMPY");
            EXPECT_EQ(f[hdr - 1], '\n');
            EXPECT_TRUE(f.compare(hdr, S, entry_bytes("k2", S)) == 0) << "file data differ from the entry";
            AccessResult r = cache.access("k1", CachePhase::Decode, CacheType::User);
            ASSERT_TRUE(r.ok) << cache.stats().first_error;
            EXPECT_GT(r.latency_s, 0.0);
            ASSERT_TRUE(cache.allocate("k4", 100).ok);
            EXPECT_FALSE(fs::exists(dir + "/k2.npy"));  // LRU: k1 was read, k2 is the oldest
            CacheStats s = cache.stats();
            EXPECT_EQ(s.deletions, 1u);
            EXPECT_EQ(s.failed_reads + s.failed_writes, 0u);
            EXPECT_EQ(du_bytes(dir), s.used_bytes[int(Tier::Storage)]);
            EXPECT_EQ(s.storage_read_device.size(), 1u);
            EXPECT_GT(s.storage_read_device[0], 0.0);
        }
        // Semantic records: meta, 3 stores, 1 load, 1 store; each record's extents hold its bytes on the device.
        auto lines = read_jsonl(t.file("sem.jsonl"));
        ASSERT_EQ(lines.size(), 6u);
        EXPECT_EQ(lines[0]["schema"], "kvio.semantic/1");
        EXPECT_EQ(lines[0]["engine"], io == "io_uring" ? "io_uring" : "posix");
        EXPECT_EQ(lines[0]["buffered"], !direct);
        EXPECT_EQ(lines[0]["header_bytes"], hdr);
        EXPECT_EQ(lines[0]["dev"], m.loop.majmin);
        const char* ops[] = {"store", "store", "store", "load", "store"};
        const char* keys[] = {"k1", "k2", "k3", "k1", "k4"};
        for (size_t i = 1; i < lines.size(); ++i) {
            const json& x = lines[i];
            SCOPED_TRACE(x.dump());
            EXPECT_FALSE(x.contains("error"));
            EXPECT_EQ(x["op"], ops[i - 1]);
            EXPECT_EQ(x["key"], keys[i - 1]);
            // Direct loads read the data only (the header is known), as kvio validate projects a load.
            const uint64_t skip = direct && x["op"] == "load" ? hdr : 0;
            EXPECT_EQ(x["bytes"], file_bytes - skip);
            EXPECT_EQ(x["payload_bytes"], S);
            EXPECT_LE(x["ts_start"].get<uint64_t>(), x["ts"].get<uint64_t>());
            if (x["key"] == "k2") continue;  // deleted: its blocks may be reused
            std::string dev = read_extents(m.loop.path, x);
            ASSERT_EQ(dev.size(), file_bytes - skip);
            EXPECT_TRUE(dev.compare(hdr - skip, S, entry_bytes(x["key"], S)) == 0)
                << "device bytes differ at the extents";
        }
    }
}

TEST(ServingStorage, BufferedDuNeverAboveTheLimitWithEightWriters) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (loop devices)";
    Ext4Mount m(192 * kMiB);
    const std::string dir = m.mnt + "/kv";
    SimConfig c = storage_config(dir, "buffered");
    const uint64_t limit = 48 * kMiB;
    c.storage_capacity_gb = double(limit) / kGiB;
    MultiTierCache cache(c, kBpt, nullptr);
    std::vector<std::thread> th;
    for (int t = 0; t < 8; ++t)
        th.emplace_back([&, t] {
            std::mt19937 rng(uint32_t(t) + 11);
            for (int i = 0; i < 25; ++i) {
                std::string key = "w" + std::to_string(t) + "_" + std::to_string(i);
                EXPECT_TRUE(cache.allocate(key, 20 + int64_t(rng() % 300)).ok);
                if (i % 3 == 2)
                    cache.access("w" + std::to_string(t) + "_" + std::to_string(i - 1), CachePhase::Decode,
                                 CacheType::User);
            }
        });
    for (auto& x : th) x.join();
    CacheStats s = cache.stats();
    EXPECT_GT(s.deletions, 0u);
    EXPECT_EQ(s.failed_writes + s.failed_reads, 0u) << s.first_error;
    EXPECT_LE(du_bytes(dir), limit);
    EXPECT_EQ(du_bytes(dir), s.used_bytes[int(Tier::Storage)]);
    EXPECT_EQ(uint64_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator{})),
              s.entries[int(Tier::Storage)]);
}

TEST(ServingStorage, RawBlockDeviceExtentsHoldTheEntries) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (loop devices)";
    LoopDevice loop(64 * kMiB);
    TempDir t;
    for (std::string io : {"direct", "io_uring"}) {
        SCOPED_TRACE(io);
        SimConfig c = storage_config(loop.path, io);
        c.semantic_path = t.file(io + ".jsonl");
        const uint64_t S = 300 * kBpt;  // 7,372,800 B: 8 MiB extents
        {
            MultiTierCache cache(c, kBpt, nullptr);
            EXPECT_NE(cache.storage_description().find("raw block device"), std::string::npos)
                << cache.storage_description();
            EXPECT_EQ(cache.stats().limit_bytes[int(Tier::Storage)], 63 * kMiB);
            for (int i = 0; i < 10; ++i)
                ASSERT_TRUE(cache.allocate("e" + std::to_string(i), 300).ok) << cache.stats().first_error;
            CacheStats s = cache.stats();
            EXPECT_EQ(s.entries[int(Tier::Storage)], 7u);  // 7 × 8 MiB in 63 MiB: three deleted, their extents reused
            EXPECT_EQ(s.deletions, 3u);
            ASSERT_TRUE(cache.access("e9", CachePhase::Decode, CacheType::User).ok);
        }
        auto lines = read_jsonl(t.file(io + ".jsonl"));
        ASSERT_EQ(lines.size(), 12u);
        EXPECT_EQ(lines[0]["layout"], "files");  // pieces are cut like a file's extents
        std::set<uint64_t> starts;
        for (size_t i = 1; i < lines.size(); ++i) {
            const json& x = lines[i];
            SCOPED_TRACE(x.dump());
            EXPECT_FALSE(x.contains("error"));
            EXPECT_EQ(x["dev"], loop.majmin);
            // Stores start at an extent (1 MiB-aligned, after the first MiB); loads skip the 4 KiB header.
            EXPECT_EQ(x["dev_off"].get<uint64_t>() % kMiB, x["op"] == "store" ? 0u : 4096u);
            EXPECT_GE(x["dev_off"].get<uint64_t>(), kMiB);
            if (x["op"] == "store") starts.insert(x["dev_off"].get<uint64_t>());
        }
        EXPECT_LT(starts.size(), 10u);  // freed extents were reused
        // The last three stores and the load (data only) are still on the device.
        for (size_t i = 8; i < lines.size(); ++i) {
            std::string key = lines[i]["key"];
            std::string dev = read_extents(loop.path, lines[i]);
            const uint64_t hdr = lines[i]["op"] == "store" ? 4096 : 0;
            if (hdr) {
                EXPECT_EQ(dev.substr(0, 6), "\x93NUMPY");
            }
            EXPECT_TRUE(dev.compare(hdr, S, entry_bytes(key, S)) == 0) << key;
        }
    }
}

TEST(ServingStorage, RawBlockDeviceRefusals) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (loop devices)";
    {
        Ext4Mount m(32 * kMiB);
        SimConfig c = storage_config(m.loop.path, "direct");
        c.force = true;
        try {
            MultiTierCache cache(c, kBpt, nullptr);
            ADD_FAILURE() << "a mounted device was accepted";
        } catch (const kvio::Error& e) {
            EXPECT_NE(std::string(e.what()).find("mounted on " + m.mnt), std::string::npos) << e.what();
        }
    }
    LoopDevice loop(16 * kMiB);
    run("printf 'KVIO' | dd of=" + loop.path + " bs=1 seek=5000 conv=notrunc status=none");
    SimConfig c = storage_config(loop.path, "direct");
    try {
        MultiTierCache cache(c, kBpt, nullptr);
        ADD_FAILURE() << "a device with data in its first MiB was accepted";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("byte 5000"), std::string::npos) << e.what();
    }
    c.force = true;
    EXPECT_NO_THROW(MultiTierCache(c, kBpt, nullptr));
    c.storage_io = "buffered";
    EXPECT_THROW(MultiTierCache(c, kBpt, nullptr), kvio::Error);  // a device needs O_DIRECT
    c.storage_io = "direct";
    ASSERT_EQ(run("blockdev --setro " + loop.path).status, 0);
    try {
        MultiTierCache cache(c, kBpt, nullptr);
        ADD_FAILURE() << "a read-only device was accepted";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
    }
    run("blockdev --setrw " + loop.path);
}

namespace {

/// Storage ops of a cache on `target` while `kvio trace` traces `disk`, then `kvio validate` of the cache's
/// semantic records against the traced commands. Returns validate's --json report.
json trace_and_validate(const TempDir& t, const std::string& disk, SimConfig c, const std::string& tag,
                        const std::string& extra = "") {
    const std::string ev = t.file(tag + ".events.jsonl"), tj = t.file(tag + ".trace.json"), err = t.file(tag + ".err");
    c.semantic_path = t.file(tag + ".sem.jsonl");
    CmdResult r = run(kvio_bin() + " trace -d " + disk + " --events " + ev + " --json " + tj + " >/dev/null 2>" + err +
                      " & echo $!");
    const pid_t pid = pid_t(std::stol(r.out));
    for (int i = 0; i < 400 && slurp(err).find("kvio trace: tracing") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_NE(slurp(err).find("kvio trace: tracing"), std::string::npos) << slurp(err);
    {
        MultiTierCache cache(c, kBpt, nullptr);
        for (int i = 0; i < 4; ++i)
            EXPECT_TRUE(cache.allocate("v" + std::to_string(i), 300 + 17 * i).ok) << cache.stats().first_error;
        for (int i : {1, 3}) EXPECT_TRUE(cache.access("v" + std::to_string(i), CachePhase::Decode, CacheType::User).ok);
    }
    ::kill(pid, SIGINT);
    for (int i = 0; i < 600 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string rep = t.file(tag + ".report.json");
    r = run(kvio_bin() + " validate --commands " + ev + " --semantic " + c.semantic_path + " --trace-json " + tj +
            " --json " + rep + " " + extra);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    json j = json::parse(slurp(rep));
    uint64_t one_extent = 0;
    auto sem = read_jsonl(c.semantic_path);
    for (size_t i = 1; i < sem.size(); ++i) one_extent += sem[i]["extents"].size() == 1;
    j["test_single_extent_ops"] = one_extent;
    return j;
}

}  // namespace

// In direct and io_uring modes the storage tier's records join the device commands exactly (every op's
// commands are the ones projected from the geometry): on a raw device and on ext4 files.
TEST(ServingStorage, DirectOpsValidateExactlyAgainstTracedCommands) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (loop devices, tracing)";
    TempDir t;
    for (std::string io : {"direct", "io_uring"}) {
        SCOPED_TRACE(io);
        {
            LoopDevice loop(96 * kMiB);
            json j = trace_and_validate(t, loop.name, storage_config(loop.path, io), io + "-dev");
            EXPECT_EQ(j["objects"], 6) << j.dump();
            EXPECT_EQ(j["exact_match"], 6) << j.dump();
            EXPECT_EQ(j["wape"], 0.0);
        }
        {
            Ext4Mount m(160 * kMiB);
            // Joined by offset: ext4 punts io_uring writes into unwritten extents to io-wq workers, whose
            // commands the tracer cannot tag with the SQE's user_data.
            json j =
                trace_and_validate(t, m.loop.name, storage_config(m.mnt + "/kv", io), io + "-ext4", "--join offset");
            EXPECT_EQ(j["objects"], 6) << j.dump();
            EXPECT_EQ(j["wape"], 0.0) << j.dump();
            if (io == "direct") {
                EXPECT_EQ(j["exact_match"], 6) << j.dump();
            } else {
                // With several transfers in flight the block layer may merge the small piece a transfer leaves
                // past a file's extent seam with the next transfer's first bio (physically adjacent), one command
                // fewer than validate projects: only ops whose bytes lie in one extent are sure to match exactly.
                EXPECT_GE(j["exact_match"].get<uint64_t>(), j["test_single_extent_ops"].get<uint64_t>()) << j.dump();
            }
        }
    }
}
