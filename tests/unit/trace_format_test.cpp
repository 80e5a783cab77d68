#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <iterator>
#include <tuple>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "bpf/kvio_trace.h"
#include <string>
#include <vector>

#include "common/error.h"
#include "common/events_bin.h"
#include "common/events_reader.h"
#include "common/input_file.h"
#include "common/warn.h"
#include "trace/event_format.h"
#include "trace/event_writer.h"
#include "trace/events_dump.h"
#include "trace/trace_report.h"

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
    EXPECT_EQ(j["failed_cmds"], 0);
    EXPECT_EQ(j["devices"][0]["failed"]["write"]["cmds"], 0);
}

// Commands that completed with an error (the failed_* histograms the completion program fills from the dev_hists
// hash) are counted per device and direction and in all, in the JSON and the text summary.
TEST(TraceReport, FailedCommandsAreCountedPerDeviceAndInAll) {
    EXPECT_EQ(dev_hist_name(KVIO_H_FAILED_READ), "failed_read");
    EXPECT_EQ(dev_hist_name(KVIO_H_FAILED_OTHER), "failed_other");
    EXPECT_EQ(make_dev_hist(KVIO_H_FAILED_WRITE, 1 << 20).unit(), "bytes");
    TraceReport r(10ull << 30);
    kvio_hist h{};
    h.slots[17] = 2;  // two 64 KiB reads failed
    h.sum = 2 * 65536;
    r.add_dev_hist({KVIO_MKDEV(4095, 79), KVIO_H_FAILED_READ, 0}, h);
    kvio_hist w{};
    w.slots[13] = 1;  // one 4 KiB write failed, on another device
    w.sum = 4096;
    r.add_dev_hist({KVIO_MKDEV(4095, 80), KVIO_H_FAILED_WRITE, 0}, w);
    uint64_t counters[KVIO_COUNTERS] = {};
    auto j = r.to_json(1.0, counters, false);
    EXPECT_EQ(j["failed_cmds"], 3);
    ASSERT_EQ(j["devices"].size(), 2u);
    EXPECT_EQ(j["devices"][0]["failed"]["read"]["cmds"], 2);
    EXPECT_EQ(j["devices"][0]["failed"]["read"]["bytes"], 2 * 65536);
    EXPECT_EQ(j["devices"][0]["failed"]["write"]["cmds"], 0);
    EXPECT_EQ(j["devices"][1]["failed"]["write"]["cmds"], 1);
    std::ostringstream text;
    r.print(text, 1.0, counters, false);
    EXPECT_NE(text.str().find("FAILED (completed with an error): read 2 cmds / 131072 B, write 0 cmds / 0 B"),
              std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("failed commands: 3"), std::string::npos) << text.str();
}

// ---- EventEncoder / EventWriter: the fast writer must produce exactly the reference records ----

namespace {

/// The reference line: nlohmann's dump of the reference object, invalid UTF-8 replaced by U+FFFD.
std::string ref_line(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void set_comm(char (&dst)[KVIO_COMM_LEN], const std::string& c) {
    std::memset(dst, 0, sizeof dst);
    std::memcpy(dst, c.data(), std::min(c.size(), sizeof dst));
}

/// comm values a task can really have (prctl(PR_SET_NAME) takes any bytes but NUL): escapes, control
/// bytes, DEL, valid multi-byte UTF-8, invalid and truncated UTF-8, all 16 bytes used (no NUL).
const std::vector<std::string> kComms = {
    "",
    "vllm",
    "fio",
    "a\"b\\c/d",
    std::string("\x01\x1f\t\n\b\f\r\x7f", 8),
    "kv\xe2\x82\xac",       // "kv€"
    "\xff\xfe",             // not UTF-8 at all
    "ab\xe2\x82",           // 3-byte sequence cut short by the 16-byte comm
    "\x80x\xc3(",           // lone continuation byte, bad continuation
    "\xed\xa0\x80",         // UTF-16 surrogate encoded in UTF-8: invalid
    "0123456789abcdef",     // 16 bytes: comm not NUL-terminated
    "\xf0\x9f\x98\x80zzz",  // 4-byte UTF-8 (emoji)
};

kvio_cmd_event block_cmd() {
    kvio_cmd_event e{};
    e.type = KVIO_EV_CMD;
    e.src = KVIO_SRC_BLOCK;
    e.dev = KVIO_MKDEV(4095, 77);
    e.opf = KVIO_OP_READ;
    e.bytes = 4096;
    e.sector = 8;
    e.ts_issue = 1000;
    e.ts_complete = 5000;
    e.qd = 1;
    e.owner.pid = 10;
    e.owner.tid = 11;
    return e;
}

/// A seeded mix of every conditional key: src, lost completions, inserts, user_data, errors, all ops/flags.
std::vector<kvio_cmd_event> random_cmds(size_t n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    auto bit = [&] { return rng() & 1; };
    const uint32_t ops[] = {KVIO_OP_READ,         KVIO_OP_WRITE,        KVIO_OP_FLUSH,  KVIO_OP_DISCARD,
                            KVIO_OP_SECURE_ERASE, KVIO_OP_WRITE_ZEROES, KVIO_OP_DRV_IN, KVIO_OP_DRV_OUT};
    const uint8_t opcodes[] = {0x00, 0x01, 0x02, 0x09, 0x7f};
    std::vector<kvio_cmd_event> v(n);
    for (auto& e : v) {
        e = kvio_cmd_event{};
        e.type = KVIO_EV_CMD;
        e.src = bit() ? KVIO_SRC_NVME : KVIO_SRC_BLOCK;
        e.dev = KVIO_MKDEV(4095, 70 + rng() % 4);
        e.opf = ops[rng() % 8] | uint32_t(rng() & 0x1f00);
        e.bytes = uint32_t(rng());
        e.sector = rng() >> (rng() % 64);
        e.has_insert = bit();
        e.ts_insert = rng() >> 8;
        e.ts_issue = e.ts_insert + (rng() >> 40);
        e.complete_lost = rng() % 4 == 0;
        e.ts_complete = e.complete_lost ? 0 : e.ts_issue + (rng() >> 40);
        if (rng() % 16 == 0) e.ts_complete = e.ts_issue - 1;  // out of order stamps wrap in both writers
        e.qd = uint32_t(rng() % 1024);
        e.error = rng() % 8 == 0 ? int32_t(rng()) : 0;
        e.owner.pid = uint32_t(rng());
        e.owner.tid = uint32_t(rng());
        e.has_user_data = bit();
        e.owner.user_data = rng();
        set_comm(e.owner.comm, kComms[rng() % kComms.size()]);
        e.qid = uint16_t(rng());
        e.cid = uint16_t(rng());
        e.nsid = uint32_t(rng());
        e.opcode = opcodes[rng() % 5];
        e.nlb = uint32_t(rng() % 65536) + 1;
        e.slba = rng() >> 20;
    }
    return v;
}

std::vector<kvio_syscall_event> random_syscalls(size_t n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<kvio_syscall_event> v(n);
    for (auto& e : v) {
        e = kvio_syscall_event{};
        e.type = KVIO_EV_SYSCALL;
        e.nr = uint8_t(rng() % (KVIO_SYSCALLS + 1));  // one past the table: name "?"
        e.fd = int32_t(rng() % 1000) - 100;
        e.ts_enter = rng() >> 4;
        e.ts_exit = e.ts_enter + (rng() >> 44);
        e.ret = rng() % 4 == 0 ? -int64_t(rng() % 200) : int64_t(rng() >> 30);
        e.offset = rng();
        e.count = rng() >> 20;
        e.pid = uint32_t(rng());
        e.tid = uint32_t(rng());
        set_comm(e.comm, kComms[rng() % kComms.size()]);
        e.flags = uint8_t(rng() % 8);  // file fields, O_DIRECT, file position: each combination
        e.ino = rng() >> (rng() % 64);
        e.file_size = rng() >> (rng() % 64);
        e.fs_dev = uint32_t(rng());
        e.gen = uint32_t(rng());
    }
    return v;
}

std::string temp_path(const std::string& name) { return testing::TempDir() + "kvio_" + name; }

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

}  // namespace

TEST(EventEncoder, ByteIdenticalToReferenceForHandPickedCommands) {
    DevCache devs;
    EventEncoder enc;
    std::string want;
    auto add = [&](const kvio_cmd_event& e) {
        enc.cmd(e, devs);
        want += ref_line(cmd_event_json(e, devs));
    };
    for (const auto& c : kComms) {
        auto e = block_cmd();
        set_comm(e.owner.comm, c);
        add(e);
    }
    auto e = block_cmd();
    e.has_insert = 1, e.ts_insert = 900;
    e.opf = KVIO_OP_WRITE | KVIO_F_PREFLUSH | KVIO_F_FUA | KVIO_F_SYNC | KVIO_F_META | KVIO_F_RAHEAD;
    add(e);
    e.complete_lost = 1, e.ts_complete = 0;  // lost completion with an insert stamp
    add(e);
    e.has_insert = 0;
    e.error = -5;
    add(e);
    auto n = block_cmd();  // NVMe: every NVMe key, a status, user_data
    n.src = KVIO_SRC_NVME;
    n.opf = KVIO_OP_DRV_OUT;
    n.opcode = 0x01, n.qid = 3, n.cid = 65535, n.nsid = 1, n.slba = ~0ull >> 10, n.nlb = 65536;
    n.error = 0x4002;
    n.has_user_data = 1, n.owner.user_data = ~0ull;
    add(n);
    n.complete_lost = 1;
    n.error = 0;
    add(n);
    auto big = block_cmd();  // extremes of every integer type
    big.bytes = ~0u, big.sector = ~0ull, big.ts_issue = ~0ull, big.ts_complete = 0, big.qd = ~0u;
    big.owner.pid = ~0u, big.error = INT32_MIN;
    add(big);
    EXPECT_EQ(std::string(enc.data(), enc.size()), want);
}

TEST(EventEncoder, ByteIdenticalToReferenceForRandomCommandsAndSyscalls) {
    DevCache devs;
    EventEncoder enc;
    std::string want;
    auto cmds = random_cmds(20000, 1);
    auto sys = random_syscalls(5000, 2);
    for (const auto& e : cmds) {
        enc.cmd(e, devs);
        want += ref_line(cmd_event_json(e, devs));
    }
    for (const auto& e : sys) {
        enc.syscall(e);
        want += ref_line(syscall_event_json(e));
    }
    std::string got(enc.data(), enc.size());
    ASSERT_EQ(got.size(), want.size());
    // Report the first differing line, not 5 MB of text.
    size_t at = std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
    if (at != got.size()) {
        size_t b = got.rfind('\n', at) + 1;
        FAIL() << "line differs:\n got  " << got.substr(b, got.find('\n', at) - b) << "\n want "
               << want.substr(b, want.find('\n', at) - b);
    }
    enc.clear();
    EXPECT_EQ(enc.size(), 0u);
}

TEST(EventEncoder, EverySyscallByteIdentical) {
    EventEncoder enc;
    std::string want;
    for (uint32_t nr = 0; nr <= KVIO_SYSCALLS; ++nr) {
        kvio_syscall_event e{};
        e.type = KVIO_EV_SYSCALL;
        e.nr = uint8_t(nr);
        e.fd = -1, e.ret = INT64_MIN, e.ts_enter = 5, e.ts_exit = 9, e.offset = 4096, e.count = 7;
        e.pid = 1, e.tid = 2;
        set_comm(e.comm, kComms[nr % kComms.size()]);
        enc.syscall(e);
        want += ref_line(syscall_event_json(e));
    }
    EXPECT_EQ(std::string(enc.data(), enc.size()), want);
    EXPECT_NE(want.find("\"name\":\"fsync\""), std::string::npos);
}

TEST(EventEncoder, NastyCommsEscapedAndInvalidUtf8Replaced) {
    DevCache devs;
    EventEncoder enc;
    auto e = block_cmd();
    set_comm(e.owner.comm, std::string("q\"\x01\xff", 4));
    enc.cmd(e, devs);
    std::string line(enc.data(), enc.size());
    // nlohmann's escapes (lower-case hex), U+FFFD for the byte 0xFF, and the line parses as strict JSON.
    EXPECT_NE(line.find("\"comm\":\"q\\\"\\u0001\xef\xbf\xbd\""), std::string::npos) << line;
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["comm"], "q\"\x01\xef\xbf\xbd");
    EXPECT_THROW(cmd_event_json(e, devs).dump(), nlohmann::json::type_error);  // why the replace handler
}

TEST(EventEncoder, LineAppendsSummaryRecord) {
    EventEncoder enc;
    nlohmann::json s = {{"type", "summary"}, {"events", 3}, {"dropped", 0}};
    enc.line(s);
    EXPECT_EQ(std::string(enc.data(), enc.size()), s.dump() + "\n");
}

TEST(EventWriter, FileParsesLineByLineAndMatchesReference) {
    auto path = temp_path("event_writer.jsonl");
    auto cmds = random_cmds(3000, 3);
    auto sys = random_syscalls(1000, 4);
    {
        EventWriter w(path, 4096);  // small chunks: many write(2) calls, records split across them
        for (size_t i = 0; i < cmds.size(); ++i) {
            w.cmd(cmds[i]);
            if (i % 3 == 0) w.syscall(sys[i / 3]);
        }
        EXPECT_EQ(w.written(), cmds.size() + 1000);
        w.line({{"type", "summary"}, {"events", w.written()}});
        w.close();
        w.close();  // idempotent
        EXPECT_FALSE(w.failed());
    }
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), cmds.size() + 1000 + 1);
    DevCache devs;
    size_t li = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
        auto j = nlohmann::json::parse(lines[li++]);
        ASSERT_EQ(j, nlohmann::json::parse(ref_line(cmd_event_json(cmds[i], devs)))) << "line " << li;
        if (i % 3 == 0) {
            j = nlohmann::json::parse(lines[li++]);
            ASSERT_EQ(j, nlohmann::json::parse(ref_line(syscall_event_json(sys[i / 3])))) << "line " << li;
        }
    }
    auto summary = nlohmann::json::parse(lines[li]);
    EXPECT_EQ(summary["type"], "summary");
    EXPECT_EQ(summary["events"], cmds.size() + 1000);

    // The project's own reader (validate, distill) takes the file as it is.
    kvio::EventsReader r(path);
    kvio::EventRecord rec;
    size_t n_cmd = 0, n_sys = 0, n_sum = 0;
    while (r.next(rec)) {
        if (rec.type == "cmd")
            ++n_cmd;
        else if (rec.type == "syscall")
            ++n_sys;
        else if (rec.type == "summary")
            ++n_sum;
    }
    EXPECT_EQ(n_cmd, cmds.size());
    EXPECT_EQ(n_sys, 1000u);
    EXPECT_EQ(n_sum, 1u);
    std::remove(path.c_str());
}

TEST(EventWriter, DirectIoChunksAndBufferedTailOnExt4) {
    // /var/tmp is on the root ext4 filesystem here and in CI: it takes O_DIRECT.
    std::string path = "/var/tmp/kvio_event_writer_direct_" + std::to_string(getpid()) + ".jsonl";
    auto cmds = random_cmds(12000, 7);  // about 3 MiB: three aligned 1 MiB chunks and a partial tail
    {
        EventWriter w(path);
        EXPECT_TRUE(w.direct()) << "open(O_DIRECT) refused on /var/tmp";
        for (const auto& c : cmds) w.cmd(c);
        w.close();
    }
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), cmds.size());
    DevCache devs;
    for (size_t i = 0; i < cmds.size(); ++i)
        ASSERT_EQ(lines[i] + "\n", ref_line(cmd_event_json(cmds[i], devs))) << "line " << i + 1;
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_GT(st.st_size, 3 << 20);
    EXPECT_NE(st.st_size % 4096, 0) << "the test needs a partial last block";
    std::remove(path.c_str());
}

TEST(EventWriter, DefaultChunkFlushesEverythingAtClose) {
    auto path = temp_path("event_writer_small.jsonl");
    auto e = block_cmd();
    {
        EventWriter w(path);
        w.cmd(e);
        w.cmd(e);
    }  // the destructor closes
    DevCache devs;
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1] + "\n", ref_line(cmd_event_json(e, devs)));
    std::remove(path.c_str());
}

TEST(EventWriter, WriteFailureNamesThePath) {
    auto e = block_cmd();
    {  // the failure shows up at the first chunk flush; later records are dropped, close() reports it
        EventWriter w("/dev/full", 4096);
        for (int i = 0; i < 100; ++i) w.cmd(e);
        EXPECT_TRUE(w.failed());
        EXPECT_EQ(w.written(), 100u);
        try {
            w.close();
            FAIL() << "close() did not throw";
        } catch (const kvio::Error& err) {
            EXPECT_EQ(std::string(err.what()), std::string("/dev/full: write failed: ") + std::strerror(ENOSPC));
        }
    }
    {  // less than a chunk: the error comes from close()
        EventWriter w("/dev/full");
        w.cmd(e);
        EXPECT_FALSE(w.failed());
        EXPECT_THROW(w.close(), kvio::Error);
    }
    try {
        EventWriter w("/nonexistent-dir/x.jsonl");
        FAIL() << "opened a path in a missing directory";
    } catch (const kvio::Error& err) {
        EXPECT_EQ(std::string(err.what()), "/nonexistent-dir/x.jsonl: cannot write: No such file or directory");
    }
}

// ---- kvio.events.bin/1: the binary capture reads and dumps as the JSONL writer's records ----

namespace {

/// Writes the same records (cmds, every third followed by a syscall, then a summary) in `format`.
void write_events(const std::string& path, EventsFormat format, const std::vector<kvio_cmd_event>& cmds,
                  const std::vector<kvio_syscall_event>& sys) {
    EventWriter w(path, 4096, format);
    for (size_t i = 0; i < cmds.size(); ++i) {
        w.cmd(cmds[i]);
        if (i % 3 == 0) w.syscall(sys[i / 3]);
    }
    w.line({{"type", "summary"}, {"events", w.written()}, {"dropped", 0}});
    w.close();
}

std::string slurp_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool printable_ascii(std::string_view s) {
    for (unsigned char c : s)
        if (c < 0x20 || c >= 0x7f) return false;
    return true;
}

}  // namespace

TEST(EventsBin, DumpIsByteIdenticalToTheJsonlWriter) {
    auto cmds = random_cmds(6000, 11);
    auto sys = random_syscalls(2000, 12);
    const auto jsonl = temp_path("same.jsonl"), bin = temp_path("same.kvb"), dumped = temp_path("dumped.jsonl");
    write_events(jsonl, EventsFormat::Jsonl, cmds, sys);
    write_events(bin, EventsFormat::Bin, cmds, sys);
    dump_capture(bin, dumped);
    std::string a = slurp_file(jsonl), b = slurp_file(dumped);
    EXPECT_GT(a.size(), 1000000u);
    EXPECT_TRUE(a == b) << "first difference at byte "
                        << std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
    EXPECT_LT(slurp_file(bin).size(), a.size());
    for (const auto& p : {jsonl, bin, dumped}) std::remove(p.c_str());
}

TEST(EventsBin, ReaderGivesTheRecordsOfTheJsonlFile) {
    auto cmds = random_cmds(3000, 21);
    auto sys = random_syscalls(1000, 22);
    const auto jsonl = temp_path("rd.jsonl"), bin = temp_path("rd.kvb");
    write_events(jsonl, EventsFormat::Jsonl, cmds, sys);
    write_events(bin, EventsFormat::Bin, cmds, sys);
    kvio::EventsReader rj(jsonl), rb(bin);
    kvio::EventRecord a, b;
    size_t n = 0, lost = 0;
    while (rj.next(a)) {
        ASSERT_TRUE(rb.next(b)) << "the capture ends early, record " << n + 1;
        ++n;
        SCOPED_TRACE("record " + std::to_string(n));
        ASSERT_EQ(a.type, b.type);
        EXPECT_EQ(a.has, b.has);
        EXPECT_EQ(a.src, b.src);
        EXPECT_EQ(a.dev, b.dev);
        EXPECT_EQ(a.disk, b.disk);
        EXPECT_EQ(a.op, b.op);
        EXPECT_EQ(a.rwbs, b.rwbs);
        if (printable_ascii(b.comm)) {  // JSON replaces invalid UTF-8; the capture keeps bytes
            EXPECT_EQ(a.comm, b.comm);
        }
        EXPECT_EQ(a.sector, b.sector);
        EXPECT_EQ(a.bytes, b.bytes);
        EXPECT_EQ(a.ts_issue, b.ts_issue);
        EXPECT_EQ(a.ts_complete, b.ts_complete);
        EXPECT_EQ(a.qd, b.qd);
        EXPECT_EQ(a.pid, b.pid);
        EXPECT_EQ(a.tid, b.tid);
        EXPECT_EQ(a.user_data, b.user_data);
        EXPECT_EQ(a.slba, b.slba);
        EXPECT_EQ(a.nlb, b.nlb);
        EXPECT_EQ(a.events, b.events);
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.fs_dev, b.fs_dev);
        EXPECT_EQ(a.ts_enter, b.ts_enter);
        EXPECT_EQ(a.ts_exit, b.ts_exit);
        EXPECT_EQ(a.file_offset, b.file_offset);
        EXPECT_EQ(a.count, b.count);
        EXPECT_EQ(a.ino, b.ino);
        EXPECT_EQ(a.gen, b.gen);
        EXPECT_EQ(a.file_size, b.file_size);
        EXPECT_EQ(a.fd, b.fd);
        EXPECT_EQ(a.ret, b.ret);
        EXPECT_EQ(a.direct, b.direct);
        if (a.type == "cmd" && !a.has_field(kvio::EventField::TsComplete)) ++lost;
    }
    EXPECT_FALSE(rb.next(b));
    EXPECT_EQ(n, 3000u + 1000u + 1u);
    EXPECT_GT(lost, 500u);  // complete_lost records (no ts_complete) are part of the comparison
    std::remove(jsonl.c_str());
    std::remove(bin.c_str());
}

TEST(EventsBin, TruncatedAndForeignFilesNameTheReason) {
    auto cmds = random_cmds(100, 31);
    auto sys = random_syscalls(40, 32);
    const auto bin = temp_path("cut.kvb"), cut = temp_path("cut2.kvb");
    write_events(bin, EventsFormat::Bin, cmds, sys);
    std::string all = slurp_file(bin);
    // Cut inside record 12 (device, cmd and syscall records interleave: find where it starts).
    uint64_t start12 = 0, end12 = 0;
    size_t devices = 0;  // the reader does not return device records
    {
        kvio::evbin::Reader raw(bin);
        kvio::evbin::Kind k;
        std::string_view p;
        while (raw.next(k, p) && raw.record() < 12) devices += k == kvio::evbin::Kind::Device;
        start12 = raw.offset();
        end12 = start12 + 8 + (p.size() + 7) / 8 * 8;
    }
    ASSERT_GT(end12, start12 + 16);
    {
        std::ofstream o(cut, std::ios::binary);
        o.write(all.data(), std::streamsize(end12 - 8));
    }
    // The torn last record is dropped with a warning (a killed tracer), like a torn last JSONL line.
    std::vector<std::string> warnings;
    auto old_sink = kvio::set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
    kvio::EventsReader r(cut);
    kvio::EventRecord rec;
    size_t got = 0;
    while (r.next(rec)) ++got;
    kvio::set_warning_sink(old_sink);
    EXPECT_EQ(warnings, std::vector<std::string>{cut + ": record 12 at byte " + std::to_string(start12) +
                                                 ": truncated record (the trace was cut off?): dropped"});
    EXPECT_EQ(got, 11 - devices);
    EXPECT_GT(devices, 0u);
    // Another version, and records of another size.
    for (auto [offset, value, why] : {std::tuple{8, 2u, "kvio.events.bin version 2 (this kvio reads 1)"},
                                      std::tuple{16, 112u, "written by a kvio whose cmd/syscall records are 112/"}}) {
        std::string mod = all;
        std::memcpy(&mod[size_t(offset)], &value, 4);
        std::ofstream(cut, std::ios::binary | std::ios::trunc) << mod;
        try {
            kvio::EventsReader bad(cut);
            FAIL() << "accepted: " << why;
        } catch (const kvio::Error& e) {
            EXPECT_NE(std::string(e.what()).find(cut + ": " + why), std::string::npos) << e.what();
        }
    }
    std::remove(bin.c_str());
    std::remove(cut.c_str());
}

namespace {
// Every record of `path` through the common reader with its rules; the kvio::Error message, or "".
std::string read_checked(const std::string& path, size_t& cmds, size_t& summaries) {
    cmds = summaries = 0;
    try {
        kvio::EventsReader r(path);
        kvio::EventRecord rec;
        while (r.next_checked(rec)) {
            cmds += rec.kind == kvio::EventType::Cmd;
            summaries += rec.kind == kvio::EventType::Summary;
        }
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}
std::string dump_error(const std::string& in, const std::string& out) {
    try {
        dump_capture(in, out);
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}
}  // namespace

// `cat a.kvb b.kvb > c.kvb` reads as one capture (was: "unknown record kind" at the second header).
TEST(EventsBin, ConcatenatedCapturesReadAsOne) {
    const auto a = temp_path("cat_a.kvb"), b = temp_path("cat_b.kvb"), c = temp_path("cat_c.kvb"),
               out = temp_path("cat_c.jsonl");
    write_events(a, EventsFormat::Bin, std::vector<kvio_cmd_event>(3, block_cmd()), random_syscalls(1, 5));
    auto other = block_cmd();
    other.dev = KVIO_MKDEV(4095, 78);
    write_events(b, EventsFormat::Bin, std::vector<kvio_cmd_event>(2, other), random_syscalls(1, 6));
    std::ofstream(c, std::ios::binary) << slurp_file(a) << slurp_file(b);
    size_t cmds = 0, summaries = 0;
    EXPECT_EQ(read_checked(c, cmds, summaries), "");
    EXPECT_EQ(cmds, 5u);
    EXPECT_EQ(summaries, 2u);
    EXPECT_EQ(dump_error(c, out), "");
    EXPECT_EQ(read_lines(out).size(), 3u + 1 + 1 + 2 + 1 + 1);  // cmds, a syscall after the first of each, summaries
    for (const auto& p : {a, b, c, out}) std::remove(p.c_str());
}

// A cmd whose src is neither block nor nvme is an error, the same from every reader of the capture (was: read as
// block).
TEST(EventsBin, UnknownSrcIsTheSameErrorForEveryReader) {
    const auto bin = temp_path("src7.kvb"), out = temp_path("src7.jsonl");
    auto bad = block_cmd();
    bad.src = 7;
    write_events(bin, EventsFormat::Bin, {block_cmd(), bad}, random_syscalls(1, 9));
    // header 64, device record 8 + 56, cmd 8 + 120, syscall 8 + 96: the bad cmd is record 4
    static_assert(sizeof(kvio_syscall_event) == 96);
    const std::string want = bin + ": record 4 at byte " + std::to_string(64 + 64 + 128 + 104) +
                             ": field 'src': 7 is neither block (0) nor nvme (1)";
    size_t cmds = 0, summaries = 0;
    EXPECT_EQ(read_checked(bin, cmds, summaries), want);
    EXPECT_EQ(cmds, 1u);
    EXPECT_EQ(dump_error(bin, out), want);
    std::remove(bin.c_str());
    std::remove(out.c_str());
}

// ---- --files --events: the file parts of a command not all one file's ----

namespace {

kvio_parts_event parts_of(const kvio_cmd_event& e, std::vector<kvio_file_part> parts) {
    kvio_parts_event p{};
    p.type = KVIO_EV_PARTS;
    p.dev = e.dev;
    p.sector = e.sector;
    p.ts_complete = e.ts_complete;
    p.n = uint8_t(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) p.part[i] = parts[i];
    return p;
}

/// A block write of 4 files (the first in two rounds of the kernel's walk) and 1024 bytes of no file, as the kernel
/// writes it: two parts records, then the command naming its first file and 6 parts.
struct MergedWrite {
    kvio_cmd_event cmd = block_cmd();
    std::vector<kvio_parts_event> parts;
    MergedWrite() {
        cmd.opf = KVIO_OP_WRITE;
        cmd.bytes = 12288;
        cmd.slba = 12, cmd.nlb = KVIO_MKDEV(7, 3), cmd.nsid = 5;  // first file: ino 12, fs_dev 7:3, gen 5
        cmd.nparts = 6;
        const uint32_t fs = KVIO_MKDEV(7, 3);
        parts.push_back(parts_of(cmd, {{12, fs, 5, 1024}, {13, fs, 6, 2048}, {14, fs, 7, 1024}, {15, fs, 8, 4096}}));
        parts.push_back(parts_of(cmd, {{12, fs, 5, 2048}, {16, fs, 1, 1024}}));
    }
};

}  // namespace

// The join: parts records before their command, another command's in between, a file in two records summed; a
// command whose parts did not all come carries none (counted); parts whose command never came are counted at the end.
TEST(PartsJoin, JoinsEachCommandsPartsAndCountsWhatIsMissing) {
    PartsJoin j;
    MergedWrite m;
    kvio_cmd_event other = block_cmd();
    other.sector = 4096, other.nparts = 2;
    j.add(m.parts[0]);
    j.add(parts_of(other, {{40, 1, 0, 512}, {41, 1, 0, 512}}));
    j.add(m.parts[1]);
    std::vector<kvio_file_part> out;
    ASSERT_TRUE(j.take(m.cmd, out));
    ASSERT_EQ(out.size(), 5u);
    const uint64_t want[][2] = {{12, 3072}, {13, 2048}, {14, 1024}, {15, 4096}, {16, 1024}};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(out[i].ino, want[i][0]);
        EXPECT_EQ(out[i].bytes, want[i][1]);
    }
    ASSERT_TRUE(j.take(other, out));
    EXPECT_EQ(out.size(), 2u);
    EXPECT_FALSE(j.take(block_cmd(), out));  // nparts 0: one file's command, nothing to join, nothing counted
    EXPECT_TRUE(out.empty());
    j.add(m.parts[0]);  // the second record of the command was dropped by the ring buffer
    EXPECT_FALSE(j.take(m.cmd, out));
    EXPECT_TRUE(out.empty());
    j.add(m.parts[1]);  // a command whose own record was dropped
    j.finish();
    EXPECT_EQ(j.joined(), 2u);
    EXPECT_EQ(j.incomplete(), 1u);
    EXPECT_EQ(j.orphaned(), 2u);
}

// More parts than the join holds: the oldest command's are let go, counted.
TEST(PartsJoin, HoldsABoundedNumberOfCommands) {
    PartsJoin j;
    kvio_cmd_event e = block_cmd();
    for (size_t i = 0; i <= PartsJoin::kMaxPending; ++i) {
        e.sector = i;
        j.add(parts_of(e, {{1, 1, 0, 512}, {2, 1, 0, 512}}));
    }
    EXPECT_EQ(j.orphaned(), 2u);
    e.nparts = 2;
    e.sector = 0;  // the oldest: let go
    std::vector<kvio_file_part> out;
    EXPECT_FALSE(j.take(e, out));
    e.sector = PartsJoin::kMaxPending;
    EXPECT_TRUE(j.take(e, out));
}

// "files" and "nofile_bytes" in the writer's bytes, the reference's keys and values.
TEST(EventEncoder, FilesOfAMergedCommandByteIdenticalToReference) {
    DevCache devs;
    EventEncoder enc;
    MergedWrite m;
    PartsJoin j;
    for (const auto& p : m.parts) j.add(p);
    std::vector<kvio_file_part> files;
    ASSERT_TRUE(j.take(m.cmd, files));
    enc.cmd(m.cmd, devs, files);
    const nlohmann::json ref = cmd_event_json(m.cmd, devs, files);
    EXPECT_EQ(std::string(enc.data(), enc.size()), ref_line(ref));
    EXPECT_EQ(ref["ino"], 12);  // the first file, for readers that know no "files"
    ASSERT_EQ(ref["files"].size(), 5u);
    EXPECT_EQ(ref["files"][0], (nlohmann::json{{"ino", 12}, {"fs_dev", "7:3"}, {"gen", 5}, {"bytes", 3072}}));
    EXPECT_EQ(ref["files"][4], (nlohmann::json{{"ino", 16}, {"fs_dev", "7:3"}, {"gen", 1}, {"bytes", 1024}}));
    EXPECT_EQ(ref["nofile_bytes"], 12288 - 11264);
    EXPECT_FALSE(cmd_event_json(m.cmd, devs).contains("files"));  // no parts: the record as before
}

// The writer joins the parts in both formats; the capture's Files record reads back as the JSONL "files", through
// the common reader and through `kvio dump` (byte for byte).
TEST(EventsBin, FilesOfACommandReadBackAsFromJsonl) {
    const auto jsonl = temp_path("files.jsonl"), bin = temp_path("files.kvb"), dumped = temp_path("files_d.jsonl");
    MergedWrite m;
    for (auto [path, format] : {std::pair{jsonl, EventsFormat::Jsonl}, std::pair{bin, EventsFormat::Bin}}) {
        EventWriter w(path, 4096, format);
        w.cmd(block_cmd());
        for (const auto& p : m.parts) w.parts(p);
        w.cmd(m.cmd);
        w.cmd(block_cmd());
        EXPECT_EQ(w.parts_join().joined(), 1u);
        w.close();
    }
    dump_capture(bin, dumped);
    EXPECT_EQ(slurp_file(dumped), slurp_file(jsonl));
    kvio::EventsReader rj(jsonl), rb(bin);
    kvio::EventRecord a, b;
    size_t n = 0;
    while (rj.next_checked(a)) {
        ASSERT_TRUE(rb.next_checked(b));
        SCOPED_TRACE("record " + std::to_string(++n));
        EXPECT_EQ(a.has, b.has);
        ASSERT_EQ(a.files.size(), b.files.size());
        EXPECT_EQ(a.files.size(), n == 2 ? 5u : 0u);
        EXPECT_EQ(a.has_field(kvio::EventField::Files), n == 2);
        for (size_t i = 0; i < a.files.size(); ++i) {
            EXPECT_EQ(a.files[i].fs_dev, "7:3");
            EXPECT_EQ(b.files[i].fs_dev, "7:3");
            EXPECT_EQ(a.files[i].ino, b.files[i].ino);
            EXPECT_EQ(a.files[i].gen, b.files[i].gen);
            EXPECT_EQ(a.files[i].bytes, b.files[i].bytes);
        }
    }
    EXPECT_FALSE(rb.next(b));
    EXPECT_EQ(n, 3u);
    for (const auto& p : {jsonl, bin, dumped}) std::remove(p.c_str());
}

// A damaged capture's Files record: not followed by its cmd, or holding more bytes than the cmd: errors naming the
// record, the same from every reader.
TEST(EventsBin, FilesRecordErrorsNameTheRecord) {
    const auto bin = temp_path("files_bad.kvb"), out = temp_path("files_bad.jsonl");
    MergedWrite m;
    std::vector<kvio_file_part> files = {{12, 1, 0, 8192}, {13, 1, 0, 8192}};  // 16384 > 12288
    struct Case {
        bool then_cmd;
        const char* why;
    };
    for (const Case& c : {Case{false, "a files record not followed by its cmd record"},
                          Case{true, "field 'files': its parts hold more bytes than the command's 12288"}}) {
        kvio::evbin::Encoder enc;
        enc.device(kvio::evbin::make_device_record(m.cmd.dev, 512, "4095:77", "x"));
        enc.cmd(block_cmd());
        enc.files(files);
        if (c.then_cmd)
            enc.cmd(m.cmd);
        else
            enc.syscall(random_syscalls(1, 3)[0]);
        std::ofstream(bin, std::ios::binary | std::ios::trunc) << std::string(enc.data(), enc.size());
        // header 64, device 8 + 56, cmd 8 + 120, files 8 + 48: the record after the files record is record 4
        const std::string want = bin + ": record 4 at byte " + std::to_string(64 + 64 + 128 + 56) + ": " + c.why;
        size_t cmds = 0, summaries = 0;
        EXPECT_EQ(read_checked(bin, cmds, summaries), want);
        EXPECT_EQ(cmds, 1u);
        EXPECT_EQ(dump_error(bin, out), want);
    }
    std::remove(bin.c_str());
    std::remove(out.c_str());
}

// `--events X.zst`: one zstd frame; flush_idle makes what was written decodable while the trace runs (a killed
// trace loses at most the last second), close() ends the frame; the readers take it as the plain file.
TEST(EventWriter, ZstdPathIsOneFrameDecodableAtEachIdleFlushAndFinishedAtClose) {
    const std::string plain = temp_path("event_writer_z.jsonl"), path = plain + ".zst";
    auto cmds = random_cmds(2000, 7);
    {
        EventWriter w(plain, 4096);
        for (const auto& c : cmds) w.cmd(c);
        w.line({{"type", "summary"}, {"events", w.written()}});
        w.close();
    }
    std::vector<std::string> warnings;
    auto old = kvio::set_warning_sink([&](const std::string& m) { warnings.push_back(m); });
    EventWriter w(path, 4096);
    EXPECT_FALSE(w.direct());
    for (size_t i = 0; i < 1000; ++i) w.cmd(cmds[i]);
    w.flush_idle(EventWriter::kIdleFlushNs * 5);
    // Mid-run: a valid prefix (the frame not ended yet) under the temporary name the writer renames at close: the
    // first 1000 records, whole lines, and a warning.
    EXPECT_FALSE(std::filesystem::exists(path)) << "the final name appears only when the trace is whole";
    const std::string mid = kvio::read_input(path + ".tmp-" + std::to_string(getpid()));
    EXPECT_EQ(std::count(mid.begin(), mid.end(), '\n'), 1000);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("the zstd stream is cut off"), std::string::npos);
    for (size_t i = 1000; i < cmds.size(); ++i) w.cmd(cmds[i]);
    w.line({{"type", "summary"}, {"events", w.written()}});
    w.close();
    EXPECT_FALSE(w.failed());
    warnings.clear();
    EXPECT_EQ(kvio::read_input(path), kvio::read_input(plain));
    EXPECT_TRUE(warnings.empty());
    kvio::set_warning_sink(old);
    std::string raw = kvio::read_input(plain);
    EXPECT_LT(std::filesystem::file_size(path) * 3, raw.size()) << "compressed";
    EXPECT_EQ(std::system(("zstd -q -t " + path).c_str()), 0) << "not a finished frame";
    std::remove(plain.c_str());
    std::remove(path.c_str());
}

// kvio_comm_word_clip: a name's two words keep its bytes up to the NUL and lose whatever follows (a kernel that
// renames a task without padding leaves the old name's tail there); a name without NUL in the first word keeps it.
TEST(CommWords, EveryByteFromTheFirstNulOnIsCleared) {
    auto clip = [](const char(&raw)[16]) {
        uint64_t w[2];
        std::memcpy(w, raw, 16);
        int ended = 0;
        uint64_t out[2] = {kvio_comm_word_clip(w[0], &ended), kvio_comm_word_clip(w[1], &ended)};
        std::string bytes(reinterpret_cast<const char*>(out), 16);
        return bytes;
    };
    EXPECT_EQ(clip({'k', 'v', 'a', 'b', 0, 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 0, 0}),
              std::string("kvab") + std::string(12, '\0'));
    EXPECT_EQ(clip({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 0, 'x', 'y', 0, 0, 0, 0}),
              std::string("abcdefghi") + std::string(7, '\0'));
    EXPECT_EQ(clip({0, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 0}),
              std::string(16, '\0'));
    EXPECT_EQ(clip({'f', 'i', 'o', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), std::string("fio") + std::string(13, '\0'));
    EXPECT_EQ(clip({'a', 'b', 'c', 'd', 'e', 'f', 'g', 0, 1, 1, 1, 1, 1, 1, 1, 0}),
              std::string("abcdefg") + std::string(9, '\0'));
    // 0x01 bytes before the NUL: the trick's false positives lie above the first zero byte only
    EXPECT_EQ(clip({1, 1, 'a', 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}), std::string("\1\1a") + std::string(13, '\0'));
    EXPECT_EQ(clip({'V', 'L', 'L', 'M', ':', ':', 'E', 'n', 'g', 'i', 'n', 'e', 'C', 'o', 'r', 0}),
              std::string("VLLM::EngineCor") + std::string(1, '\0'));
}

// ---- --breakdown's "stages" records (docs/formats.md, "Block stages record") ----

namespace {

/// A stages record of the loop device block_cmd() uses: inserted (`insert`) or issued directly.
kvio_stages_event stages_rec(bool insert, uint64_t base) {
    kvio_stages_event e{};
    e.type = KVIO_EV_STAGES;
    e.dev = block_cmd().dev;
    e.opf = insert ? uint32_t(KVIO_OP_WRITE | KVIO_F_SYNC) : uint32_t(KVIO_OP_READ);
    e.bytes = 65536;
    e.sector = 2048 + base;
    e.ts_queue = base + 1000;
    e.ts_getrq = base + 1300;
    e.has_insert = insert;
    e.ts_insert = insert ? base + 1700 : 0;
    e.ts_issue = base + 2600;
    e.ts_complete = base + 9100;
    return e;
}

}  // namespace

TEST(EventEncoder, StagesRecordByteIdenticalToReferenceAndAddsUp) {
    DevCache devs;
    EventEncoder enc;
    std::string want;
    for (bool insert : {true, false}) {
        const auto e = stages_rec(insert, 0);
        enc.stages(e, devs);
        const auto j = stages_event_json(e, devs);
        want += ref_line(j);
        EXPECT_EQ(j["type"], "stages");
        EXPECT_EQ(j["q2g_ns"], 300u);
        EXPECT_EQ(j["d2c_ns"], 6500u);
        EXPECT_EQ(j["q2c_ns"], 8100u);
        if (insert) {
            EXPECT_EQ(j["g2i_ns"], 400u);
            EXPECT_EQ(j["i2d_ns"], 900u);
            EXPECT_FALSE(j.contains("g2d_ns"));
            EXPECT_EQ(j["ts_insert"], 1700u);
        } else {
            EXPECT_EQ(j["g2d_ns"], 1300u);
            EXPECT_FALSE(j.contains("g2i_ns") || j.contains("i2d_ns") || j.contains("ts_insert"));
        }
    }
    EXPECT_EQ(std::string(enc.data(), enc.size()), want);
}

// A capture with stages records dumps as the JSONL writer writes them, and the events reader hands them on as
// "stages" records (which every command skips: EventType::Stages) while the commands read as before.
TEST(EventsBin, StagesRecordsDumpAsTheJsonlWriterAndReadersSkipThem) {
    auto cmds = random_cmds(300, 41);
    for (auto& c : cmds) c.dev = block_cmd().dev;  // the stages' device: one device record serves both
    const auto jsonl = temp_path("st.jsonl"), bin = temp_path("st.kvb"), dumped = temp_path("st-dumped.jsonl");
    for (auto [path, format] : {std::pair{jsonl, EventsFormat::Jsonl}, {bin, EventsFormat::Bin}}) {
        EventWriter w(path, 4096, format);
        for (size_t i = 0; i < cmds.size(); ++i) {
            w.cmd(cmds[i]);
            w.stages(stages_rec(i % 2, i * 10000));
        }
        EXPECT_EQ(w.written(), cmds.size());
        EXPECT_EQ(w.stages_written(), cmds.size());
        w.line({{"type", "summary"}, {"events", w.written()}, {"stages", w.stages_written()}});
        w.close();
    }
    dump_capture(bin, dumped);
    EXPECT_EQ(slurp_file(jsonl), slurp_file(dumped));
    for (const auto& p : {jsonl, bin}) {
        SCOPED_TRACE(p);
        kvio::EventsReader rd(p);
        kvio::EventRecord r;
        size_t n_cmd = 0, n_stages = 0;
        while (rd.next(r)) {  // the random commands break the format's rules on purpose: no next_checked
            if (r.type == "cmd") {
                EXPECT_EQ(r.ts_issue, cmds[n_cmd].ts_issue);
                ++n_cmd;
            }
            n_stages += r.type == "stages";
        }
        EXPECT_EQ(n_cmd, cmds.size());
        EXPECT_EQ(n_stages, cmds.size());
    }
    // the format's rules accept a stages record as such (no field of it is checked)
    const auto one = temp_path("st-one.jsonl");
    {
        EventWriter w(one, 4096, EventsFormat::Jsonl);
        w.stages(stages_rec(true, 0));
        w.close();
    }
    kvio::EventsReader rd(one);
    kvio::EventRecord r;
    ASSERT_TRUE(rd.next_checked(r));
    EXPECT_EQ(r.kind, kvio::EventType::Stages);
    for (const auto& p : {jsonl, bin, dumped, one}) std::remove(p.c_str());
}
