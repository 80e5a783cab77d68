// workload/record_foreign: the reference tooling's kvio_record.json read into kvio's Record, the stream kvio
// replay reissues; malformed fields named.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/kvio_record_fixture.h"
#include "workload/record_foreign.h"

using namespace kvio;
using namespace kvio::workload;
using nlohmann::json;

TEST(KvioRecordJson, ReadsTheStreamInPatternOrderWithEveryPartItsOwnSlot) {
    const json j = test::kvio_record_fixture();
    ASSERT_TRUE(is_kvio_record_json(j));
    Record r = read_record_any(j, "rec.json");
    EXPECT_EQ(r.device.engine, "io_uring");
    EXPECT_EQ(r.device.mdts_bytes, 131072u);
    EXPECT_EQ(r.device.max_io_bytes, 131072u);
    EXPECT_EQ(r.device.lba_bytes, 512u);
    EXPECT_EQ(r.device.slot_bytes, 4096u + (1u << 20));
    EXPECT_EQ(r.geometry.model.name, "llama3.1-8b");
    EXPECT_EQ(r.geometry.per_rank_bytes, 1u << 20);
    ASSERT_EQ(r.objects.size(), 3u);
    EXPECT_EQ(r.objects[0].key, "llama3.1-8b/obj0/k");
    EXPECT_EQ(r.objects[1].key, "llama3.1-8b/obj0/v");
    auto ops = plan_ops(r);
    ASSERT_EQ(ops.size(), 6u);
    // Store-all-then-load-all; the two parts of index 0 are slots 0 and 1, index 1 is slot 2.
    const uint64_t want_obj[] = {0, 1, 2, 0, 1, 2};
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(ops[i].op, i < 3 ? OpKind::Store : OpKind::Load) << i;
        EXPECT_EQ(ops[i].object_id, want_obj[i]) << i;
        EXPECT_EQ(ops[i].trace_id, i + 1) << i;
    }
    EXPECT_EQ(ops[4].offset, slot_offset(r.device, 1) + 4096);
    // use_uring_cmd names the passthrough engine; kvio's own manifest is not taken for one.
    EXPECT_EQ(read_record_any(test::kvio_record_fixture(1 << 20, "io_uring", true), "r").device.engine, "uring_cmd");
    json own = record_to_json(r);
    EXPECT_FALSE(is_kvio_record_json(own));
}

TEST(KvioRecordJson, ExplicitSeqAndTraceIdAreKept) {
    json j = test::kvio_record_fixture();
    j["objects"] = {{{"index", 5},
                     {"payload_bytes", 4096},
                     {"ops", {{{"op", "load"}, {"seq", 1}, {"trace_id", 9}}, {{"op", "store"}, {"seq", 0}}}}}};
    Record r = read_record_any(j, "r");
    auto ops = plan_ops(r);
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].op, OpKind::Store);
    EXPECT_EQ(ops[0].trace_id, 1u);
    EXPECT_EQ(ops[1].trace_id, 9u);
    EXPECT_EQ(ops[1].object_id, 5u);
}

TEST(KvioRecordJson, MalformedFieldsAreNamed) {
    struct Case {
        std::function<void(json&)> edit;
        std::string err;
    } cases[] = {
        {[](json& j) { j["schema_version"] = 2; },
         "rec.json: field 'schema_version': unsupported version 2 (expected 1)"},
        {[](json& j) { j.erase("model"); }, "rec.json: field 'model': missing"},
        {[](json& j) { j["access_pattern"] = "random"; },
         "rec.json: field 'access_pattern': expected \"store-all-then-load-all\" or \"interleaved\", got \"random\""},
        {[](json& j) { j["device_geometry"]["use_uring_cmd"] = "yes"; },
         "rec.json: field 'use_uring_cmd': expected true or false, got \"yes\""},
        {[](json& j) { j["device_geometry"]["engine"] = "spdk"; },
         "rec.json: field 'engine': expected posix, io_uring, uring_cmd or cufile, got \"spdk\""},
        {[](json& j) { j["device_geometry"]["block_align"] = 1000; },
         "rec.json: field 'block_align': 1000 is not a multiple of lba_bytes 512"},
        {[](json& j) { j["device_geometry"]["mdts_bytes"] = 1000; },
         "rec.json: field 'mdts_bytes': 1000 is not a multiple of 512 up to 4 GiB"},
        {[](json& j) { j["device_geometry"]["slot_bytes"] = 4096; },
         "rec.json: field 'slot_bytes': 4096 does not hold header_bytes 4096 + the largest payload 1048576 padded to "
         "512"},
        {[](json& j) { j["device_geometry"].erase("capacity_bytes"); }, "rec.json: field 'capacity_bytes': missing"},
        {[](json& j) { j["objects"][0]["part"] = "q"; },
         "rec.json: field 'part': expected \"kv\", \"k\" or \"v\", got \"q\""},
        {[](json& j) { j["objects"][0]["ops"] = {3}; },
         "rec.json: field 'ops': expected \"store\", \"load\" or {\"op\":...}, got 3"},
        {[](json& j) { j["objects"][0]["ops"] = {"delete"}; },
         "rec.json: field 'op': expected \"store\" or \"load\", got \"delete\""},
        {[](json& j) { j["objects"][2]["ops"][0]["seq"] = 0; },
         "rec.json: field 'seq': given for some ops and not others: give it for every op or for none"},
        {[](json& j) {
             j["objects"][0]["payload_bytes"] = 1ull << 62;
             j["device_geometry"]["slot_bytes"] = (1ull << 62) + 4096;
             j["objects"][1]["index"] = 7;
         },
         "rec.json: field 'payload_bytes': 4611686018427387904 with 8 objects is beyond any device: the layout would "
         "end past 2^64 bytes"},
    };
    for (const auto& c : cases) {
        json j = test::kvio_record_fixture();
        c.edit(j);
        try {
            read_record_any(j, "rec.json");
            ADD_FAILURE() << "accepted: " << j.dump();
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), c.err);
        }
    }
}
