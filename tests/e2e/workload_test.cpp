// End-to-end tests of `kvio geometry` and `kvio gen` on loop devices and ext4-on-loop: every engine's
// stream runs, --semantic offsets equal the slot arithmetic and FIEMAP (checked by reading the raw
// device at those offsets and finding the object's pattern there), and the refusals.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/jsonl.h"
#include "tests/e2e/helpers.h"
#include "workload/execute.h"
#include "workload/pattern.h"
#include "workload/record.h"

using namespace kvio::test;
using namespace kvio::workload;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kTinyObject = 8 * kMiB;  // llama3.2-1b: 32,768 B/token × 256 tokens

uint64_t sysfs_u64(const std::string& disk, const std::string& attr) {
    return std::stoull(slurp("/sys/block/" + disk + "/queue/" + attr));
}

/// The transfer cap kvio must choose on the block path: min(max_sectors_kb × 1024, max_segments × page).
uint64_t expected_cap(const std::string& disk) {
    uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    return std::min(sysfs_u64(disk, "max_sectors_kb") * 1024, sysfs_u64(disk, "max_segments") * page);
}

/// Reads `len` bytes at `off` of a device with O_DIRECT (bypasses any cached copy).
std::vector<char> read_raw(const std::string& dev, uint64_t off, uint64_t len) {
    int fd = ::open(dev.c_str(), O_RDONLY | O_DIRECT);
    EXPECT_GE(fd, 0) << dev;
    void* p = nullptr;
    EXPECT_EQ(posix_memalign(&p, 4096, len), 0);
    ssize_t n = ::pread(fd, p, len, off_t(off));
    EXPECT_EQ(n, ssize_t(len)) << std::strerror(errno);
    std::vector<char> out(static_cast<char*>(p), static_cast<char*>(p) + len);
    std::free(p);
    ::close(fd);
    return out;
}

/// Concatenates the bytes of the record's extents on the raw device.
std::vector<char> read_extents(const std::string& dev, const json& rec) {
    std::vector<char> all;
    for (const auto& e : rec["extents"]) {
        auto part = read_raw(dev, e[0].get<uint64_t>(), e[1].get<uint64_t>());
        all.insert(all.end(), part.begin(), part.end());
    }
    return all;
}

std::string hex_sum(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
    return b;
}

/// Checks a slots-layout semantic file against the slot arithmetic and the raw device contents.
void check_slots(const std::string& sem, const std::string& dev, const std::string& majmin, uint64_t part_or_file_base,
                 uint64_t nobj, uint64_t cap, bool raw_check = true) {
    auto lines = read_jsonl(sem);
    ASSERT_EQ(lines.size(), 1 + 2 * nobj);
    const json& m = lines[0];
    EXPECT_EQ(m["type"], "meta");
    EXPECT_EQ(m["schema"], "kvio.semantic/1");
    EXPECT_EQ(m["clock"], "CLOCK_MONOTONIC");
    EXPECT_EQ(m["max_io_bytes"].get<uint64_t>(), cap);
    EXPECT_EQ(m["header_bytes"].get<uint64_t>(), 4096u);
    EXPECT_EQ(m["data_base"].get<uint64_t>(), kMiB);
    const uint64_t slot = 4096 + kTinyObject;  // header + payload, already 4 KiB aligned
    EXPECT_EQ(m["slot_bytes"].get<uint64_t>(), slot);
    size_t stores = 0, loads = 0;
    std::map<uint64_t, std::string> store_sum;
    std::map<uint64_t, uint64_t> store_gen;  // object -> trace id of its store = pattern generation
    for (size_t i = 1; i < lines.size(); ++i) {
        const json& r = lines[i];
        SCOPED_TRACE(r.dump());
        EXPECT_FALSE(r.contains("error"));
        EXPECT_EQ(r["dev"], majmin);
        uint64_t id = r["object_id"];
        uint64_t slot_off = kMiB + id * slot;
        EXPECT_LT(r["ts_start"].get<uint64_t>(), r["ts"].get<uint64_t>());
        EXPECT_EQ(r["trace_id"].get<uint64_t>(), i);  // qd 1 / posix: completion order == seq order
        if (r["op"] == "store") {
            ++stores;
            EXPECT_EQ(r["bytes"].get<uint64_t>(), 4096 + kTinyObject);
            EXPECT_EQ(r["transfers"].get<uint64_t>(), 1 + (kTinyObject + cap - 1) / cap);
            if (part_or_file_base != UINT64_MAX) {
                EXPECT_EQ(r["dev_off"].get<uint64_t>(), part_or_file_base + slot_off);
                ASSERT_EQ(r["extents"].size(), 1u);
                EXPECT_EQ(r["extents"][0][1].get<uint64_t>(), 4096 + kTinyObject);
            }
            store_sum[id] = r["checksum"];
            store_gen[id] = r["trace_id"];
        } else {
            ++loads;
            EXPECT_EQ(r["bytes"].get<uint64_t>(), kTinyObject);
            EXPECT_EQ(r["transfers"].get<uint64_t>(), (kTinyObject + cap - 1) / cap);
            if (part_or_file_base != UINT64_MAX) {
                EXPECT_EQ(r["dev_off"].get<uint64_t>(), part_or_file_base + slot_off + 4096);
            }
            // What was read back equals what was stored, which equals the pattern's checksum.
            EXPECT_EQ(r["checksum"], store_sum[id]);
            ASSERT_TRUE(store_gen.count(id));
            EXPECT_EQ(r["checksum"], hex_sum(pattern_checksum(id, store_gen[id], kTinyObject, Verify::Stamps)));
            if (raw_check) {
                auto bytes = read_extents(dev, r);
                ASSERT_EQ(bytes.size(), kTinyObject);
                EXPECT_EQ(verify_pattern(bytes.data(), id, store_gen[id], 0, bytes.size()), UINT64_MAX)
                    << "object " << id;
            }
        }
    }
    EXPECT_EQ(stores, nobj);
    EXPECT_EQ(loads, nobj);
}

}  // namespace

TEST(WorkloadGeometry, CliKnownAnswers) {
    auto r = run(kvio_bin() + " geometry --model llama3.1-8b --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = json::parse(r.out);
    EXPECT_EQ(j["bytes_per_token"], 131072u);
    EXPECT_EQ(j["object_bytes"], 32u << 20);
    EXPECT_EQ(j["per_rank_bytes"], 32u << 20);
    r = run(kvio_bin() + " geometry --hf-config tests/fixtures/llama3.1-8b.config.json --tp 4 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["per_rank_bytes"], 8u << 20);
    r = run(kvio_bin() + " geometry --model deepseek-v3 --tp 8");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("70272"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("replicated"), std::string::npos) << r.out;
}

TEST(WorkloadGen, SlotsOnLoopPosixDirect) {
    LoopDevice loop(96 * kMiB);
    TempDir d;
    auto r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 4 --target " + loop.path + " --semantic " +
                 d.file("s.jsonl") + " --record " + d.file("rec.json"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("verified against the pattern: ok"), std::string::npos) << r.out;
    check_slots(d.file("s.jsonl"), loop.path, loop.majmin, 0, 4, expected_cap(loop.name));
    // The slot header names the object.
    auto h = read_raw(loop.path, kMiB + 2 * (4096 + kTinyObject), 4096);
    SlotHeader sh;
    std::memcpy(&sh, h.data(), sizeof sh);
    EXPECT_EQ(std::string(sh.magic, 8), "KVIOSLT1");
    EXPECT_EQ(sh.object_id, 2u);
    EXPECT_EQ(sh.payload_bytes, kTinyObject);
    EXPECT_EQ(sh.trace_id, 3u);  // store-then-load: object 2 is the third store
    EXPECT_EQ(sh.checksum, pattern_checksum(2, 3, kTinyObject, Verify::Stamps));

    // The manifest plans the same ops at the same offsets.
    Record rec = record_from_json(kvio::read_json_file(d.file("rec.json")), "rec.json");
    EXPECT_EQ(rec.device.max_io_bytes, expected_cap(loop.name));
    EXPECT_EQ(rec.device.slot_bytes, 4096 + kTinyObject);
    auto ops = plan_ops(rec);
    auto lines = read_jsonl(d.file("s.jsonl"));
    ASSERT_EQ(ops.size() + 1, lines.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(lines[i + 1]["op"], op_name(ops[i].op));
        EXPECT_EQ(lines[i + 1]["object_id"].get<uint64_t>(), ops[i].object_id);
        EXPECT_EQ(lines[i + 1]["dev_off"].get<uint64_t>(), ops[i].offset);
    }
}

TEST(WorkloadGen, SlotsOnLoopIoUringQd4Interleaved) {
    LoopDevice loop(96 * kMiB);
    TempDir d;
    auto r = run(kvio_bin() +
                 " gen -q --model llama3.2-1b --num-chunks 4 --engine io_uring --qd 4 --pattern interleaved --target " +
                 loop.path + " --semantic " + d.file("s.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    auto lines = read_jsonl(d.file("s.jsonl"));
    ASSERT_EQ(lines.size(), 9u);
    EXPECT_EQ(lines[0]["engine"], "io_uring");
    EXPECT_EQ(lines[0]["qd"], 4);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto& x = lines[i];
        EXPECT_FALSE(x.contains("error")) << x.dump();
        // interleaved: store i, load i -> trace ids 2i+1 (store) and 2i+2 (load)
        uint64_t id = x["object_id"];
        EXPECT_EQ(x["trace_id"].get<uint64_t>(), 2 * id + (x["op"] == "store" ? 1 : 2));
        uint64_t slot_off = kMiB + id * (4096 + kTinyObject);
        EXPECT_EQ(x["dev_off"].get<uint64_t>(), slot_off + (x["op"] == "load" ? 4096 : 0));
        if (x["op"] == "load") {
            EXPECT_EQ(x["checksum"], hex_sum(pattern_checksum(id, 2 * id + 1, kTinyObject, Verify::Stamps)));
            auto bytes = read_extents(loop.path, x);
            EXPECT_EQ(verify_pattern(bytes.data(), id, 2 * id + 1, 0, bytes.size()), UINT64_MAX);
        }
    }
}

TEST(WorkloadGen, BufferedAndMaxIoAndTp) {
    LoopDevice loop(64 * kMiB);
    TempDir d;
    // llama3.1-8b, 16 tokens, TP 2: 2 MiB chunks -> 2 objects of 1 MiB each per chunk; 128 KiB transfers.
    auto r =
        run(kvio_bin() +
            " gen -q --model llama3.1-8b --chunk-tokens 16 --tp 2 --num-chunks 3 --buffered --max-io 131072 --target " +
            loop.path + " --semantic " + d.file("s.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    auto lines = read_jsonl(d.file("s.jsonl"));
    ASSERT_EQ(lines.size(), 1u + 2 * 6);
    EXPECT_EQ(lines[0]["max_io_bytes"], 131072);
    EXPECT_EQ(lines[0]["buffered"], true);
    EXPECT_EQ(lines[0]["geometry"]["per_rank_bytes"], kMiB);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto& x = lines[i];
        EXPECT_FALSE(x.contains("error")) << x.dump();
        EXPECT_EQ(x["transfers"].get<uint64_t>(), x["op"] == "store" ? 9u : 8u);
        EXPECT_EQ(x["dev_off"].get<uint64_t>(),
                  kMiB + x["object_id"].get<uint64_t>() * (4096 + kMiB) + (x["op"] == "load" ? 4096 : 0));
    }
    EXPECT_EQ(lines[6]["key"], "kvio/llama3.1-8b/tp2/rank1/chunk2");
}

TEST(WorkloadGen, FilesOnExt4MatchFiemapAndDevice) {
    Ext4Mount fs(192 * kMiB);
    std::string dir = fs.mnt + "/kv";
    std::filesystem::create_directory(dir);
    TempDir d;
    for (std::string engine : {"posix", "io_uring"}) {
        SCOPED_TRACE(engine);
        auto r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 4 --qd 4 --engine " + engine +
                     " --target " + dir + " --semantic " + d.file("f.jsonl"));
        ASSERT_EQ(r.status, 0) << r.err << r.out;
        auto lines = read_jsonl(d.file("f.jsonl"));
        ASSERT_EQ(lines.size(), 9u);
        EXPECT_EQ(lines[0]["layout"], "files");
        EXPECT_EQ(lines[0]["max_io_bytes"].get<uint64_t>(), expected_cap(fs.loop.name));
        for (size_t i = 1; i < lines.size(); ++i) {
            const auto& x = lines[i];
            SCOPED_TRACE(x.dump());
            EXPECT_FALSE(x.contains("error"));
            EXPECT_EQ(x["dev"], fs.loop.majmin);
            uint64_t sum = 0;
            for (const auto& e : x["extents"]) sum += e[1].get<uint64_t>();
            EXPECT_EQ(sum, kTinyObject);
            EXPECT_EQ(x["dev_off"], x["extents"][0][0]);
            // The bytes at the FIEMAP offsets on the raw device are the object's pattern.
            uint64_t id = x["object_id"];
            auto bytes = read_extents(fs.loop.path, x);
            EXPECT_EQ(verify_pattern(bytes.data(), id, id + 1, 0, bytes.size()),
                      UINT64_MAX);  // store trace id = id + 1
            EXPECT_EQ(x["checksum"], hex_sum(pattern_checksum(id, id + 1, kTinyObject, Verify::Stamps)));
        }
        EXPECT_EQ(std::filesystem::file_size(dir + "/kvobj-3.bin"), kTinyObject);
    }
}

TEST(WorkloadGen, RegularFileSlotsOnExt4) {
    Ext4Mount fs(96 * kMiB);
    std::string img = fs.mnt + "/slots.img";
    { std::ofstream(img).put('\0'); }
    std::filesystem::resize_file(img, 0);
    TempDir d;
    auto r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 4 --engine io_uring --qd 2 --target " + img +
                 " --semantic " + d.file("s.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_GE(std::filesystem::file_size(img), kMiB + 4 * (4096 + kTinyObject));  // fallocate grew it
    auto lines = read_jsonl(d.file("s.jsonl"));
    ASSERT_EQ(lines.size(), 9u);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto& x = lines[i];
        EXPECT_FALSE(x.contains("error")) << x.dump();
        if (x["op"] != "load") continue;
        auto bytes = read_extents(fs.loop.path, x);
        uint64_t id = x["object_id"];
        EXPECT_EQ(verify_pattern(bytes.data(), id, id + 1, 0, bytes.size()), UINT64_MAX) << x.dump();
    }
}

TEST(WorkloadGen, Refusals) {
    LoopDevice loop(32 * kMiB);
    std::string gen = kvio_bin() + " gen -q --num-chunks 1 ";
    // bad model name lists the known ones
    auto r = run(gen + "--model llama-9000 --target " + loop.path);
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("unknown model 'llama-9000'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("qwen3-32b"), std::string::npos) << r.err;
    // missing target
    r = run(gen + "--model llama3.2-1b --target /dev/kvio-no-such-device");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    // uring_cmd on a block device; cufile not built
    r = run(gen + "--model llama3.2-1b --engine uring_cmd --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/dev/ngXnY"), std::string::npos) << r.err;
    r = run(gen + "--model llama3.2-1b --engine cufile --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("not built in"), std::string::npos) << r.err;
    // too small a device
    r = run(gen + "--model llama2-7b --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("lower --num-chunks"), std::string::npos) << r.err;
    // non-empty first MiB: refused, then --force writes
    run("printf 'KVIO' | dd of=" + loop.path + " bs=1 seek=5000 conv=notrunc status=none");
    r = run(gen + "--model llama3.2-1b --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("byte 5000"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
    r = run(gen + "--model llama3.2-1b --force --target " + loop.path);
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST(WorkloadGen, RefusesMountedDeviceEvenWithForce) {
    Ext4Mount fs(32 * kMiB);
    auto r = run(kvio_bin() + " gen -q --num-chunks 1 --model llama3.2-1b --force --target " + fs.loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("mounted on " + fs.mnt), std::string::npos) << r.err;
}

TEST(WorkloadGen, PartitionOffsetsAreWholeDisk) {
    LoopDevice loop(64 * kMiB);
    // An MBR with one partition starting at sector 4096 (2 MiB), added with partx (BLKPG).
    std::vector<unsigned char> mbr(512, 0);
    const uint32_t start = 4096, sectors = 131072 - 4096;
    mbr[446 + 4] = 0x83;
    std::memcpy(&mbr[446 + 8], &start, 4);
    std::memcpy(&mbr[446 + 12], &sectors, 4);
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    {
        int fd = ::open(loop.path.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::pwrite(fd, mbr.data(), 512, 0), 512);
        ::close(fd);
    }
    auto r = run("partx -a " + loop.path);
    ASSERT_EQ(r.status, 0) << r.err;
    std::string part = loop.path + "p1";
    TempDir d;
    r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 2 --target " + part + " --semantic " +
            d.file("s.jsonl"));
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    auto lines = read_jsonl(d.file("s.jsonl"));
    EXPECT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[0]["dev"], loop.majmin);  // the whole disk, not the partition
    EXPECT_EQ(lines[0]["part_start_bytes"], 2 * kMiB);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto& x = lines[i];
        uint64_t id = x["object_id"];
        uint64_t expect = 2 * kMiB + kMiB + id * (4096 + kTinyObject) + (x["op"] == "load" ? 4096 : 0);
        EXPECT_EQ(x["dev_off"].get<uint64_t>(), expect) << x.dump();
        if (x["op"] == "load") {
            auto bytes = read_extents(loop.path, x);  // read through the whole disk
            EXPECT_EQ(verify_pattern(bytes.data(), id, id + 1, 0, bytes.size()), UINT64_MAX);
        }
    }
    // The whole disk now holds a partition table in its first MiB: refused without --force.
    r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 1 --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("byte 450"), std::string::npos) << r.err;
    run("partx -d " + loop.path);
}

TEST(WorkloadGen, VerifyFullOnLoop) {
    LoopDevice loop(64 * kMiB);
    TempDir d;
    auto r =
        run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 3 --engine io_uring --qd 4 --verify full --target " +
            loop.path + " --semantic " + d.file("s.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("verified against the pattern: ok (verify full: every byte)"), std::string::npos) << r.out;
    auto lines = read_jsonl(d.file("s.jsonl"));
    ASSERT_EQ(lines.size(), 7u);
    EXPECT_EQ(lines[0]["verify"], "full");
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto& x = lines[i];
        EXPECT_FALSE(x.contains("error")) << x.dump();
        uint64_t id = x["object_id"];
        // Full checksums cover every word: store and load both equal the pattern's.
        EXPECT_EQ(x["checksum"], hex_sum(pattern_checksum(id, id + 1, kTinyObject, Verify::Full))) << x.dump();
    }
    r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 1 --verify crc --target " + loop.path);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--verify"), std::string::npos) << r.err;
}

namespace {

/// Store-then-load of 3 tiny objects (1 MiB payload, 4 KiB header, 128 KiB transfers) on `dev` with
/// the posix engine (O_DIRECT); after the last store, `between()` runs, then the loads.
std::vector<OpResult> store_then_load(const std::string& dev, Verify v, const std::function<void()>& between) {
    constexpr uint64_t io = kMiB, hdr = 4096, slot = hdr + io;
    std::vector<ObjectOp> ops;
    for (int k = 0; k < 2; ++k)
        for (uint64_t id = 0; id < 3; ++id) {
            ObjectOp o;
            o.op = k == 0 ? OpKind::Store : OpKind::Load;
            o.object_id = id;
            o.trace_id = uint32_t(ops.size() + 1);
            o.key = "obj" + std::to_string(id);
            o.payload_bytes = o.io_bytes = io;
            o.header_bytes = k == 0 ? hdr : 0;
            o.offset = kMiB + id * slot + (k == 0 ? 0 : hdr);
            ops.push_back(o);
        }
    EngineConfig ec;
    ec.name = "posix";
    auto engine = make_engine(ec);
    ExecOptions eo;
    eo.max_io_bytes = 128 * 1024;
    eo.verify = v;
    eo.on_done = [&](size_t index, const ObjectOp&, OpResult&, int) {
        if (index == 2) between();
    };
    return execute(ops, *engine, dev, Layout::Slots, eo);
}

/// Overwrites `len` bytes at `off` of the loop device's backing file (not through the loop device).
void poke_backing(const LoopDevice& loop, uint64_t off, const void* bytes, size_t len) {
    int fd = ::open(loop.backing.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << loop.backing;
    ASSERT_EQ(::pwrite(fd, bytes, len, off_t(off)), ssize_t(len));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
}

}  // namespace

// Bytes changed on the medium between a store and its load (here: in the loop device's backing file)
// fail that load: the default stamps check catches a zeroed 4 KiB block, the full check also a single
// flipped byte in the middle of a block, which the stamps check cannot see.
TEST(WorkloadExecute, CorruptionBetweenStoreAndLoadFailsTheLoad) {
    constexpr uint64_t slot = 4096 + kMiB;
    auto payload = [&](uint64_t id) { return kMiB + id * slot + 4096; };
    for (Verify v : {Verify::Stamps, Verify::Full}) {
        SCOPED_TRACE(verify_name(v));
        LoopDevice loop(8 * kMiB);
        auto res = store_then_load(loop.path, v, [&] {
            std::vector<char> zero(4096, 0);
            poke_backing(loop, payload(1) + 40 * 4096, zero.data(), zero.size());  // object 1, block 40: lost
            auto b = read_raw(loop.path, payload(2) + 7 * 4096 + 2048, 512);       // object 2, block 7: one bit
            b[100] ^= 0x04;
            poke_backing(loop, payload(2) + 7 * 4096 + 2048, b.data(), b.size());
        });
        ASSERT_EQ(res.size(), 6u);
        for (size_t i = 0; i < 3; ++i) EXPECT_EQ(res[i].error, "") << i;
        EXPECT_EQ(res[3].error, "");
        EXPECT_EQ(res[3].checksum, res[0].checksum);
        EXPECT_NE(res[4].error.find(std::string("payload mismatch (verify ") + verify_name(v) +
                                    ") in object 1: block at payload byte 163840 holds no valid stamp"),
                  std::string::npos)
            << res[4].error;
        EXPECT_NE(res[4].checksum, res[1].checksum);
        if (v == Verify::Stamps) {
            EXPECT_EQ(res[5].error, "");  // the cheap check reads 32 bytes of each block, not byte 2148 of it
            EXPECT_EQ(res[5].checksum, res[2].checksum);
        } else {
            EXPECT_NE(
                res[5].error.find("in object 2: block at payload byte 28672 holds object 2, offset 28672, generation 3 "
                                  "(expected object 2, offset 28672, generation 3); first differing byte 30820"),
                std::string::npos)
                << res[5].error;
            EXPECT_NE(res[5].checksum, res[2].checksum);
        }
    }
}
