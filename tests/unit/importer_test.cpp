// kvio import's readers on captures written here from the formats' field lists: blktrace per-CPU files
// (struct blk_io_trace records: queue, get-request, insert, issue, partial and final completions, requeue, a flush,
// process notes, a completion without issue, an issue without completion, a record cut off) and fio iologs v2/v3;
// each bad field named FILE:LINE (or FILE: record N).
#include <gtest/gtest.h>
#include <linux/blktrace_api.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "importer/blktrace.h"
#include "importer/fio_iolog.h"

using namespace kvio::importer;
using nlohmann::json;

namespace {

constexpr uint32_t kDev = (7u << 20) | 5;  // 7:5

struct BtWriter {
    std::string bytes;
    uint32_t seq = 0;
    void add(uint64_t time, uint32_t action, uint64_t sector, uint32_t nbytes, uint32_t pid, uint32_t cpu,
             const std::string& pdu = "", uint16_t error = 0) {
        blk_io_trace t{};
        t.magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION;
        t.sequence = ++seq;
        t.time = time;
        t.sector = sector;
        t.bytes = nbytes;
        t.action = action;
        t.pid = pid;
        t.device = kDev;
        t.cpu = cpu;
        t.error = error;
        t.pdu_len = uint16_t(pdu.size());
        bytes.append(reinterpret_cast<const char*>(&t), sizeof t);
        bytes += pdu;
    }
};

constexpr uint32_t W = BLK_TC_ACT(BLK_TC_WRITE), R = BLK_TC_ACT(BLK_TC_READ), S = BLK_TC_ACT(BLK_TC_SYNC);

std::vector<json> lines(const std::string& text) {
    std::vector<json> v;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) v.push_back(json::parse(l));
    return v;
}

struct Dir {
    std::string path = std::filesystem::temp_directory_path() / ("kvio-import-" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() { std::filesystem::remove_all(path); }
    void put(const std::string& name, const std::string& bytes) const {
        std::ofstream(path + "/" + name, std::ios::binary) << bytes;
    }
};

}  // namespace

TEST(ImportBlktrace, RequestsFromIssueToFinalCompletionAcrossCpus) {
    BtWriter cpu0, cpu1;
    cpu0.add(900, BLK_TN_PROCESS, 0, 0, 42, 0, std::string("fio\0\0\0\0\0\0\0\0\0\0\0\0\0", 16));
    // A 64 KiB sync write: Q, G, I, D on CPU 0, completed on CPU 1.
    cpu0.add(1000, BLK_TA_QUEUE | W | S, 2048, 65536, 42, 0);
    cpu0.add(1100, BLK_TA_GETRQ | W | S, 2048, 65536, 42, 0);
    cpu0.add(1200, BLK_TA_INSERT | W | S, 2048, 65536, 42, 0);
    cpu0.add(1500, BLK_TA_ISSUE | W | S, 2048, 65536, 7, 0);  // dispatched by a kworker (pid 7): the submitter stays 42
    // A 128 KiB read issued while the write is in flight (qd 2), completed in two parts.
    cpu0.add(1600, BLK_TA_GETRQ | R, 4096, 131072, 43, 0);
    cpu0.add(1700, BLK_TA_ISSUE | R, 4096, 131072, 43, 0);
    cpu1.add(2500, BLK_TA_COMPLETE | W | S, 2048, 65536, 0, 1);
    cpu1.add(2600, BLK_TA_COMPLETE | R, 4096, 65536, 0, 1);                // partial: 64 KiB done
    cpu1.add(2900, BLK_TA_COMPLETE | R, 4096 + 128, 65536, 0, 1, "", 10);  // the rest, with an error
    // A flush request (no bytes), requeued once, then issued again and completed.
    cpu0.add(3000, BLK_TA_ISSUE | BLK_TC_ACT(BLK_TC_FLUSH), 0, 0, 44, 0);
    cpu0.add(3100, BLK_TA_REQUEUE | BLK_TC_ACT(BLK_TC_FLUSH), 0, 0, 44, 0);
    cpu0.add(3200, BLK_TA_ISSUE | BLK_TC_ACT(BLK_TC_FLUSH), 0, 0, 44, 0);
    cpu1.add(3300, BLK_TA_COMPLETE | BLK_TC_ACT(BLK_TC_FLUSH), 0, 0, 0, 1);
    cpu1.add(3400, BLK_TA_COMPLETE | R, 99999, 4096, 0, 1);  // its issue is not in the capture
    cpu0.add(3500, BLK_TA_ISSUE | W, 8192, 4096, 45, 0);     // never completed
    cpu1.bytes += std::string(20, '\0');                     // a record cut off
    Dir d;
    d.put("loop5.blktrace.0", cpu0.bytes);
    d.put("loop5.blktrace.1", cpu1.bytes);
    std::ostringstream out;
    BlktraceImport s = import_blktrace(d.path, out);
    EXPECT_EQ(s.files.size(), 2u);
    EXPECT_EQ(s.cmds, 4u);
    EXPECT_EQ(s.lost_completes, 1u);
    EXPECT_EQ(s.unmatched_completes, 1u);
    EXPECT_EQ(s.requeued, 1u);
    EXPECT_EQ(s.truncated, 1u);
    auto v = lines(out.str());
    ASSERT_EQ(v.size(), 5u);
    const json& w = v[0];
    EXPECT_EQ(w["op"], "write");
    EXPECT_EQ(w["rwbs"], "WS");
    EXPECT_EQ(w["dev"], "7:5");
    EXPECT_EQ(w["disk"], "loop5");
    EXPECT_EQ(w["sector"], 2048);
    EXPECT_EQ(w["bytes"], 65536);
    EXPECT_EQ(w["ts_issue"], 1500);
    EXPECT_EQ(w["ts_complete"], 2500);
    EXPECT_EQ(w["d2c_ns"], 1000);
    EXPECT_EQ(w["ts_insert"], 1200);
    EXPECT_EQ(w["q2d_ns"], 300);
    EXPECT_EQ(w["qd"], 1);
    EXPECT_EQ(w["tid"], 42);
    EXPECT_EQ(w["comm"], "fio");
    EXPECT_FALSE(w.contains("error"));
    const json& r = v[1];
    EXPECT_EQ(r["op"], "read");
    EXPECT_EQ(r["rwbs"], "R");
    EXPECT_EQ(r["bytes"], 131072);
    EXPECT_EQ(r["ts_complete"], 2900);  // the final completion
    EXPECT_EQ(r["qd"], 2);
    EXPECT_EQ(r["tid"], 43);
    EXPECT_EQ(r["error"], 10);
    EXPECT_FALSE(r.contains("ts_insert"));
    const json& f = v[2];
    EXPECT_EQ(f["op"], "flush");
    EXPECT_EQ(f["rwbs"], "F");
    EXPECT_EQ(f["ts_issue"], 3200);  // the issue after the requeue
    const json& lost = v[3];
    EXPECT_EQ(lost["complete_lost"], true);
    EXPECT_FALSE(lost.contains("ts_complete"));
    EXPECT_EQ(v[4]["type"], "summary");
    EXPECT_EQ(v[4]["lost_completes"], 1);
    EXPECT_EQ(v[4]["unmatched_completes"], 1);
    // The prefix form and a single file read the same records.
    std::ostringstream out2;
    EXPECT_EQ(import_blktrace(d.path + "/loop5", out2).cmds, 4u);
    EXPECT_EQ(out2.str(), out.str());
}

TEST(ImportBlktrace, BadFilesAreNamed) {
    BtWriter b;
    b.add(1, BLK_TA_ISSUE | W, 0, 4096, 1, 0);
    std::string bad = b.bytes;
    bad[3] ^= 0x55;  // magic (its top byte: 0x65)
    uint64_t trunc = 0;
    try {
        parse_blktrace(bad, "x.blktrace.0", trunc);
        ADD_FAILURE();
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("x.blktrace.0: record 1 at byte 0: field 'magic'"), std::string::npos)
            << e.what();
    }
    std::string v8 = b.bytes + b.bytes;
    v8[48] = 8;  // the second record's version byte
    try {
        parse_blktrace(v8, "x.blktrace.0", trunc);
        ADD_FAILURE();
    } catch (const kvio::Error& e) {
        EXPECT_NE(std::string(e.what()).find("record 2 at byte 48: field 'version': 8"), std::string::npos) << e.what();
    }
    // Byte-swapped (the other endianness) reads the same.
    std::string sw = b.bytes;
    auto swap = [&](size_t off, size_t n) { std::reverse(sw.begin() + off, sw.begin() + off + n); };
    swap(0, 4), swap(4, 4), swap(8, 8), swap(16, 8), swap(24, 4), swap(28, 4), swap(32, 4), swap(36, 4), swap(40, 4),
        swap(44, 2), swap(46, 2);
    auto recs = parse_blktrace(sw, "s", trunc);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].bytes, 4096u);
    EXPECT_EQ(recs[0].device, kDev);
    EXPECT_THROW(blktrace_files("/nonexistent/kvio-prefix"), kvio::Error);
}

TEST(ImportFioIolog, Version3And2) {
    Iolog v3 = parse_fio_iolog(
        "fio version 3 iolog\n"
        "0 /dev/loop0 add\n"
        "1 /dev/loop0 open\n"
        "12 /dev/loop0 write 1048576 65536\n"
        "40 /dev/loop0 read 4096 4096\r\n"
        "41 /dev/loop0 trim 0 8192\n"
        "50 /dev/loop0 sync 0 0\n"
        "60 /dev/loop0 close\n",
        "a.log");
    EXPECT_EQ(v3.version, 3);
    ASSERT_EQ(v3.ios.size(), 4u);
    EXPECT_EQ(v3.ios[0].kind, IologIo::Kind::Write);
    EXPECT_EQ(v3.ios[0].offset, 1048576u);
    EXPECT_EQ(v3.ios[0].length, 65536u);
    EXPECT_EQ(v3.ios[0].ts_us, 12u);
    EXPECT_EQ(v3.ios[2].kind, IologIo::Kind::Trim);
    EXPECT_EQ(v3.ios[3].kind, IologIo::Kind::Sync);
    Iolog v2 = parse_fio_iolog(
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n"
        "/dev/sdb wait 500 0\n/dev/sdb read 0 4096\n/dev/sdb wait 250 0\n/dev/sdb read 512 512\n",
        "b.log");
    ASSERT_EQ(v2.ios.size(), 3u);
    EXPECT_EQ(v2.ios[0].ts_us, 0u);
    EXPECT_EQ(v2.ios[1].ts_us, 500u);
    EXPECT_EQ(v2.ios[2].ts_us, 750u);
}

TEST(ImportFioIolog, BadLinesNameFileLineAndField) {
    struct Case {
        std::string text, needle;
    } cases[] = {
        {"fio version 4 iolog\n", "t.log:1: expected \"fio version 2 iolog\""},
        {"fio version 3 iolog\nx /dev/a add\n", "t.log:2: field 'timestamp'"},
        {"fio version 3 iolog\n1 /dev/a write 0 4096\n",
         "t.log:2: field 'filename': \"/dev/a\" is used before its 'add'"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a write 0 4096\n",
         "t.log:3: field 'filename': \"/dev/a\" is not open"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a write x 4096\n", "t.log:4: field 'offset'"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a write 0 0\n", "t.log:4: field 'length': 0"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a write 0\n", "t.log:4: field 'offset'"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a erase 0 4096\n", "t.log:4: field 'action'"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a wait 10 0\n",
         "t.log:4: field 'action': 'wait' is not allowed"},
        {"fio version 3 iolog\n1 /dev/a add\n2 /dev/a open\n3 /dev/a write 18446744073709551615 4096\n",
         "t.log:4: field 'offset'"},
        {"fio version 2 iolog\n/dev/a add\n/dev/a close\n",
         "t.log:3: field 'action': 'close' of \"/dev/a\", which is not open"},
    };
    for (const auto& c : cases) {
        std::string e;
        try {
            parse_fio_iolog(c.text, "t.log");
        } catch (const kvio::Error& x) {
            e = x.what();
        }
        EXPECT_NE(e.find(c.needle), std::string::npos) << c.text << " -> " << e;
    }
}

// fio appends to an existing write_iolog file, header included (seen with fio 3.33): each run is a segment whose
// clock restarts at 0; it is placed where the previous segment ended (its largest timestamp).
TEST(ImportFioIolog, AppendedRunsAreSegmentsOneAfterTheOther) {
    const std::string run =
        "fio version 3 iolog\n36 /dev/a add\n207 /dev/a open\n212 /dev/a write 0 16384\n"
        "242 /dev/a write 16384 16384\n274 /dev/a close\n";
    Iolog log = parse_fio_iolog(run +
                                    "fio version 3 iolog\n42 /dev/a add\n180 /dev/a open\n189 /dev/a read 0 16384\n"
                                    "249 /dev/a close\n",
                                "t.log");
    EXPECT_EQ(log.segments, 2u);
    EXPECT_EQ(log.files.size(), 1u);
    ASSERT_EQ(log.ios.size(), 3u);
    EXPECT_EQ(log.ios[1].ts_us, 242u);
    EXPECT_EQ(log.ios[2].ts_us, 274u + 189u);
    EXPECT_EQ(log.ios[2].line, 10u);
    // v2: the second segment starts after the first one's waits.
    Iolog v2 = parse_fio_iolog(
        "fio version 2 iolog\n/dev/a add\n/dev/a open\n/dev/a wait 500 0\n/dev/a write 0 4096\n"
        "fio version 2 iolog\n/dev/a add\n/dev/a open\n/dev/a wait 20 0\n/dev/a read 0 4096\n",
        "t.log");
    ASSERT_EQ(v2.ios.size(), 2u);
    EXPECT_EQ(v2.ios[1].ts_us, 520u);
    // A segment adds and opens its files again; one of another version is refused.
    for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
             {run + "fio version 3 iolog\n5 /dev/a write 0 4096\n",
              "t.log:8: field 'filename': \"/dev/a\" is used before its 'add'"},
             {run + "fio version 3 iolog\n5 /dev/a add\n6 /dev/a write 0 4096\n",
              "t.log:9: field 'filename': \"/dev/a\" is not open"},
             {run + "fio version 2 iolog\n", "t.log:7: field 'header': a version 2 segment in a version 3 log"}}) {
        std::string e;
        try {
            parse_fio_iolog(text, "t.log");
        } catch (const kvio::Error& x) {
            e = x.what();
        }
        EXPECT_NE(e.find(needle), std::string::npos) << text << " -> " << e;
    }
    // Imported: in order, the summary counts the segments.
    Dir d;
    d.put("a.log", run + run);
    std::ostringstream out;
    IologImportOptions o;
    o.dev = "259:3";
    IologImport s = import_fio_iolog(d.path + "/a.log", o, out);
    EXPECT_EQ(s.segments, 2u);
    auto v = lines(out.str());
    ASSERT_EQ(v.size(), 5u);
    EXPECT_EQ(v[2]["ts_issue"], (274 + 212) * 1000);
    EXPECT_EQ(v[3]["ts_issue"], (274 + 242) * 1000);
    EXPECT_EQ(v[4]["segments"], 2);
}

TEST(ImportFioIolog, CommandsWithTheGivenDevice) {
    Dir d;
    d.put("a.log",
          "fio version 3 iolog\n0 /data/f add\n0 /data/f open\n30 /data/f read 8192 4096\n12 /data/f write 0 65536\n"
          "40 /data/f sync 0 0\n");
    std::ostringstream out;
    IologImportOptions o;
    o.dev = "259:3";  // not on this machine: taken as is
    IologImport s = import_fio_iolog(d.path + "/a.log", o, out);
    EXPECT_EQ(s.cmds, 2u);
    EXPECT_EQ(s.syncs, 1u);
    auto v = lines(out.str());
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0]["op"], "write");  // in timestamp order
    EXPECT_EQ(v[0]["ts_issue"], 12000);
    EXPECT_EQ(v[0]["ts_complete"], 12000);
    EXPECT_EQ(v[0]["bytes"], 65536);
    EXPECT_EQ(v[1]["sector"], 16);
    EXPECT_EQ(v[1]["dev"], "259:3");
    EXPECT_EQ(v[2]["source"], "fio-iolog");
    // Without --dev a file that is no block device is refused.
    EXPECT_THROW(import_fio_iolog(d.path + "/a.log", IologImportOptions{}, out), kvio::Error);
}
