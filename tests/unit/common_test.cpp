#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/devinfo.h"
#include "common/histogram.h"
#include "common/jsonl.h"
#include "common/output_file.h"

using namespace kvio;

TEST(DevId, KernelDevRoundTrip) {
    // include/linux/kdev_t.h: MINORBITS 20
    EXPECT_EQ(kernel_dev(DevId{259, 3}), (259u << 20) | 3u);
    EXPECT_EQ(decode_kernel_dev((7u << 20) | 12u), (DevId{7, 12}));
    EXPECT_EQ(decode_kernel_dev(kernel_dev(DevId{4095, 1048575})), (DevId{4095, 1048575}));
}

TEST(DevId, ParseAndPrint) {
    EXPECT_EQ(parse_dev_string("254:0"), (DevId{254, 0}));
    EXPECT_EQ(dev_string(DevId{7, 3}), "7:3");
    EXPECT_FALSE(parse_dev_string("254"));
    EXPECT_FALSE(parse_dev_string("a:b"));
    EXPECT_FALSE(parse_dev_string("1:2x"));
    EXPECT_FALSE(parse_dev_string(":2"));
}

TEST(DevInfo, RootDiskFromSysfs) {
    auto info = block_dev_info_for_path("/");
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.logical_block_size, 512u);
    EXPECT_GT(info.max_sectors_kb, 0u);
    EXPECT_GT(info.size_bytes, 0u);
    auto again = find_block_dev(info.name);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->dev, info.dev);
    EXPECT_THROW(block_dev_info(DevId{4095, 99999}), Error);
}

namespace {
/// A fake sysfs queue directory with `files` (name -> text), removed with the object.
struct FakeQueueDir {
    std::string dir;
    explicit FakeQueueDir(const std::vector<std::pair<std::string, std::string>>& files) {
        char tmpl[] = "/tmp/kvio-unit-queue-XXXXXX";
        dir = ::mkdtemp(tmpl);
        for (const auto& [name, text] : files) std::ofstream(dir + "/" + name) << text << "\n";
    }
    ~FakeQueueDir() { std::filesystem::remove_all(dir); }
};
}  // namespace

TEST(DevInfo, VirtioBlkLimitIsClampedToWhatACommandCarries) {
    // /sys/block/vda/queue of a KVM guest's virtio-blk disk: max_hw_sectors_kb is 2147483647 ("no limit").
    FakeQueueDir q({{"max_hw_sectors_kb", "2147483647"},
                    {"max_sectors_kb", "4096"},
                    {"max_segments", "254"},
                    {"max_segment_size", "4294967295"},
                    {"logical_block_size", "512"},
                    {"physical_block_size", "4096"},
                    {"nr_requests", "256"}});
    BlockDevInfo info;
    read_queue_limits(q.dir, info);
    EXPECT_EQ(info.max_hw_sectors_kb, kMaxCommandKb);
    EXPECT_EQ(info.max_sectors_kb, 4096u);
    EXPECT_EQ(info.max_segments, 254u);
    EXPECT_EQ(info.max_segment_size, 4294967295u);
    EXPECT_EQ(info.physical_block_size, 4096u);
    EXPECT_EQ(info.nr_requests, 256u);
    // What gen, replay and simulate write as mdts_bytes: a multiple of 512 within the 32-bit request length.
    const uint64_t mdts = uint64_t(info.max_hw_sectors_kb) * 1024;
    EXPECT_EQ(mdts % 512, 0u);
    EXPECT_LE(mdts, uint64_t(UINT32_MAX));
    // A value past 32 bits (a kernel that widened the field) is clamped too, not truncated to its low bits.
    FakeQueueDir wide({{"max_hw_sectors_kb", "8589934592"}, {"max_sectors_kb", "5000000"}});
    read_queue_limits(wide.dir, info);
    EXPECT_EQ(info.max_hw_sectors_kb, kMaxCommandKb);
    EXPECT_EQ(info.max_sectors_kb, kMaxCommandKb);
    EXPECT_EQ(info.logical_block_size, 512u);  // absent: the default
}

TEST(DevInfo, TheRootDiskLimitsFitACommand) {
    // On this machine's virtio-blk root disk the raw value is 2147483647; read through block_dev_info it fits.
    auto info = block_dev_info_for_path("/");
    EXPECT_LE(info.max_hw_sectors_kb, kMaxCommandKb);
    EXPECT_LE(info.max_sectors_kb, kMaxCommandKb);
}

TEST(Histogram, Log2SlotBounds) {
    EXPECT_EQ(log2_slot(0), 0u);
    EXPECT_EQ(log2_slot(1), 1u);
    EXPECT_EQ(log2_slot(2), 2u);
    EXPECT_EQ(log2_slot(3), 2u);
    EXPECT_EQ(log2_slot(131072), 18u);
    Histogram h(HistKind::Log2, "bytes", 64);
    EXPECT_EQ(h.slot_lo(0), 0u);
    EXPECT_EQ(h.slot_hi(0), 1u);
    EXPECT_EQ(h.slot_lo(18), 131072u);
    EXPECT_EQ(h.slot_hi(18), 262144u);
    for (size_t i = 1; i < 63; ++i) {
        EXPECT_EQ(log2_slot(h.slot_lo(i)), i);
        EXPECT_EQ(log2_slot(h.slot_hi(i) - 1), i);
    }
}

// The slot rules are defined once (bpf/kvio_trace.h) for the BPF programs and Histogram: checked here against
// their plain definitions (bit length; quotient) around every power of two.
TEST(Histogram, SharedSlotRulesMatchTheirDefinitions) {
    static_assert(kvio_log2_slot(0) == 0 && kvio_log2_slot(1) == 1 && kvio_log2_slot(~uint64_t(0)) == 64);
    auto bit_length = [](uint64_t v) {
        unsigned k = 0;
        while (v) {
            ++k;
            v >>= 1;
        }
        return k;
    };
    for (unsigned b = 0; b < 64; ++b) {
        const uint64_t p = uint64_t(1) << b;
        for (uint64_t v : {p - 1, p, p + 1, p | (p >> 1), ~uint64_t(0) >> (63 - b)}) {
            EXPECT_EQ(kvio_log2_slot(v), bit_length(v)) << v;
            Histogram h(HistKind::Log2, "ns", KVIO_HIST_SLOTS);
            h.add(v, 1);
            EXPECT_EQ(h.slot(bit_length(v)), 1u) << v;
            for (uint64_t width : {uint64_t(1), uint64_t(4096), uint64_t(10) << 30})
                EXPECT_EQ(kvio_linear_slot(v, width), v / width) << v << " / " << width;
            EXPECT_EQ(kvio_linear_slot(v, 0), v) << "width 0 counts as 1";
        }
    }
}

TEST(Histogram, LinearClampsAndJsonRoundTrip) {
    Histogram h(HistKind::Linear, "cmds", 8, 1);
    h.add(0);
    h.add(3, 2);
    h.add(100);  // clamps into the last slot
    EXPECT_EQ(h.count(), 4u);
    EXPECT_EQ(h.sum(), 106u);
    EXPECT_EQ(h.slot(7), 1u);
    auto j = h.to_json();
    EXPECT_EQ(j["buckets"].size(), 3u);
    EXPECT_EQ(j["buckets"][1], nlohmann::json({3, 4, 2}));
    auto back = Histogram::from_json(j, HistKind::Linear, 8, 1);
    EXPECT_EQ(back.count(), 4u);
    EXPECT_EQ(back.slot(3), 2u);
}

TEST(Histogram, QuantileInterpolates) {
    Histogram h(HistKind::Linear, "ns", 10, 10);
    for (int i = 0; i < 10; ++i) h.add(15);  // all in [10,20)
    EXPECT_DOUBLE_EQ(h.quantile(0.5), 15.0);
    EXPECT_DOUBLE_EQ(h.quantile(1.0), 20.0);
}

TEST(Jsonl, ErrorsNameFileLineField) {
    char path[] = "/tmp/kvio-jsonl-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text = "{\"a\":1}\n\n{\"a\":-2}\nnot json\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    JsonlReader r(path);
    json j;
    ASSERT_TRUE(r.next(j));
    EXPECT_EQ(get_u64(j, "a", r.source()), 1u);
    ASSERT_TRUE(r.next(j));
    EXPECT_EQ(r.source().line, 3u);
    try {
        get_u64(j, "a", r.source());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).find(std::string(path) + ":3: field 'a'"), 0u) << e.what();
    }
    try {
        get_string(j, "missing", r.source());
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("field 'missing': missing"), std::string::npos);
    }
    EXPECT_THROW(r.next(j), Error);
    unlink(path);
}

// Found by tests/fuzz/fuzz_hf_config.cpp: a number beyond double made nlohmann throw out_of_range, which the
// readers did not catch ("internal error" instead of "FILE: not valid JSON").
TEST(Jsonl, NumberBeyondDoubleIsNotValidJson) {
    char path[] = "/tmp/kvio-jsonl-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text = "{\"a\":1e400}\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    try {
        read_json_file(path);
        ADD_FAILURE() << "read_json_file accepted 1e400";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).find(std::string(path) + ": not valid JSON ("), 0u) << e.what();
    }
    JsonlReader r(path);
    json j;
    try {
        r.next(j);
        ADD_FAILURE() << "JsonlReader accepted 1e400";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).find(std::string(path) + ":1: not valid JSON ("), 0u) << e.what();
    }
    unlink(path);
}
