// The MLPerf io-trace-log reader (replay/io_trace.h): exact timestamps, quoting, CRLF, and one FILE:LINE: field
// error per kind of bad row; and the replay plan (replay/io_trace_replay.h): slots sized per key for its largest
// Write, loads of the stored size, skipped rows counted, the schedule.
#include <gtest/gtest.h>

#include "common/error.h"
#include "replay/io_trace.h"
#include "replay/io_trace_replay.h"

using namespace kvio::replay;

namespace {

constexpr const char* kHead = "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n";

std::string error_of(const std::string& body) {
    try {
        parse_io_trace(std::string(kHead) + body, "t.csv");
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(IoTraceReader, ParsesRowsExactly) {
    IoTrace t = parse_io_trace(std::string(kHead) +
                                   "1730000000.123456,Write,1048576,Tier-2,conv_user_0001_1_turn_1,Prefill\r\n"
                                   "1730000000.5,Read,1048576,Tier-1,\"odd,\"\"key\"\"\",Decode\n"
                                   "1730000001,Read,7,Tier-0,conv_user_0001_1_turn_1,Evict",
                               "t.csv");
    ASSERT_EQ(t.rows.size(), 3u);
    EXPECT_EQ(t.rows[0].ts_ns, 1730000000123456000ull);
    EXPECT_TRUE(t.rows[0].write);
    EXPECT_EQ(t.rows[0].bytes, 1048576u);
    EXPECT_EQ(t.rows[0].tier, 2);
    EXPECT_EQ(t.rows[0].phase, TracePhase::Prefill);
    EXPECT_EQ(t.rows[0].line, 2u);
    EXPECT_EQ(t.rows[1].ts_ns, 1730000000500000000ull);
    EXPECT_EQ(t.keys[t.rows[1].key], "odd,\"key\"");
    EXPECT_EQ(t.rows[1].tier, 1);
    EXPECT_EQ(t.rows[2].ts_ns, 1730000001000000000ull);
    EXPECT_EQ(t.rows[2].key, t.rows[0].key);  // one key index per distinct key
    EXPECT_EQ(t.rows[2].phase, TracePhase::Evict);
    EXPECT_EQ(t.keys.size(), 2u);
}

TEST(IoTraceReader, BadRowsNameFileLineAndField) {
    const std::string ok = "1730000000.000001,Write,4096,Tier-2,k,Prefill\n";
    struct Case {
        std::string body, needle;
    } cases[] = {
        {"x,Write,4096,Tier-2,k,Prefill\n", "t.csv:2: field 'Timestamp'"},
        {"1.1234567890,Write,4096,Tier-2,k,Prefill\n", "t.csv:2: field 'Timestamp': expected 1 to 9 decimals"},
        {"99999999999999999999,Write,4096,Tier-2,k,Prefill\n", "t.csv:2: field 'Timestamp'"},
        {ok + "1.0,Delete,4096,Tier-2,k,Prefill\n", "t.csv:3: field 'Operation'"},
        {"1.0,Write,0,Tier-2,k,Prefill\n", "t.csv:2: field 'Object_Size_Bytes'"},
        {"1.0,Write,-5,Tier-2,k,Prefill\n", "t.csv:2: field 'Object_Size_Bytes'"},
        {"1.0,Write,2199023255553,Tier-2,k,Prefill\n", "t.csv:2: field 'Object_Size_Bytes'"},
        {"1.0,Write,4096,Tier-4,k,Prefill\n", "t.csv:2: field 'Tier': expected Tier-0, Tier-1, Tier-2 or Tier-3"},
        {"1.0,Write,4096,Tier-2,,Prefill\n", "t.csv:2: field 'Key': empty"},
        {"1.0,Write,4096,Tier-2,k,Generate\n", "t.csv:2: field 'Phase'"},
        {"1.0,Write,4096,Tier-2,k,\n", "t.csv:2: field 'Phase'"},
        {"1.0,Write,4096,Tier-2,k\n", "t.csv:2: 5 fields, expected 6"},
        {"1.0,Write,4096,Tier-2,k,Prefill,x\n", "t.csv:2: more than 6 fields"},
        {"1.0,Write,4096,Tier-2,\"k,Prefill\n", "t.csv:2: field 'Key': unterminated quoted field"},
        {"1.0,Write,4096,Tier-2,k\"x,Prefill\n", "t.csv:2: field 'Key': a quote inside"},
        {ok + "\n" + ok, "t.csv:3: blank line"},
    };
    for (const auto& c : cases) {
        std::string e = error_of(c.body);
        EXPECT_NE(e.find(c.needle), std::string::npos) << c.body << " -> " << e;
    }
    try {
        parse_io_trace("Timestamp,Op,Size\n", "h.csv");
        ADD_FAILURE() << "a wrong header was accepted";
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("h.csv:1: expected the header"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_io_trace("", "e.csv"), kvio::Error);
    EXPECT_EQ(error_of(ok), "");
}

TEST(IoTracePlan, SlotsPerKeyLoadsOfTheStoredSizeAndSkips) {
    IoTrace t = parse_io_trace(std::string(kHead) +
                                   "100.000000,Write,1000,Tier-2,a,Prefill\n"  // a: slot for its largest write (5000)
                                   "100.001000,Read,1000,Tier-2,a,Decode\n"
                                   "100.002000,Read,1000,Tier-2,never,Decode\n"  // no write before: skipped
                                   "100.003000,Write,300,Tier-1,c,Prefill\n"     // other tier: skipped
                                   "100.004000,Write,5000,Tier-2,a,Evict\n"
                                   "100.005000,Read,4000,Tier-2,a,Decode\n"  // reads what was stored: 5000
                                   "100.006000,Write,512,Tier-2,b,Prefill\n",
                               "t.csv");
    kvio::workload::DeviceGeometry d;
    d.lba_bytes = 512;
    d.block_align = 4096;
    kvio::workload::compute_layout(d, 512);
    ASSERT_EQ(d.header_bytes, 4096u);
    ASSERT_EQ(d.data_base, 1u << 20);
    IoTracePlan p = plan_io_trace(t, 1u << 2, d, parse_timing("scale=2"));
    ASSERT_EQ(p.ops.size(), 5u);
    EXPECT_EQ(p.objects, 2u);
    EXPECT_EQ(p.rows_other_tiers, 1u);
    EXPECT_EQ(p.reads_never_written, 1u);
    EXPECT_EQ(p.reads_resized, 1u);
    ASSERT_EQ(p.slots.size(), 2u);
    EXPECT_EQ(p.slots[0], std::make_pair(uint64_t(1) << 20, uint64_t(12288)));  // 4096 + 5120 -> 12288
    EXPECT_EQ(p.slots[1], std::make_pair((uint64_t(1) << 20) + 12288, uint64_t(8192)));
    EXPECT_EQ(p.need_bytes, (1u << 20) + 12288 + 8192);
    const auto& s0 = p.ops[0];
    EXPECT_EQ(s0.op, kvio::workload::OpKind::Store);
    EXPECT_EQ(s0.payload_bytes, 1000u);
    EXPECT_EQ(s0.io_bytes, 1024u);
    EXPECT_EQ(s0.header_bytes, 4096u);
    EXPECT_EQ(s0.offset, 1u << 20);
    EXPECT_EQ(s0.trace_id, 1u);
    EXPECT_EQ(p.ops[1].op, kvio::workload::OpKind::Load);
    EXPECT_EQ(p.ops[1].offset, (1u << 20) + 4096);
    EXPECT_EQ(p.ops[1].header_bytes, 0u);
    EXPECT_EQ(p.ops[3].payload_bytes, 5000u);  // the read of 4000 reads the stored 5000
    EXPECT_EQ(p.ops[3].io_bytes, 5120u);
    EXPECT_EQ(p.ops[4].key, "b");
    EXPECT_EQ(p.ops[4].object_id, 1u);
    EXPECT_EQ(p.due_ns[0], 0u);
    EXPECT_EQ(p.due_ns[1], 2000000u);  // 1 ms × scale 2
    EXPECT_EQ(p.due_ns[4], 12000000u);
    EXPECT_EQ(p.phase[2], TracePhase::Evict);
    EXPECT_EQ(p.rows[2], 6u);
    EXPECT_EQ(p.span_ns, 6000000u);  // line 2 to line 8, other tiers and skipped reads not counted
    // Tiers 1 and 2: c becomes an object too; files layout: one file per key, no header.
    d.layout = kvio::workload::Layout::Files;
    kvio::workload::compute_layout(d, 512);
    IoTracePlan f = plan_io_trace(t, (1u << 1) | (1u << 2), d, parse_timing("fast"));
    EXPECT_EQ(f.objects, 3u);
    EXPECT_EQ(f.ops.size(), 6u);
    EXPECT_EQ(f.ops[0].file, "kvobj-0.bin");
    EXPECT_EQ(f.ops[0].header_bytes, 0u);
    EXPECT_EQ(f.due_ns[5], 0u);
    EXPECT_EQ(f.need_bytes, 5120u + 512 + 512);
}

TEST(IoTracePlan, Tiers) {
    EXPECT_EQ(parse_tiers("2"), 4);
    EXPECT_EQ(parse_tiers("1,Tier-2"), 6);
    EXPECT_EQ(parse_tiers("0,1,2"), 7);
    EXPECT_EQ(parse_tiers("Tier-3"), 8);  // kvio's remote tier
    EXPECT_THROW(parse_tiers("4"), kvio::Error);
    EXPECT_THROW(parse_tiers(""), kvio::Error);
}

// kvio's remote tier (simulate --remote-tier with --io-trace-log) writes Tier-3 rows: read as tier 3, skipped by a
// replay of the default tiers like the GPU and CPU tiers' rows.
TEST(IoTracePlan, RemoteTierRowsAreReadAndSkippedByDefault) {
    IoTrace t = parse_io_trace(std::string(kHead) +
                                   "100.000000,Write,1000,Tier-3,r,Prefill\n"
                                   "100.001000,Write,2000,Tier-2,s,Prefill\n"
                                   "100.002000,Read,1000,Tier-3,r,Decode\n",
                               "t.csv");
    ASSERT_EQ(t.rows.size(), 3u);
    EXPECT_EQ(t.rows[0].tier, 3);
    EXPECT_EQ(t.rows[2].tier, 3);
    kvio::workload::DeviceGeometry d;
    d.lba_bytes = 512;
    d.block_align = 4096;
    kvio::workload::compute_layout(d, 512);
    const IoTracePlan p = plan_io_trace(t, parse_tiers("2"), d, parse_timing("fast"));
    EXPECT_EQ(p.rows_other_tiers, 2u);
    EXPECT_EQ(plan_io_trace(t, parse_tiers("3"), d, parse_timing("fast")).rows_other_tiers, 1u);
}
