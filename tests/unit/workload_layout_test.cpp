// Slot arithmetic, op planning and the record manifest round trip (the payload pattern: workload_pattern_test.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/error.h"
#include "workload/record.h"

using namespace kvio;
using namespace kvio::workload;

namespace {
Geometry llama(uint32_t tp = 1) {
    GeometryOptions o;
    o.tp = tp;
    return compute_geometry(builtin_model("llama3.1-8b"), o);
}
DeviceGeometry slots(uint64_t payload, uint32_t lba = 512, uint32_t align = 4096) {
    DeviceGeometry d;
    d.engine = "posix";
    d.lba_bytes = lba;
    d.block_align = align;
    d.max_io_bytes = 512 * 1024;
    compute_layout(d, payload);
    return d;
}
}  // namespace

TEST(Layout, SlotArithmetic) {
    DeviceGeometry d = slots(32u << 20);
    EXPECT_EQ(d.header_bytes, 4096u);
    EXPECT_EQ(d.io_bytes, 32u << 20);
    EXPECT_EQ(d.slot_bytes, (32u << 20) + 4096);
    EXPECT_EQ(d.data_base, 1u << 20);
    EXPECT_EQ(slot_offset(d, 0), 1u << 20);
    EXPECT_EQ(slot_offset(d, 3), (1u << 20) + 3 * ((32u << 20) + 4096));
    // deepseek-v3 with 1 token: 70,272 B payload -> 70,656 B transferred (138 × 512), slot 4 KiB aligned.
    d = slots(70272);
    EXPECT_EQ(d.io_bytes, 70656u);
    EXPECT_EQ(d.slot_bytes, 77824u);  // round_up(4096 + 70656, 4096) = 19 × 4096
    // 4 KiB LBA: the payload rounds to 4 KiB.
    d = slots(70272, 4096);
    EXPECT_EQ(d.io_bytes, 73728u);
    EXPECT_THROW(slots(4096, 4096, 512), Error);  // alignment below the LBA size
    DeviceGeometry f;
    f.layout = Layout::Files;
    compute_layout(f, 1000);
    EXPECT_EQ(f.header_bytes, 0u);
    EXPECT_EQ(f.io_bytes, 1024u);
    EXPECT_EQ(object_file_name(7), "kvobj-7.bin");
}

TEST(Layout, PlanStoreThenLoad) {
    AccessPattern a;
    a.num_chunks = 3;
    a.iters = 2;
    Record r = make_record(llama(2), slots(16u << 20), a);
    ASSERT_EQ(r.objects.size(), 6u);
    EXPECT_EQ(r.objects[5].key, "kvio/llama3.1-8b/tp2/rank1/chunk2");
    EXPECT_EQ(r.objects[5].payload_bytes, 16u << 20);
    auto ops = plan_ops(r);
    ASSERT_EQ(ops.size(), 24u);
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i].trace_id, i + 1);
        EXPECT_EQ(ops[i].op, (i % 12) < 6 ? OpKind::Store : OpKind::Load);
        EXPECT_EQ(ops[i].object_id, i % 6);
        uint64_t slot = (1u << 20) + ops[i].object_id * ((16u << 20) + 4096);
        EXPECT_EQ(ops[i].offset, ops[i].op == OpKind::Store ? slot : slot + 4096);
        EXPECT_EQ(ops[i].header_bytes, ops[i].op == OpKind::Store ? 4096u : 0u);
    }
}

TEST(Layout, PlanInterleavedAndFiles) {
    AccessPattern a;
    a.num_chunks = 2;
    a.pattern = "interleaved";
    DeviceGeometry d;
    d.layout = Layout::Files;
    compute_layout(d, 32u << 20);
    auto ops = plan_ops(make_record(llama(), d, a));
    ASSERT_EQ(ops.size(), 4u);
    EXPECT_EQ(ops[0].op, OpKind::Store);
    EXPECT_EQ(ops[1].op, OpKind::Load);
    EXPECT_EQ(ops[1].object_id, 0u);
    EXPECT_EQ(ops[2].object_id, 1u);
    EXPECT_EQ(ops[3].file, "kvobj-1.bin");
    EXPECT_EQ(ops[3].offset, 0u);
    a.pattern = "random";
    EXPECT_THROW(make_record(llama(), d, a), Error);
}

TEST(Record, JsonRoundTripPlansTheSameOps) {
    AccessPattern a;
    a.num_chunks = 2;
    a.qd = 4;
    Record r = make_record(llama(4), slots(8u << 20), a);
    auto j = record_to_json(r);
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_EQ(j["device_geometry"]["slot_bytes"], (8u << 20) + 4096);
    Record back = record_from_json(j, "rec.json");
    auto x = plan_ops(r), y = plan_ops(back);
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(x[i].offset, y[i].offset);
        EXPECT_EQ(x[i].trace_id, y[i].trace_id);
        EXPECT_EQ(x[i].key, y[i].key);
    }
    j["device_geometry"].erase("slot_bytes");
    try {
        record_from_json(j, "rec.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("slot_bytes"), std::string::npos) << e.what();
    }
}

// Sizes from a manifest may be anything: the layout arithmetic says when it overflows instead of wrapping
// (2^64 - 1 used to round up to 0 and replay wrote the target; 2^63 spun forever).
TEST(Layout, OverflowIsAnErrorNotAWrap) {
    EXPECT_THROW(slots(UINT64_MAX), Error);               // round_up to the LBA wraps
    EXPECT_THROW(slots(UINT64_MAX - 4096 - 511), Error);  // + header wraps
    DeviceGeometry d = slots(uint64_t(1) << 63);          // fits: one slot of 2^63 + 4 KiB
    EXPECT_EQ(slot_offset(d, 1), (1u << 20) + (uint64_t(1) << 63) + 4096);
    EXPECT_THROW(slot_offset(d, 2), Error);  // the third slot starts past 2^64
    AccessPattern a;
    a.num_chunks = 2;
    Record r = make_record(llama(), slots(llama().per_rank_bytes), a);
    ASSERT_EQ(r.objects.size(), 2u);
    nlohmann::json j = record_to_json(r);
    for (uint64_t p : {uint64_t(1) << 63, UINT64_MAX}) {
        j["objects"][0]["payload_bytes"] = p;
        try {
            record_from_json(j, "rec.json");
            FAIL() << p << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()),
                      "rec.json: field 'payload_bytes': " + std::to_string(p) +
                          " with 2 objects is beyond any device: the layout would end past 2^64 bytes");
        }
    }
    j["objects"][0]["payload_bytes"] = 1000;
    j["device_geometry"]["lba_bytes"] = 3;
    EXPECT_THROW(record_from_json(j, "rec.json"), Error);
}

// Found by tests/fuzz/fuzz_record.cpp: a non-boolean "buffered" escaped as nlohmann's type_error ("internal error").
TEST(Record, NonBooleanBufferedIsAFieldError) {
    AccessPattern a;
    a.num_chunks = 1;
    auto j = record_to_json(make_record(llama(), slots(8u << 20), a));
    j["access_pattern"]["buffered"] = 1;
    try {
        record_from_json(j, "rec.json");
        FAIL() << "accepted \"buffered\": 1";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "rec.json: field 'buffered': expected true or false, got 1");
    }
    j["access_pattern"]["buffered"] = true;
    EXPECT_TRUE(record_from_json(j, "rec.json").access.buffered);
    j["access_pattern"].erase("buffered");
    EXPECT_FALSE(record_from_json(j, "rec.json").access.buffered);
}
