// MultiTierCache (workload/serving/cache.h) end to end on small entries of the benchmark's tiny-1b model
// (24,576 B/token): trace mode's CSV rows (plain and zstd), the entry data (stamped, unique blocks), the
// buffered storage layout (<key>.npy = 128-byte .npy header + data), LRU deletion of files, the accounting of
// demotions and failures, and the storage limit on a private tmpfs under concurrent writers.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "workload/serving/cache.h"
#include "workload/serving/tiers/gpu_tier.h"
#include "workload/serving/tiers/kv_data.h"
#include "workload/serving/tiers/storage_io.h"
#include "workload/serving/tiers/storage_throttle.h"
#include "workload/serving/tiers/tiers.h"
#include "workload/serving/tiers/tiers.h"

using namespace kvio::serving;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kBpt = 24576;  // tiny-1b
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct TmpDir {
    std::string path;
    TmpDir() {
        char t[] = "/tmp/kvio_cache_test_XXXXXX";
        path = ::mkdtemp(t);
    }
    ~TmpDir() { fs::remove_all(path); }
};

SimConfig base_config() {
    SimConfig c;
    c.seed = 42;
    c.gpu_mem_gb = 0;
    c.cpu_mem_gb = 0;
    return c;
}

std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::istringstream ls(line);
        std::string x;
        while (std::getline(ls, x, ',')) f.push_back(x);
        rows.push_back(f);
    }
    return rows;
}

// 100 tokens = 2,457,600 bytes; a gpu of 8,000,000 bytes holds two (target 6.4 MB).
void run_trace_scenario(const std::string& log_path) {
    SimConfig c = base_config();
    c.io_trace_log = log_path;
    c.gpu_mem_gb = 8e6 / kGiB;
    c.cpu_mem_gb = 100;
    MultiTierCache cache(c, kBpt, nullptr);
    EXPECT_EQ(cache.gpu_tier_description(), "null (trace mode)");
    for (const char* k : {"k1", "k2", "k3"}) ASSERT_TRUE(cache.allocate(k, 100).ok) << k;
    AccessResult r = cache.access("k1", CachePhase::Decode, CacheType::MultiTurn);
    EXPECT_TRUE(r.hit);
    EXPECT_EQ(r.tier, Tier::Cpu);
    EXPECT_EQ(r.latency_s, 0.0);
    EXPECT_FALSE(cache.access("nope", CachePhase::Prefill, CacheType::User).hit);
    CacheStats s = cache.stats();
    EXPECT_EQ(s.demotions[int(Tier::Cpu)], 1u);
    EXPECT_EQ(s.tier_bytes_written[int(Tier::Cpu)], 2457600u);  // demotion bytes counted (the benchmark counts none)
    EXPECT_EQ(s.tier_bytes_read[int(Tier::Gpu)], 2457600u);
    EXPECT_EQ(s.limit_bytes[int(Tier::Storage)], UINT64_MAX);  // trace mode: unlimited
}

void expect_trace_rows(const std::string& text) {
    auto rows = csv_rows(text);
    ASSERT_EQ(rows.size(), 7u) << text;
    EXPECT_EQ(rows[0],
              (std::vector<std::string>{"Timestamp", "Operation", "Object_Size_Bytes", "Tier", "Key", "Phase"}));
    const std::vector<std::vector<std::string>> want = {
        {"Write", "2457600", "Tier-0", "k1", "Prefill"}, {"Write", "2457600", "Tier-0", "k2", "Prefill"},
        {"Read", "2457600", "Tier-0", "k1", "Evict"},    {"Write", "2457600", "Tier-1", "k1", "Evict"},
        {"Write", "2457600", "Tier-0", "k3", "Prefill"}, {"Read", "2457600", "Tier-1", "k1", "Decode"}};
    std::regex ts("^[0-9]{10}\\.[0-9]{6}$");
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(rows[i + 1].size(), 6u);
        EXPECT_TRUE(std::regex_match(rows[i + 1][0], ts)) << rows[i + 1][0];
        EXPECT_EQ(std::vector<std::string>(rows[i + 1].begin() + 1, rows[i + 1].end()), want[i]) << "row " << i + 1;
    }
}

}  // namespace

TEST(ServingCache, TraceModeWritesOneCsvRowPerOpWithEvictPairs) {
    TmpDir d;
    run_trace_scenario(d.path + "/trace.csv");
    expect_trace_rows(slurp(d.path + "/trace.csv"));
}

TEST(ServingCache, TraceModeZstdFileDecompressesWithTheZstdTool) {
    TmpDir d;
    run_trace_scenario(d.path + "/trace.csv.zst");
    std::string zst = slurp(d.path + "/trace.csv.zst");
    ASSERT_GE(zst.size(), 4u);
    EXPECT_EQ(zst.substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4));  // zstd frame magic
    std::string cmd = "zstd -q -dc " + d.path + "/trace.csv.zst > " + d.path + "/out.csv";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "zstd -t failed: the frame was not finished";
    expect_trace_rows(slurp(d.path + "/out.csv"));
}

TEST(ServingCache, EntryDataIsDeterministicStampedAndHasNoEqualBlocks) {
    NoisePool pool(7, 1 << 20);  // a small pool so entries wrap around it
    EntryData a(pool, key_hash("a", 7)), b(pool, key_hash("b", 7));
    const size_t n = 3u << 20;
    std::vector<uint8_t> x(n), y(n), z(n);
    a.fill(0, x.data(), n);
    b.fill(0, y.data(), n);
    // Filling in odd pieces gives the same bytes as one fill.
    for (size_t off = 0; off < n;) {
        size_t len = std::min<size_t>(n - off, 12345);
        a.fill(off, z.data() + off, len);
        off += len;
    }
    EXPECT_EQ(x, z);
    std::set<std::string> blocks;
    for (auto* v : {&x, &y})
        for (size_t off = 0; off < n; off += 4096)
            blocks.insert(std::string(v->begin() + off, v->begin() + off + 4096));
    EXPECT_EQ(blocks.size(), 2 * n / 4096);
    for (uint64_t blk = 0; blk < n / 4096; ++blk) {
        BlockStamp s = read_stamp(x.data() + blk * 4096, pool.data() + a.pool_offset(blk * 4096));
        EXPECT_EQ(s.hash, a.hash());
        EXPECT_EQ(s.block, blk);
    }
}

// The pool every storage write copies from: page-aligned blocks and small enough to stay cached, as fio's buffer
// is (a 64 MiB pool read from DRAM doubled the kernel's copy cost per written byte: docs/performance.md).
TEST(ServingCache, NoisePoolIsPageAlignedAndCacheSized) {
    NoisePool pool(42);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data()) % 4096, 0u);
    EXPECT_EQ(pool.size(), kNoisePoolBytes);
    EXPECT_LE(pool.size(), size_t(4) << 20);
    NoisePool odd(42, 10000);  // rounded down to whole blocks
    EXPECT_EQ(odd.size(), 8192u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(odd.data()) % 4096, 0u);
}

// A write cut by the stop leaves no file behind, but its file is removed when the tier goes (after the run's clock
// stopped), not in the drain: unlinking entries fallocated in full made up the whole drain on tmpfs.
TEST(ServingCache, CutWriteFileGoesWhenTheTierGoes) {
    TmpDir d;
    StorageOptions o;
    o.path = d.path;
    NoisePool pool(7);
    std::atomic<bool> stop{true};
    {
        auto tier = make_storage_tier(o);
        tier->set_cut_flag(&stop);
        EXPECT_THROW(tier->write("cut", 8u << 20, EntryData(pool, key_hash("cut", 7))), OpCut);
        EXPECT_TRUE(std::filesystem::exists(d.path + "/cut.npy")) << "removed in the drain";
        stop = false;
        tier->write("kept", 4096, EntryData(pool, key_hash("kept", 7)));
    }
    EXPECT_FALSE(std::filesystem::exists(d.path + "/cut.npy")) << "a cut write left its file";
    EXPECT_TRUE(std::filesystem::exists(d.path + "/kept.npy"));
}

// The O_DIRECT tier stops at the stop too: a write cut before its first transfer moves nothing and its file goes
// with the tier; a read of a stored entry is cut the same way; the tier ignoring the flag is what made a run on a
// disk stalling every request wait for whole entries (hundreds of transfers) after its duration.
TEST(ServingCache, DirectTierCutsWritesAndReadsAtTheStop) {
    TmpDir d;
    StorageOptions o;
    o.path = d.path;
    o.io = "direct";
    NoisePool pool(7);
    std::atomic<bool> stop{false};
    {
        auto tier = make_storage_tier(o);
        tier->set_cut_flag(&stop);
        tier->write("kept", 1u << 20, EntryData(pool, key_hash("kept", 7)));
        stop = true;
        try {
            tier->write("cut", 8u << 20, EntryData(pool, key_hash("cut", 7)));
            ADD_FAILURE() << "a write went on after the stop";
        } catch (const OpCut& e) {
            EXPECT_EQ(e.bytes_moved, 0u);
        }
        EXPECT_THROW(tier->read("kept", 1u << 20), OpCut);
        EXPECT_TRUE(std::filesystem::exists(d.path + "/cut.npy")) << "removed in the drain";
    }
    EXPECT_FALSE(std::filesystem::exists(d.path + "/cut.npy")) << "a cut write left its file";
}

// EnginePool::run asks `cut` before each transfer: once it says true nothing more is queued, the transfers in
// flight finish and OpCut carries the bytes they moved.
TEST(ServingCache, EnginePoolStopsQueueingWhenCut) {
    TmpDir d;
    const std::string path = d.path + "/f";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(::ftruncate(fd, 1 << 20), 0);
    for (const char* engine : {"posix", "io_uring"}) {
        EnginePool p(engine, 4, 64 * 1024);
        auto lease = p.take();
        int asked = 0;
        try {  // 16 transfers of 64 KiB; the 6th question says stop
            p.run(*lease, fd, false, {{0, 1 << 20}}, 1 << 20, {}, nullptr, 0, 0, [&] { return ++asked > 5; });
            ADD_FAILURE() << engine << ": not cut";
        } catch (const OpCut& e) {  // what was queued before the stop moved (qd 4: 4 of the 16 transfers)
            EXPECT_GT(e.bytes_moved, 0u) << engine;
            EXPECT_LE(e.bytes_moved, 5u * 64 * 1024) << engine;
            EXPECT_EQ(e.bytes_moved % (64 * 1024), 0u) << engine;
        }
        EXPECT_EQ(asked, 6) << engine << ": asked again after it said stop";
        TransferResult r = p.run(*lease, fd, false, {{0, 1 << 20}}, 1 << 20, {}, nullptr, 0, 0, [] { return false; });
        EXPECT_EQ(r.bytes, 1u << 20) << engine;
        EXPECT_EQ(r.transfers, 16u) << engine;
    }
    ::close(fd);
}

// --verify-reads under --storage-throttle-mibps: the throttle passes the read check (and the cut flag) on to the
// tier it wraps, whichever is set first, so a wrong byte read through it is still caught, naming the entry.
TEST(ServingCache, ThrottledTierPassesTheReadCheckAndTheCutOn) {
    TmpDir d;
    StorageOptions o;
    o.path = d.path;
    NoisePool pool(7);
    auto tier = make_throttled_storage_tier(make_storage_tier(o), 1024);
    tier->set_read_check(&pool, 7);
    tier->write("e", 1u << 20, EntryData(pool, key_hash("e", 7)));
    tier->read("e", 1u << 20);  // intact: no error
    {
        std::fstream f(d.path + "/e.npy", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(128 + 5000);  // payload byte 5000 (after the 128-byte .npy header)
        char c = 0;
        f.read(&c, 1);
        f.seekp(128 + 5000);
        c ^= 1;
        f.write(&c, 1);
    }
    try {
        tier->read("e", 1u << 20);
        ADD_FAILURE() << "a flipped bit read through the throttle was not caught";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("payload mismatch in entry e at payload byte 5000"), std::string::npos)
            << e.what();
    }
    std::atomic<bool> stop{true};
    tier->set_cut_flag(&stop);
    EXPECT_THROW(tier->read("e", 1u << 20), OpCut);
}

// The writev path (gather) yields the bytes fill() copies, in pieces of any iovec budget, wrapping the pool.
TEST(ServingCache, EntryDataGatherGivesTheBytesFillGives) {
    NoisePool pool(7, 1 << 20);
    EntryData a(pool, key_hash("a", 7));
    const size_t n = (3u << 20) + 1000;  // ends inside a block and inside a stamp's bytes is covered below too
    std::vector<uint8_t> want(n), got;
    a.fill(0, want.data(), n);
    for (size_t max_iov : {size_t(2), size_t(7), size_t(1024)}) {
        got.clear();
        std::vector<iovec> iov(max_iov);
        std::vector<uint8_t> stamps(16 * 512);
        for (size_t off = 0; off < n;) {
            size_t k = 0, len = std::min<size_t>(n - off, 2u << 20);
            size_t covered = a.gather(off, len, iov.data(), max_iov, k, stamps.data());
            ASSERT_GT(covered, 0u);
            size_t sum = 0;
            for (size_t i = 0; i < k; ++i) {
                auto* p = static_cast<uint8_t*>(iov[i].iov_base);
                got.insert(got.end(), p, p + iov[i].iov_len);
                sum += iov[i].iov_len;
            }
            ASSERT_EQ(sum, covered);
            off += covered;
        }
        EXPECT_EQ(got, want) << "max_iov " << max_iov;
    }
    std::vector<uint8_t> tail(10), stamps(16);
    iovec iov[2];
    size_t k = 0;
    a.gather(4096 * 5, 10, iov, 2, k, stamps.data());  // a piece shorter than a stamp
    ASSERT_EQ(k, 1u);
    a.fill(4096 * 5, tail.data(), 10);
    EXPECT_EQ(std::memcmp(iov[0].iov_base, tail.data(), 10), 0);
}

// The contiguous write path (StampedRange: a pool copy with the range's stamps XORed in) yields fill()'s bytes for
// any key, offset and length, including ranges that wrap the pool and one longer than it; it leaves the copy equal
// to the pool again, and with every copy out it says so (the caller gathers) instead of waiting.
TEST(ServingCache, StampedRangeGivesTheBytesFillGivesAndRestoresTheCopy) {
    NoisePool pool(7, 1 << 20, 1);  // a small pool so ranges wrap; one copy, reused by every range below
    const size_t P = pool.size();
    for (const char* key : {"a", "b", "user_3_turn_7"}) {
        EntryData e(pool, key_hash(key, 7));
        const uint64_t to_wrap = P - e.pool_offset(0);  // entry offset where the pool wraps
        for (uint64_t off : {uint64_t(0), uint64_t(4096), to_wrap + P - 8192, to_wrap, uint64_t(5 << 20)})
            for (size_t len : {size_t(10), size_t(4096), size_t(4096 + 5), size_t(3 * 4096 + 16), size_t(12288 + 7),
                               P / 2 + 100, P, P + 4096}) {
                SCOPED_TRACE(std::string(key) + " off " + std::to_string(off) + " len " + std::to_string(len));
                std::vector<uint8_t> got;
                {
                    StampedRange r(e, off, len);
                    ASSERT_TRUE(r.ok());
                    ASSERT_EQ(r.bytes(), std::min(len, P));
                    ASSERT_LE(r.n_iov(), 2u);
                    for (size_t i = 0; i < r.n_iov(); ++i) {
                        auto* p = static_cast<const uint8_t*>(r.iov()[i].iov_base);
                        got.insert(got.end(), p, p + r.iov()[i].iov_len);
                    }
                    StampedRange busy(e, off, len);  // the only copy is out
                    EXPECT_FALSE(busy.ok());
                }
                std::vector<uint8_t> want(std::min(len, P));
                e.fill(off, want.data(), want.size());
                ASSERT_EQ(got, want);
            }
        const uint8_t* c = pool.take_copy();
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(std::memcmp(c, pool.data(), P), 0) << "a stamp was not undone";
        pool.put_copy(const_cast<uint8_t*>(c));
    }
    EXPECT_EQ(pool.copies_made(), 1u);
    EXPECT_EQ(pool.copy_misses(), 3u * 5 * 8);  // one `busy` per key, offset and length
    NoisePool none(7, 1 << 20, 0);
    EXPECT_FALSE(StampedRange(EntryData(none, 1), 0, 4096).ok());
    EXPECT_FALSE(StampedRange(EntryData(none, 2), 0, 4096).ok());
    EXPECT_EQ(none.copy_misses(), 2u);  // each failed take counted: the caller gathered
}

// The buffered tier's files hold fill()'s bytes whether its writes go through pool copies or, with every copy
// taken, gather: concurrent writers of entries that wrap the pool, from 0, 1 and 4 copies.
TEST(ServingCache, BufferedTierWritesTheEntryBytesFromPoolCopiesAndGather) {
    for (size_t copies : {size_t(0), size_t(1), size_t(4)}) {
        SCOPED_TRACE("copies " + std::to_string(copies));
        TmpDir d;
        StorageOptions o;
        o.path = d.path;
        auto tier = make_storage_tier(o);
        NoisePool pool(9, 1 << 20, copies);
        const std::vector<uint64_t> sizes = {10, 4096 + 3, (1u << 20) + 4096 * 3 + 17, (3u << 20) + 1000, 5u << 20};
        std::vector<std::thread> ts;
        for (int t = 0; t < 4; ++t)
            ts.emplace_back([&, t] {
                for (size_t i = 0; i < sizes.size(); ++i) {
                    std::string key = "t" + std::to_string(t) + "_" + std::to_string(i);
                    tier->write(key, sizes[i], EntryData(pool, key_hash(key, 9)));
                }
            });
        for (auto& t : ts) t.join();
        EXPECT_LE(pool.copies_made(), copies);
        if (copies) {
            EXPECT_GE(pool.copies_made(), 1u);
        }
        // Every chunk of the 20 non-empty writes gathered without a copy; with a copy per writer none did.
        if (copies == 0) {
            EXPECT_GE(pool.copy_misses(), 4 * sizes.size());
        }
        if (copies >= 4) {
            EXPECT_EQ(pool.copy_misses(), 0u);
        }
        for (int t = 0; t < 4; ++t)
            for (size_t i = 0; i < sizes.size(); ++i) {
                std::string key = "t" + std::to_string(t) + "_" + std::to_string(i);
                std::string want(sizes[i], '\0');
                EntryData(pool, key_hash(key, 9)).fill(0, want.data(), want.size());
                std::string f = slurp(d.path + "/" + key + ".npy");
                ASSERT_EQ(f.size(), 128 + sizes[i]) << key;
                EXPECT_TRUE(f.compare(128, want.size(), want) == 0) << key << ": file data differ from fill()";
            }
    }
}

TEST(ServingCache, BufferedStorageFilesAreNpyWithTheEntryBytes) {
    TmpDir d;
    {
        std::ofstream(d.path + "/old.npy") << "stale";
        std::ofstream(d.path + "/keep.txt") << "mine";
    }
    SimConfig c = base_config();
    c.cache_dir = d.path;
    c.storage_capacity_gb = 3.0 * 2461696 / kGiB;  // three 100-token files (header + data in 4 KiB blocks)
    MultiTierCache cache(c, kBpt, nullptr);
    EXPECT_FALSE(fs::exists(d.path + "/old.npy"));  // the benchmark clears old entries at start
    EXPECT_TRUE(fs::exists(d.path + "/keep.txt"));
    EXPECT_EQ(cache.gpu_tier_description(), "absent (--gpu-mem-gb 0)");
    for (const char* k : {"k1", "k2", "k3"}) {
        AllocResult r = cache.allocate(k, 100);
        ASSERT_TRUE(r.ok) << k;
        EXPECT_EQ(r.tier, Tier::Storage);
        EXPECT_GT(r.latency_s, 0.0);
    }
    const uint64_t S = 100 * kBpt;
    std::string f = slurp(d.path + "/k2.npy");
    ASSERT_EQ(f.size(), 128 + S);
    EXPECT_EQ(f.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ(f[127], '\n');
    EXPECT_NE(f.find("'shape': (1228800,)"), std::string::npos);
    NoisePool pool(42);
    std::string want(S, '\0');
    EntryData(pool, key_hash("k2", 42)).fill(0, want.data(), S);
    EXPECT_TRUE(f.compare(128, S, want) == 0) << "file data differ from the generated entry";

    AccessResult r = cache.access("k1", CachePhase::Decode, CacheType::User);  // k1 becomes the newest
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.tier, Tier::Storage);
    ASSERT_TRUE(cache.allocate("k4", 100).ok);
    EXPECT_FALSE(fs::exists(d.path + "/k2.npy"));  // the LRU file went
    EXPECT_TRUE(fs::exists(d.path + "/k1.npy"));
    EXPECT_FALSE(cache.contains("k2"));
    AllocResult again = cache.allocate("k4", 100);
    EXPECT_TRUE(again.existed);
    EXPECT_EQ(again.latency_s, 0.0);

    CacheStats s = cache.stats();
    EXPECT_EQ(s.deletions, 1u);
    EXPECT_EQ(s.offloads_storage, 4u);
    EXPECT_EQ(s.write_operations, 4u);
    EXPECT_EQ(s.decode_reads, 1u);
    EXPECT_EQ(s.user_cache_hits, 1u);
    EXPECT_EQ(s.storage_write_device.size(), 4u);
    EXPECT_EQ(s.storage_read_host.size(), 1u);
    EXPECT_DOUBLE_EQ(s.storage_tokens_processed, 500.0);  // 4 writes × 100 + one read of 100 tokens

    auto j = cache.cache_stats_json(2.0, "latency");
    EXPECT_EQ(j["storage_entries"], 3);
    EXPECT_EQ(j["write_iops"], 4);
    EXPECT_DOUBLE_EQ(j["tier_storage_write_bandwidth_gbps"].get<double>(), 4.0 * S / kGiB / 2.0);
    EXPECT_TRUE(j.contains("storage_write_device_p95_ms"));
    EXPECT_TRUE(j.contains("storage_read_p9999_ms"));
    EXPECT_FALSE(j.contains("cpu_read_p50_ms"));       // empty lists have no keys
    EXPECT_EQ(j["storage_health"]["total_count"], 3);  // write, read, hit rate (no cpu ops)
    cache.reset_stats();
    EXPECT_EQ(cache.stats().write_operations, 0u);
    EXPECT_EQ(cache.stats().entries[int(Tier::Storage)], 3u);  // entries stay
}

// The write and read criteria judge the device-side P95 (the benchmark's basis) and name the cache_stats key with
// that figure; before, "Storage Write P95 Latency" showed the device figure while cache_stats' storage_write_p95_ms
// (the name a reader looks up) was the total: here 10x as large.
TEST(ServingCache, AssessmentNamesTheFigureItJudges) {
    CacheStats s;
    const int S = int(Tier::Storage);
    for (int i = 1; i <= 100; ++i) {
        s.storage_write_device.push_back(i * 1e-3);  // device 1..100 ms, total 10x: device P95 < 500 ms < total P95
        s.write_lat[S].push_back(i * 1e-2);
        s.read_lat[S].push_back(i * 3e-3);  // reads: total only (no device split)
    }
    auto j = cache_stats_json(s, 1.0, "latency");
    const auto& crit = j["storage_health"]["criteria"];
    ASSERT_EQ(crit.size(), 2u) << crit.dump();
    const auto& w = crit[0];
    EXPECT_EQ(w["name"], "Storage Write Device P95 Latency");
    ASSERT_EQ(w.value("basis", ""), "storage_write_device_p95_ms");
    EXPECT_DOUBLE_EQ(w["actual"].get<double>(), j["storage_write_device_p95_ms"].get<double>());
    EXPECT_NE(w["actual"].get<double>(), j["storage_write_p95_ms"].get<double>());
    EXPECT_TRUE(w["passed"].get<bool>());
    const auto& r = crit[1];
    EXPECT_EQ(r["name"], "Storage Read Total P95 Latency");
    ASSERT_EQ(r.value("basis", ""), "storage_read_p95_ms");
    EXPECT_DOUBLE_EQ(r["actual"].get<double>(), j["storage_read_p95_ms"].get<double>());
    EXPECT_EQ(r["passed"].get<bool>(), j["storage_read_p95_ms"].get<double>() < 200);
}

TEST(ServingCache, CpuTierHoldsRealBytesAndDemotesToStorage) {
    TmpDir d;
    SimConfig c = base_config();
    c.cache_dir = d.path;
    c.cpu_mem_gb = 8e6 / kGiB;  // two 100-token entries under the 0.8 target
    c.storage_capacity_gb = 1;
    MultiTierCache cache(c, kBpt, nullptr);
    for (const char* k : {"a", "b", "c"}) ASSERT_TRUE(cache.allocate(k, 100).ok);
    EXPECT_TRUE(fs::exists(d.path + "/a.npy"));  // demoted
    EXPECT_FALSE(fs::exists(d.path + "/c.npy"));
    AccessResult r = cache.access("b", CachePhase::Prefill, CacheType::System);
    EXPECT_EQ(r.tier, Tier::Cpu);
    EXPECT_GT(r.latency_s, 0.0);
    CacheStats s = cache.stats();
    EXPECT_EQ(s.offloads_cpu, 3u);
    EXPECT_EQ(s.offloads_storage, 1u);  // the demotion
    EXPECT_EQ(s.demotions[int(Tier::Storage)], 1u);
    EXPECT_EQ(s.demotion_lat[int(Tier::Storage)].size(), 1u);
    EXPECT_GT(s.demotion_lat[int(Tier::Storage)][0], 0.0);
    EXPECT_EQ(s.tier_bytes_written[int(Tier::Storage)], 100 * kBpt);
    EXPECT_EQ(s.system_prompt_hits, 1u);
    // The demoted file holds the same bytes as a direct write would.
    NoisePool pool(42);
    std::string want(100 * kBpt, '\0');
    EntryData(pool, key_hash("a", 42)).fill(0, want.data(), want.size());
    EXPECT_TRUE(slurp(d.path + "/a.npy").compare(128, want.size(), want) == 0);
}

TEST(ServingCache, GpuModelTakesBytesOverBandwidth) {
    SimConfig c = base_config();
    c.gpu_mem_gb = 1;
    c.gpu_bandwidth_gbps = 1;  // 1e9 B/s: 100 tokens = 2.4576 ms
    c.gpu_tier = "model";
    TmpDir d;
    c.cache_dir = d.path;
    MultiTierCache cache(c, kBpt, nullptr);
    EXPECT_NE(cache.gpu_tier_description().find("model (1 GB/s"), std::string::npos) << cache.gpu_tier_description();
    AllocResult r = cache.allocate("g", 100);
    ASSERT_EQ(r.tier, Tier::Gpu);
    EXPECT_GE(r.latency_s, 2.4576e-3);  // never faster than the modelled bandwidth (no upper bound: a loaded VM)
    std::string why;
    if (cuda_device_name(&why).empty()) {  // no GPU here: cuda refuses and says why, auto runs the model
        c.gpu_tier = "cuda";
        try {
            MultiTierCache cuda(c, kBpt, nullptr);
            ADD_FAILURE() << "--gpu-tier cuda accepted without a device";
        } catch (const kvio::Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("--gpu-tier model"), std::string::npos) << e.what();
        }
        c.gpu_tier = "auto";
        MultiTierCache modelled(c, kBpt, nullptr);
        EXPECT_EQ(modelled.gpu_tier_description().rfind("model (1 GB/s", 0), 0u) << modelled.gpu_tier_description();
    } else {
        c.gpu_tier = "auto";
        MultiTierCache cuda(c, kBpt, nullptr);
        EXPECT_EQ(cuda.gpu_tier_description().rfind("cuda (", 0), 0u) << cuda.gpu_tier_description();
        EXPECT_EQ(cuda.allocate("g", 100).tier, Tier::Gpu);
        EXPECT_TRUE(cuda.access("g", CachePhase::Decode, CacheType::User).ok);
    }
    c.gpu_tier = "bogus";
    EXPECT_THROW(MultiTierCache(c, kBpt, nullptr), kvio::Error);
}

TEST(ServingCache, FailedWriteIsNotCountedAndReleasesItsSpace) {
    TmpDir d;
    SimConfig c = base_config();
    c.cache_dir = d.path;
    c.storage_capacity_gb = 1;
    MultiTierCache cache(c, kBpt, nullptr);
    fs::create_directory(d.path + "/bad.npy");  // the file cannot be created: a directory is in the way
    AllocResult r = cache.allocate("bad", 10);
    EXPECT_FALSE(r.ok);
    CacheStats s = cache.stats();
    EXPECT_EQ(s.failed_writes, 1u);
    EXPECT_EQ(s.write_io_errors, 1u);  // the tier had room: an I/O error, not a capacity refusal
    EXPECT_EQ(s.capacity_refusals, 0u);
    EXPECT_EQ(s.write_operations, 0u);
    EXPECT_EQ(s.total_write_bytes, 0u);
    EXPECT_EQ(s.used_bytes[int(Tier::Storage)], 0u);
    EXPECT_FALSE(cache.contains("bad"));
    EXPECT_NE(s.first_error.find("bad.npy"), std::string::npos) << s.first_error;
}

// An entry larger than every tier's limit is refused unwritten and counted as a capacity refusal with its bytes, apart
// from I/O errors; an entry that fits is written beside it.
TEST(ServingCache, EntryNoTierCanHoldIsACapacityRefusalNotAnIoError) {
    TmpDir d;
    SimConfig c = base_config();
    c.cache_dir = d.path;
    c.storage_capacity_gb = 1.0 / 1024;  // 1 MiB
    MultiTierCache cache(c, kBpt, nullptr);
    const uint64_t big = cache.entry_bytes(100);  // 100 x 24 KiB: 2.4 MiB
    ASSERT_GT(big, uint64_t(1) << 20);
    EXPECT_FALSE(cache.allocate("big", 100).ok);
    EXPECT_TRUE(cache.allocate("small", 10).ok);
    const CacheStats s = cache.stats();
    EXPECT_EQ(s.capacity_refusals, 1u);
    EXPECT_EQ(s.capacity_refused_bytes, big);
    EXPECT_EQ(s.write_io_errors, 0u);
    EXPECT_EQ(s.failed_writes, 1u);
    EXPECT_EQ(s.write_operations, 1u);
    // Its first error is the refusal's own, not a write's I/O error (which no write had).
    EXPECT_EQ(s.first_capacity_refusal, "no tier can take entry 'big' of " + std::to_string(big) + " bytes");
    EXPECT_EQ(s.first_write_error, "");
    const auto j = cache.kvio_json();
    EXPECT_EQ(j["first_capacity_refusal"], s.first_capacity_refusal);
    EXPECT_FALSE(j.contains("first_write_error"));
    EXPECT_EQ(j["capacity_refusals"], 1u);
    EXPECT_EQ(j["capacity_refused_bytes"], big);
    EXPECT_EQ(j["write_io_errors"], 0u);
}

// 8 writers on a private tmpfs: the filesystem's used blocks (statvfs, one atomic figure) never exceed the
// storage limit, sampled continuously while entries are written and LRU files deleted.
TEST(ServingCache, StorageLimitHoldsOnDiskUnderConcurrentWriters) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
    TmpDir d;
    ASSERT_EQ(::mount("tmpfs", d.path.c_str(), "tmpfs", 0, "size=256m"), 0) << std::strerror(errno);
    struct statvfs v0;
    ::statvfs(d.path.c_str(), &v0);
    const uint64_t base = (v0.f_blocks - v0.f_bfree) * v0.f_frsize;
    const uint64_t limit = 40ull << 20;
    {
        SimConfig c = base_config();
        c.cache_dir = d.path;
        c.storage_capacity_gb = double(limit) / kGiB;
        MultiTierCache cache(c, kBpt, nullptr);
        std::atomic<bool> stop{false};
        std::atomic<uint64_t> peak{0};
        std::thread mon([&] {
            while (!stop) {
                struct statvfs v;
                ::statvfs(d.path.c_str(), &v);
                uint64_t used = (v.f_blocks - v.f_bfree) * v.f_frsize - base;
                uint64_t p = peak.load();
                while (used > p && !peak.compare_exchange_weak(p, used)) {}
            }
        });
        std::vector<std::thread> th;
        std::atomic<int> fails{0};
        for (int t = 0; t < 8; ++t)
            th.emplace_back([&, t] {
                std::mt19937 rng(uint32_t(t) + 1);
                for (int i = 0; i < 40; ++i) {
                    std::string key = "w" + std::to_string(t) + "_" + std::to_string(i);
                    if (!cache.allocate(key, 20 + int64_t(rng() % 200)).ok) fails++;
                    if (i % 4 == 3)
                        cache.access("w" + std::to_string(t) + "_" + std::to_string(i - 1), CachePhase::Decode,
                                     CacheType::User);
                }
            });
        for (auto& x : th) x.join();
        stop = true;
        mon.join();
        EXPECT_EQ(fails.load(), 0);
        EXPECT_LE(peak.load(), limit);
        EXPECT_GT(peak.load(), limit / 2);
        CacheStats s = cache.stats();
        EXPECT_GT(s.deletions, 0u);
        // Files on disk = the entries the cache accounts for.
        uint64_t files = 0, blocks = 0;
        for (const auto& e : fs::directory_iterator(d.path)) {
            struct stat st;
            ::stat(e.path().c_str(), &st);
            files++, blocks += uint64_t(st.st_blocks) * 512;
        }
        EXPECT_EQ(files, s.entries[int(Tier::Storage)]);
        EXPECT_EQ(blocks, s.used_bytes[int(Tier::Storage)]);
    }
    ::umount2(d.path.c_str(), MNT_DETACH);
}
