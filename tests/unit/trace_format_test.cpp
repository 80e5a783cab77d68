#include <gtest/gtest.h>

#include "userspace/event_format.h"
#include "userspace/trace_report.h"

using namespace kvio::trace;

TEST(Rwbs, FromOpAndFlags) {
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_READ), "R");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_WRITE | KVIO_F_SYNC), "WS");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_WRITE | KVIO_F_PREFLUSH | KVIO_F_FUA | KVIO_F_SYNC), "FWFS");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_FLUSH | KVIO_F_PREFLUSH), "FF");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_READ | KVIO_F_RAHEAD | KVIO_F_META), "RAM");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_DISCARD), "D");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_SECURE_ERASE), "DE");
    EXPECT_EQ(rwbs_from_opf(KVIO_OP_DRV_IN), "N");
}

TEST(Rwbs, OpNames) {
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_READ | KVIO_F_SYNC), "read");
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_WRITE), "write");
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_FLUSH), "flush");
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_DISCARD), "discard");
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_WRITE_ZEROES), "other");
    EXPECT_STREQ(op_name_from_opf(KVIO_OP_DRV_OUT), "other");
    EXPECT_STREQ(op_name_from_nvme_opcode(0x02), "read");
    EXPECT_STREQ(op_name_from_nvme_opcode(0x01), "write");
    EXPECT_STREQ(op_name_from_nvme_opcode(0x00), "flush");
    EXPECT_STREQ(op_name_from_nvme_opcode(0x09), "discard");
    EXPECT_STREQ(syscall_name(KVIO_SYS_PWRITEV2), "pwritev2");
    EXPECT_STREQ(syscall_name(KVIO_SYS_IO_URING_ENTER), "io_uring_enter");
}

TEST(EventJson, BlockCommand) {
    kvio_cmd_event e{};
    e.type = KVIO_EV_CMD;
    e.src = KVIO_SRC_BLOCK;
    e.dev = KVIO_MKDEV(4095, 77);  // no such device: disk "?"
    e.opf = KVIO_OP_WRITE | KVIO_F_SYNC;
    e.bytes = 131072;
    e.sector = 2048;
    e.has_insert = 1;
    e.ts_insert = 100;
    e.ts_issue = 150;
    e.ts_complete = 1150;
    e.qd = 3;
    e.owner.pid = 42;
    e.owner.tid = 43;
    std::strcpy(e.owner.comm, "vllm");
    DevCache devs;
    auto j = cmd_event_json(e, devs);
    EXPECT_EQ(j["dev"], "4095:77");
    EXPECT_EQ(j["disk"], "?");
    EXPECT_EQ(j["op"], "write");
    EXPECT_EQ(j["rwbs"], "WS");
    EXPECT_EQ(j["d2c_ns"], 1000);
    EXPECT_EQ(j["q2d_ns"], 50);
    EXPECT_EQ(j["comm"], "vllm");
    EXPECT_FALSE(j.contains("user_data"));
    EXPECT_FALSE(j.contains("slba"));
}

TEST(EventJson, LostCompletionHasNoCompletionTime) {
    kvio_cmd_event e{};
    e.type = KVIO_EV_CMD;
    e.dev = KVIO_MKDEV(4095, 77);
    e.opf = KVIO_OP_READ;
    e.bytes = 524288;
    e.sector = 4096;
    e.ts_issue = 150;
    e.complete_lost = 1;
    DevCache devs;
    auto j = cmd_event_json(e, devs);
    EXPECT_EQ(j["complete_lost"], true);
    EXPECT_EQ(j["ts_issue"], 150);
    EXPECT_EQ(j["sector"], 4096);
    EXPECT_EQ(j["bytes"], 524288);
    EXPECT_FALSE(j.contains("ts_complete"));
    EXPECT_FALSE(j.contains("d2c_ns"));
    e.complete_lost = 0;
    e.ts_complete = 400;
    j = cmd_event_json(e, devs);
    EXPECT_FALSE(j.contains("complete_lost"));
    EXPECT_EQ(j["d2c_ns"], 250);
}

TEST(EventJson, NvmeCommandBytesFromLbaSize) {
    kvio_cmd_event e{};
    e.type = KVIO_EV_CMD;
    e.src = KVIO_SRC_NVME;
    e.dev = KVIO_MKDEV(4095, 78);  // unknown device: 512-byte LBAs assumed
    e.opf = KVIO_OP_DRV_IN;
    e.opcode = 0x02;
    e.slba = 1000;
    e.nlb = 256;
    e.ts_issue = 10;
    e.ts_complete = 20;
    e.has_user_data = 1;
    e.owner.user_data = (7ull << 32) | 1;
    DevCache devs;
    auto j = cmd_event_json(e, devs);
    EXPECT_EQ(j["src"], "nvme");
    EXPECT_EQ(j["op"], "read");
    EXPECT_EQ(j["rwbs"], "N");
    EXPECT_EQ(j["bytes"], 256 * 512);
    EXPECT_EQ(j["sector"], 1000);
    EXPECT_EQ(j["nlb"], 256);
    EXPECT_EQ(j["user_data"].get<uint64_t>() >> 32, 7u);
}

TEST(TraceReport, NamesAndSlotRules) {
    EXPECT_EQ(dev_hist_name(KVIO_H_D2C_READ), "d2c_read");
    EXPECT_EQ(dev_hist_name(KVIO_H_LBA_WRITE), "lba_write");
    EXPECT_EQ(dev_hist_name(KVIO_H_NVME_D2C_QUEUE, 3), "nvme_d2c_q3");
    EXPECT_EQ(proc_hist_name(KVIO_H_FADVISE_READ_GAP), "fadvise_read_gap");
    auto lba = make_dev_hist(KVIO_H_LBA_READ, 1 << 20);
    EXPECT_EQ(lba.kind(), kvio::HistKind::Linear);
    EXPECT_EQ(lba.slot_lo(3), 3u << 20);
    auto qd = make_dev_hist(KVIO_H_QD_WRITE, 1 << 20);
    EXPECT_EQ(qd.slot_hi(4), 5u);
}

TEST(TraceReport, JsonFromMapValues) {
    TraceReport r(10ull << 30);
    kvio_hist h{};
    h.slots[18] = 5;  // five 128 KiB commands
    h.sum = 5 * 131072;
    r.add_dev_hist({KVIO_MKDEV(4095, 79), KVIO_H_BSSPLIT_WRITE, 0}, h);
    uint64_t counters[KVIO_COUNTERS] = {};
    counters[KVIO_CNT_RB_DROPS] = 2;
    auto j = r.to_json(1.5, counters, false);
    EXPECT_EQ(j["schema"], "kvio.trace/1");
    EXPECT_EQ(j["dropped"], 2);
    ASSERT_EQ(j["devices"].size(), 1u);
    EXPECT_EQ(j["devices"][0]["dev"], "4095:79");
    EXPECT_EQ(j["devices"][0]["write"]["cmds"], 5);
    EXPECT_EQ(j["devices"][0]["write"]["bytes"], 5 * 131072);
    EXPECT_EQ(j["devices"][0]["histograms"]["bssplit_write"]["buckets"], nlohmann::json::parse("[[131072,262144,5]]"));
    EXPECT_TRUE(j["process"].contains("write_fsync_gap"));
}
