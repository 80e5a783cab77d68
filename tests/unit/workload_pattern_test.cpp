// The fake KV payload (workload/pattern.h): stamped 4 KiB blocks, the stamps and full checks, the
// checksums; and the executor's load verification on a RAM-backed engine whose "device" the tests
// corrupt between a store and its load (lost, misdirected, stale and bit-flipped blocks).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "workload/engine.h"
#include "workload/execute.h"
#include "workload/pattern.h"

using namespace kvio;
using namespace kvio::workload;

namespace {

constexpr uint64_t kBlk = kStampBlockBytes;

std::vector<uint64_t> filled(uint64_t id, uint64_t gen, uint64_t off, size_t len) {
    std::vector<uint64_t> v(len / 8);
    fill_pattern(v.data(), id, gen, off, len);
    return v;
}

}  // namespace

TEST(Pattern, StampsNameTheBlockAndEveryBlockIsUnique) {
    auto a = filled(7, 3, 0, 3 * kBlk);
    // Word 0..2 of each block: object, block offset, generation; word 3 the check word.
    for (uint64_t b = 0; b < 3; ++b) {
        const uint64_t* w = a.data() + b * kBlk / 8;
        EXPECT_EQ(w[0], 7u);
        EXPECT_EQ(w[1], b * kBlk);
        EXPECT_EQ(w[2], 3u);
        EXPECT_EQ(w[3], stamp_check(7, b * kBlk, 3));
        EXPECT_EQ(pattern_word(7, 3, b * kBlk + 8), b * kBlk);
    }
    // Beyond the stamp every block holds the same base block (what makes filling cheap) ...
    EXPECT_EQ(std::memcmp(a.data() + 4, a.data() + kBlk / 8 + 4, kBlk - kStampBytes), 0);
    // ... and the base is not a constant: no 8-byte value repeats inside one block.
    std::set<uint64_t> words(a.begin() + 4, a.begin() + kBlk / 8);
    EXPECT_EQ(words.size(), kBlk / 8 - 4);
    // Blocks differing in object, offset or generation all differ.
    std::set<std::string> blocks;
    for (uint64_t id : {1, 2})
        for (uint64_t gen : {1, 2})
            for (uint64_t off : {uint64_t(0), kBlk}) {
                auto b = filled(id, gen, off, kBlk);
                blocks.insert(std::string(reinterpret_cast<const char*>(b.data()), kBlk));
            }
    EXPECT_EQ(blocks.size(), 8u);
}

TEST(Pattern, PiecesAtAnyOffsetMatchTheWhole) {
    const size_t len = 3 * kBlk + 512;  // a payload that ends inside a block (io_bytes is LBA-rounded)
    auto whole = filled(42, 9, 0, len);
    // A piece filled at an offset that is not a multiple of 4 KiB equals that slice of the whole.
    auto piece = filled(42, 9, 1536, 6144);
    EXPECT_EQ(std::memcmp(piece.data(), whole.data() + 1536 / 8, 6144), 0);
    // fill_base + stamp_pattern = fill_pattern.
    std::vector<uint64_t> two(len / 8);
    fill_base(two.data(), 0, len);
    stamp_pattern(two.data(), 42, 9, 0, len);
    EXPECT_EQ(two, whole);
    for (Verify v : {Verify::Stamps, Verify::Full}) {
        SCOPED_TRACE(verify_name(v));
        EXPECT_EQ(verify_pattern(whole.data(), 42, 9, 0, len, v), UINT64_MAX);
        EXPECT_EQ(verify_pattern(piece.data(), 42, 9, 1536, 6144, v), UINT64_MAX);
        // Checksums of pieces sum to the whole, which equals the pattern checksum.
        uint64_t sum = checksum(whole.data(), 0, len, v);
        EXPECT_EQ(checksum(whole.data(), 0, 1536, v) + checksum(piece.data(), 1536, 6144, v) +
                      checksum(whole.data() + 7680 / 8, 7680, len - 7680, v),
                  sum);
        EXPECT_EQ(pattern_checksum(42, 9, len, v), sum);
        EXPECT_NE(pattern_checksum(42, 10, len, v), sum);  // another generation
        EXPECT_NE(pattern_checksum(41, 9, len, v), sum);   // another object
    }
    EXPECT_NE(pattern_checksum(42, 9, len, Verify::Stamps), pattern_checksum(42, 9, len, Verify::Full));
    EXPECT_EQ(stamp_generation(whole.data(), 0, len), 9u);
    EXPECT_EQ(stamp_generation(whole.data() + 1, 8, 16), 9u);     // [8, 24) holds word 2 of block 0
    EXPECT_EQ(stamp_generation(whole.data() + 4, 32, 4064), 0u);  // [32, 4096) holds no stamp
}

TEST(Pattern, StampsCatchBlockFaultsFullCatchesAFlippedByte) {
    const size_t len = 4 * kBlk;
    auto good = filled(5, 2, 0, len);
    // Wrong object or generation: the first stamp word that differs.
    EXPECT_EQ(verify_pattern(good.data(), 6, 2, 0, len, Verify::Stamps), 0u);
    EXPECT_EQ(verify_pattern(good.data(), 5, 1, 0, len, Verify::Stamps), 16u);
    // A zeroed (lost) block 2.
    auto v = good;
    std::memset(v.data() + 2 * kBlk / 8, 0, kBlk);
    for (Verify m : {Verify::Stamps, Verify::Full}) EXPECT_EQ(verify_pattern(v.data(), 5, 2, 0, len, m), 2 * kBlk);
    EXPECT_NE(describe_block(v.data(), 5, 2, 0, len, 2 * kBlk).find("holds no valid stamp"), std::string::npos);
    // Block 1 replaced by block 1 of object 4 (a misdirected write).
    v = good;
    auto other = filled(4, 2, kBlk, kBlk);
    std::memcpy(v.data() + kBlk / 8, other.data(), kBlk);
    EXPECT_EQ(verify_pattern(v.data(), 5, 2, 0, len, Verify::Stamps), kBlk);
    EXPECT_EQ(describe_block(v.data(), 5, 2, 0, len, kBlk),
              "block at payload byte 4096 holds object 4, offset 4096, generation 2 (expected object 5, offset 4096, "
              "generation 2)");
    // Blocks 1 and 3 swapped (a write landed at the wrong offset).
    v = good;
    std::memcpy(v.data() + kBlk / 8, good.data() + 3 * kBlk / 8, kBlk);
    EXPECT_EQ(verify_pattern(v.data(), 5, 2, 0, len, Verify::Stamps), kBlk + 8);
    // One flipped byte in the middle of block 3: outside the stamps, so only the full check sees it,
    // at its exact word, and only the full checksum changes.
    v = good;
    reinterpret_cast<unsigned char*>(v.data())[3 * kBlk + 2000] ^= 0x10;
    EXPECT_EQ(verify_pattern(v.data(), 5, 2, 0, len, Verify::Stamps), UINT64_MAX);
    EXPECT_EQ(checksum(v.data(), 0, len, Verify::Stamps), checksum(good.data(), 0, len, Verify::Stamps));
    EXPECT_EQ(verify_pattern(v.data(), 5, 2, 0, len, Verify::Full), 3 * kBlk + 2000);
    EXPECT_NE(checksum(v.data(), 0, len, Verify::Full), checksum(good.data(), 0, len, Verify::Full));
    EXPECT_NE(describe_block(v.data(), 5, 2, 0, len, 3 * kBlk + 2000).find("first differing byte 14288"),
              std::string::npos);
}

TEST(Pattern, ParseVerify) {
    EXPECT_EQ(parse_verify("stamps"), Verify::Stamps);
    EXPECT_EQ(parse_verify("full"), Verify::Full);
    EXPECT_STREQ(verify_name(Verify::Full), "full");
    EXPECT_THROW(parse_verify("crc"), Error);
}

// ---------------------------------------------------------------- executor on a RAM "device"

namespace {

/// An engine over a byte vector: transfers complete at once, in order. `on_write` may drop or alter
/// a write (return false: the bytes are not stored, the completion still says they were).
class RamEngine final : public Engine {
public:
    explicit RamEngine(uint64_t bytes) : Engine(EngineConfig{}), disk(bytes, 0) {}
    std::string name() const override { return "ram"; }
    int open(const std::string&, OpenFor, bool) override { return 3; }
    void close(int) override {}
    void queue(const IoUnit& u) override {
        if (u.write) {
            if (!on_write || on_write(u)) std::memcpy(disk.data() + u.offset, u.buf, u.len);
        } else {
            if (before_read) before_read(u);
            std::memcpy(u.buf, disk.data() + u.offset, u.len);
        }
        done_.push_back({u.user_data, int64_t(u.len), 0});
    }
    size_t reap(size_t, std::vector<IoCompletion>& out) override {
        size_t n = done_.size();
        out.insert(out.end(), done_.begin(), done_.end());
        done_.clear();
        return n;
    }
    std::vector<char> disk;
    std::function<bool(const IoUnit&)> on_write;
    std::function<void(const IoUnit&)> before_read;

private:
    std::vector<IoCompletion> done_;
};

constexpr uint64_t kIo = 64 * 1024 + 512;  // payload ends inside a 4 KiB block
constexpr uint64_t kHdr = 4096, kBase = 1 << 20;
constexpr uint64_t kSlot = (kHdr + kIo + 4095) / 4096 * 4096;

uint64_t payload_off(uint64_t id) { return kBase + id * kSlot + kHdr; }

ObjectOp make_op(OpKind k, uint64_t id, uint32_t trace) {
    ObjectOp o;
    o.op = k;
    o.object_id = id;
    o.trace_id = trace;
    o.key = "obj" + std::to_string(id);
    o.payload_bytes = o.io_bytes = kIo;
    o.header_bytes = k == OpKind::Store ? kHdr : 0;
    o.offset = kBase + id * kSlot + (k == OpKind::Store ? 0 : kHdr);
    return o;
}

/// n stores then n loads (trace ids 1..2n); interleaved: store i, load i.
std::vector<ObjectOp> stream(uint64_t n, bool interleaved = false) {
    std::vector<ObjectOp> v;
    uint32_t t = 1;
    if (interleaved) {
        for (uint64_t i = 0; i < n; ++i) {
            v.push_back(make_op(OpKind::Store, i, t++));
            v.push_back(make_op(OpKind::Load, i, t++));
        }
    } else {
        for (uint64_t i = 0; i < n; ++i) v.push_back(make_op(OpKind::Store, i, t++));
        for (uint64_t i = 0; i < n; ++i) v.push_back(make_op(OpKind::Load, i, t++));
    }
    return v;
}

std::vector<OpResult> run_ram(RamEngine& e, const std::vector<ObjectOp>& ops, uint32_t qd, uint64_t cap,
                              Verify v = Verify::Stamps, uint32_t buffers = 0) {
    ExecOptions o;
    o.qd = qd;
    o.buffers = buffers;
    o.max_io_bytes = cap;
    o.verify = v;
    return execute(ops, e, "ram", Layout::Slots, o);
}

}  // namespace

namespace {

/// One uncorrupted run: no errors, checksums = the pattern's, the exact pattern and header on the "device".
void check_clean_run(uint64_t cap, uint32_t qd, uint32_t buffers, bool inter, Verify v) {
    SCOPED_TRACE("cap " + std::to_string(cap) + " qd " + std::to_string(qd) + " buffers " + std::to_string(buffers) +
                 (inter ? " interleaved " : " ") + verify_name(v));
    RamEngine e(kBase + 4 * kSlot);
    auto ops = stream(4, inter);
    auto res = run_ram(e, ops, qd, cap, v, buffers);
    for (size_t i = 0; i < ops.size(); ++i) {
        const ObjectOp& op = ops[i];
        EXPECT_EQ(res[i].error, "") << i;
        const uint32_t gen = inter ? 2 * op.object_id + 1 : op.object_id + 1;  // the store's trace id
        EXPECT_EQ(res[i].checksum, pattern_checksum(op.object_id, gen, kIo, v)) << i;
        EXPECT_EQ(res[i].bytes, kIo + op.header_bytes);
    }
    for (uint64_t id = 0; id < 4; ++id) {
        const uint32_t gen = inter ? 2 * id + 1 : id + 1;
        EXPECT_EQ(verify_pattern(e.disk.data() + payload_off(id), id, gen, 0, kIo, Verify::Full), UINT64_MAX) << id;
        SlotHeader h;
        std::memcpy(&h, e.disk.data() + kBase + id * kSlot, sizeof h);
        EXPECT_EQ(std::string(h.magic, 8), "KVIOSLT1");
        EXPECT_EQ(h.trace_id, gen);
        EXPECT_EQ(h.checksum, pattern_checksum(id, gen, kIo, Verify::Stamps));
    }
}

}  // namespace

TEST(ExecuteVerify, CleanRunsStoreTheStampedPatternAndLoadsMatch) {
    // Caps that are and are not multiples of 4 KiB, QD 1 and 4, both patterns, both checks, the default
    // pool (2 × qd) and buffers = qd (too few for a store to always find a clean buffer, so dirtied
    // ones are refilled): reused buffers must always put the exact pattern on the device.
    for (uint64_t cap : {uint64_t(16384), uint64_t(5632), uint64_t(65536)})
        for (uint32_t qd : {1u, 4u})
            for (uint32_t buffers : {0u, qd})
                for (bool inter : {false, true})
                    for (Verify v : {Verify::Stamps, Verify::Full}) check_clean_run(cap, qd, buffers, inter, v);
}

TEST(ExecuteVerify, DefaultCheckFailsTheLoadOfACorruptedBlock) {
    RamEngine e(kBase + 3 * kSlot);
    auto ops = stream(3);
    bool done = false;
    e.before_read = [&](const IoUnit&) {
        if (done) return;  // between the last store and the first load: zero block 5 of object 1
        std::memset(e.disk.data() + payload_off(1) + 5 * kBlk, 0, kBlk);
        done = true;
    };
    auto res = run_ram(e, ops, 2, 16384);
    EXPECT_EQ(res[3].error, "");
    EXPECT_EQ(res[5].error, "");
    EXPECT_NE(res[4].error.find(
                  "payload mismatch (verify stamps) in object 1: block at payload byte 20480 holds no valid stamp"),
              std::string::npos)
        << res[4].error;
    EXPECT_NE(res[4].checksum, res[1].checksum);  // the stamp checksum of the load differs from its store's
    EXPECT_EQ(res[3].checksum, res[0].checksum);
}

TEST(ExecuteVerify, DefaultCheckCatchesAMisdirectedAndALostWrite) {
    // Object 2's store transfer at payload [16384, 32768) lands on object 0's slot instead.
    {
        RamEngine e(kBase + 3 * kSlot);
        e.on_write = [&](const IoUnit& u) {
            if (u.offset != payload_off(2) + 16384) return true;
            std::memcpy(e.disk.data() + payload_off(0) + 16384, u.buf, u.len);
            return false;
        };
        auto res = run_ram(e, stream(3), 1, 16384);
        EXPECT_NE(
            res[3].error.find("in object 0: block at payload byte 16384 holds object 2, offset 16384, generation 3 "
                              "(expected object 0, offset 16384, generation 1)"),
            std::string::npos)
            << res[3].error;
        EXPECT_NE(res[5].error.find("in object 2: block at payload byte 16384 holds no valid stamp"), std::string::npos)
            << res[5].error;
        EXPECT_EQ(res[4].error, "");
    }
    // Stale data: object 0 stored twice (trace ids 1, 3), the second store's payload is dropped,
    // so the device still holds generation 1 when load 4 expects generation 3.
    {
        RamEngine e(kBase + kSlot);
        std::vector<ObjectOp> ops{make_op(OpKind::Store, 0, 1), make_op(OpKind::Load, 0, 2),
                                  make_op(OpKind::Store, 0, 3), make_op(OpKind::Load, 0, 4)};
        e.on_write = [](const IoUnit& u) { return (u.user_data >> 32) != 3 || u.len == kHdr; };
        auto res = run_ram(e, ops, 1, 16384);
        EXPECT_EQ(res[1].error, "");
        EXPECT_NE(
            res[3].error.find("holds object 0, offset 0, generation 1 (expected object 0, offset 0, generation 3)"),
            std::string::npos)
            << res[3].error;
    }
}

TEST(ExecuteVerify, FullCheckCatchesOneFlippedByteInsideABlock) {
    for (Verify v : {Verify::Stamps, Verify::Full}) {
        SCOPED_TRACE(verify_name(v));
        RamEngine e(kBase + 2 * kSlot);
        bool done = false;
        e.before_read = [&](const IoUnit&) {
            if (!done) e.disk[payload_off(1) + 9 * kBlk + 2048] ^= 0x01;  // middle of block 9 of object 1
            done = true;
        };
        auto res = run_ram(e, stream(2), 1, 16384, v);
        if (v == Verify::Stamps) {
            // The documented limit of the cheap check: a byte outside the stamps is not read.
            EXPECT_EQ(res[3].error, "");
        } else {
            EXPECT_NE(res[3].error.find(
                          "payload mismatch (verify full) in object 1: block at payload byte 36864 holds object 1, "
                          "offset 36864, generation 2 (expected object 1, offset 36864, generation 2); first "
                          "differing byte 38912"),
                      std::string::npos)
                << res[3].error;
            EXPECT_NE(res[3].checksum, res[1].checksum);
        }
        EXPECT_EQ(res[2].error, "");
    }
}

TEST(ExecuteVerify, LoadWithoutStoreAdoptsTheGenerationItFinds) {
    RamEngine e(kBase + kSlot);
    auto first = run_ram(e, stream(1), 1, 16384);  // store trace 1, load trace 2
    ASSERT_EQ(first[1].error, "");
    // A second run that only loads: no store of object 0 before it in the stream.
    auto res = run_ram(e, {make_op(OpKind::Load, 0, 1)}, 1, 16384);
    EXPECT_EQ(res[0].error, "");
    EXPECT_EQ(res[0].checksum, pattern_checksum(0, 1, kIo, Verify::Stamps));
    // ... but a block from another generation inside it still fails.
    auto stale = filled(0, 7, 3 * kBlk, kBlk);
    std::memcpy(e.disk.data() + payload_off(0) + 3 * kBlk, stale.data(), kBlk);
    res = run_ram(e, {make_op(OpKind::Load, 0, 1)}, 1, 16384);
    EXPECT_NE(res[0].error.find("generation 7 (expected object 0, offset 12288, generation 1)"), std::string::npos)
        << res[0].error;
}

// The posix engine with --qd 4 (4 worker threads, completions out of order) on a regular file in
// /var/tmp (O_DIRECT): every load returns what its store wrote.
TEST(ExecuteVerify, PosixThreadsOnAFile) {
    char path[] = "/var/tmp/kvio-posix-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t(kBase + 8 * kSlot)), 0);
    ::close(fd);
    EngineConfig ec;
    ec.name = "posix";
    ec.qd = 4;
    auto engine = make_engine(ec);
    ExecOptions o;
    o.qd = 4;
    o.max_io_bytes = 8192;
    auto ops = stream(8, true);
    auto res = execute(ops, *engine, path, Layout::Slots, o);
    ::unlink(path);
    ASSERT_EQ(res.size(), ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(res[i].error, "") << i;
        EXPECT_EQ(res[i].checksum, pattern_checksum(ops[i].object_id, 2 * ops[i].object_id + 1, kIo, Verify::Stamps))
            << i;
        EXPECT_EQ(res[i].transfers, (kIo + 8191) / 8192 + (ops[i].op == OpKind::Store ? 1 : 0));
    }
}
