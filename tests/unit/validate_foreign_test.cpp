// validate/ on the foreign inputs (LMCache and NVMe-monitor formats): the LMCache kvio trace (schema 2) and the NVMe
// io_uring_cmd monitor JSONL, written from their field lists, score what kvio's own files score; zstd input everywhere;
// malformed records get FILE:LINE: field errors.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/error.h"
#include "common/input_file.h"
#include "common/warn.h"
#include "common/zstd_stream.h"
#include "tests/foreign_formats.h"
#include "validate/commands_monitor.h"
#include "validate/formats.h"
#include "validate/semantic_lmcache.h"
#include "validate/synth.h"
#include "validate/validate.h"
#include "workload/semantic.h"

using namespace kvio;
using namespace kvio::validate;
using nlohmann::json;

namespace {

struct Tmp {
    std::filesystem::path dir;
    Tmp() {
        dir =
            std::filesystem::temp_directory_path() / ("kvio-foreign-test-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir);
    }
    ~Tmp() { std::filesystem::remove_all(dir); }
    std::string path(const std::string& name) const { return (dir / name).string(); }
    std::string write(const std::string& name, const std::vector<std::string>& lines) const {
        std::ofstream o(path(name));
        for (const auto& l : lines) o << l << "\n";
        return path(name);
    }
};

std::string slurp(const std::string& p) {
    std::ifstream i(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(i), {});
}

std::string zstd_file(const std::string& in, const std::string& out, bool finish = true) {
    ZstdCompressor z;
    std::string c;
    z.compress(slurp(in), c, finish ? ZstdCompressor::Mode::End : ZstdCompressor::Mode::Flush);
    std::ofstream(out, std::ios::binary) << c;
    return out;
}

// What must agree between two validations of the same run in two formats: every score and join counter; not
// the format names, the reasons, the warnings or the NVMe row count (the monitor's rows are all nvme rows).
json scores_of(json j) {
    j.erase("inputs");
    for (const char* k : {"reason", "warnings", "nvme_rows", "passthrough_block_skipped"}) j["join"].erase(k);
    return j;
}

Options opts(const std::string& commands, const std::string& semantic) {
    Options o;
    o.commands = commands;
    o.semantic = semantic;
    o.geometry.lba_bytes = 512;  // an LMCache meta carries neither: the same overrides for both runs
    o.geometry.max_sectors_kb = 1280;
    return o;
}

struct Synth {
    std::string sem, ev;
};
Synth synth(const Tmp& t, const std::string& engine) {
    SynthSpec s;
    s.objects = 40;
    s.object_bytes = 1 << 20;
    s.noise_per_op = 2;
    s.engine = engine;
    Synth x{t.path(engine + ".sem.jsonl"), t.path(engine + ".ev.jsonl")};
    synth_write(s, x.sem, x.ev);
    return x;
}

}  // namespace

TEST(ValidateForeign, LmcacheAndMonitorScoreWhatKviosOwnFilesScore) {
    Tmp t;
    for (const char* engine : {"posix", "io_uring"}) {
        Synth s = synth(t, engine);
        const json own = report_json(run(opts(s.ev, s.sem)));
        ASSERT_EQ(own["exact_match"], 40) << engine;
        ASSERT_GT(own["untagged_cmds"].get<uint64_t>(), 0u);
        const std::string lm = t.path(std::string(engine) + ".lmcache.jsonl"),
                          mon = t.path(std::string(engine) + ".monitor.jsonl");
        test::kvio_semantic_to_lmcache(s.sem, lm, "/nonexistent/nvme0n1");
        test::kvio_events_to_monitor(s.ev, mon, test::MonitorVariant::IoUringCmd);
        EXPECT_EQ(detect_semantic_format(lm), SemanticFormat::Lmcache);
        EXPECT_EQ(detect_commands_format(mon), CommandsFormat::Monitor);
        EXPECT_EQ(detect_semantic_format(s.sem), SemanticFormat::Kvio);
        EXPECT_EQ(detect_commands_format(s.ev), CommandsFormat::Kvio);
        Report r = run(opts(mon, lm));
        const json foreign = report_json(r);
        EXPECT_EQ(scores_of(foreign), scores_of(own)) << engine;
        EXPECT_EQ(foreign["join"]["mode"], std::string(engine) == "posix" ? "offset" : "user_data");
        EXPECT_EQ(foreign["inputs"], json({{"semantic", "lmcache-kvio/2"}, {"commands", "nvme-monitor"}}));
        // The delete record is counted, and the device the meta's path could not name is the commands' one.
        std::string all;
        for (const auto& w : r.warnings) all += w + "\n";
        EXPECT_NE(all.find("1 delete records"), std::string::npos) << all;
        EXPECT_NE(all.find("taken to be on 7:0"), std::string::npos) << all;
        // Mixed: each foreign file with kvio's other one.
        EXPECT_EQ(scores_of(report_json(run(opts(s.ev, lm)))), scores_of(own)) << engine;
        EXPECT_EQ(scores_of(report_json(run(opts(mon, s.sem)))), scores_of(own)) << engine;
        // Forcing the formats reads the same.
        Options f = opts(mon, lm);
        f.semantic_format = SemanticFormat::Lmcache;
        f.commands_format = CommandsFormat::Monitor;
        EXPECT_EQ(scores_of(report_json(run(f))), scores_of(own));
    }
}

TEST(ValidateForeign, DriverTracepointMonitorJoinsByOffset) {
    Tmp t;
    Synth s = synth(t, "posix");
    const json own = report_json(run(opts(s.ev, s.sem)));
    const std::string mon = t.path("drv.monitor.jsonl");
    test::kvio_events_to_monitor(s.ev, mon, test::MonitorVariant::DriverTracepoint);
    // "synth0" is no disk of this machine: the commands are taken to be on the ops' only device.
    const json j = report_json(run(opts(mon, s.sem)));
    EXPECT_EQ(scores_of(j), scores_of(own));
    EXPECT_EQ(j["exact_match"], 40);
}

TEST(ValidateForeign, ZstdInputsScoreAsThePlainFiles) {
    Tmp t;
    Synth s = synth(t, "io_uring");
    const json own = report_json(run(opts(s.ev, s.sem)));
    const std::string evz = zstd_file(s.ev, t.path("ev.jsonl.zst")), semz = zstd_file(s.sem, t.path("sem.zst"));
    EXPECT_EQ(slurp(evz).substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4));
    EXPECT_EQ(scores_of(report_json(run(opts(evz, semz)))), scores_of(own));
    // Detection looks at the decompressed bytes; foreign formats compressed too.
    const std::string lm = t.path("lm.jsonl"), mon = t.path("mon.jsonl");
    test::kvio_semantic_to_lmcache(s.sem, lm, "/nonexistent");
    test::kvio_events_to_monitor(s.ev, mon, test::MonitorVariant::IoUringCmd);
    EXPECT_EQ(scores_of(report_json(run(opts(zstd_file(mon, t.path("mon.zst")), zstd_file(lm, t.path("lm.zst")))))),
              scores_of(own));
}

TEST(ValidateForeign, ZstdAndForeignFormatsThroughAPipeReadOnce) {
    Tmp t;
    Synth s = synth(t, "io_uring");
    const json own = report_json(run(opts(s.ev, s.sem)));
    const std::string mon = t.path("mon.jsonl");
    test::kvio_events_to_monitor(s.ev, mon, test::MonitorVariant::IoUringCmd);
    for (const std::string& src : {zstd_file(s.ev, t.path("ev.zst")), mon}) {
        const std::string fifo = t.path("fifo");
        std::filesystem::remove(fifo);
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
        std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << slurp(src); });
        json j = report_json(run(opts(fifo, s.sem)));
        writer.join();
        EXPECT_EQ(scores_of(j), scores_of(own)) << src;
    }
}

TEST(ValidateForeign, CutOffZstdYieldsWhatItHoldsWithAWarning) {
    Tmp t;
    const std::string plain = t.write("p.jsonl", {R"({"a":1})", R"({"a":2})"});
    const std::string cut = zstd_file(plain, t.path("cut.zst"), /*finish=*/false);  // flushed, no frame end
    std::vector<std::string> warnings;
    auto old = set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
    EXPECT_EQ(read_input(cut), slurp(plain));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0], cut + ": the zstd stream is cut off (the writer was killed?): read up to the cut");
    warnings.clear();
    std::string bad = slurp(zstd_file(plain, t.path("ok.zst")));
    bad[bad.size() / 2] ^= 0x5a;
    std::ofstream(t.path("bad.zst"), std::ios::binary) << bad;
    EXPECT_THROW(read_input(t.path("bad.zst")), Error);
    set_warning_sink(old);
    ASSERT_FALSE(warnings.empty());
    EXPECT_EQ(warnings[0].rfind(t.path("bad.zst") + ": not valid zstd: ", 0), 0u) << warnings[0];
}

TEST(ValidateForeign, LmcacheTimestampsUserDataAndSlotOffsets) {
    Tmp t;
    const std::string meta =
        R"({"event_type":"kvio_meta","schema":2,"hostname":"h","pid":1,"instance":"i","device_path":"/nonexistent","io_engine":"io_uring","block_align":4096,"header_bytes":4096,"max_data_transfer_size":131072,"dev":"259:0"})";
    const std::string p = t.write(
        "lm.jsonl",
        {
            meta,
            R"({"op":"store","trace_id":7,"key":"a","object_id":1,"part":"k","bytes":8192,"slot_offset":1048576,"ts_start":12.5,"ts":12.500001})",
            R"({"op":"load","key":"a","object_id":1,"part":"k","bytes":8192,"slot_offset":1048576,"slot_dev_off":2097152,"ts_start":13000000000,"ts":13000000500,"user_data":"0x0000002a_00000005"})",
            R"({"op":"load","key":"a","object_id":1,"bytes":100,"slot_offset":0,"ts_start":1,"ts":2,"user_data":"8589934593","error":"EIO"})",
        });
    SemanticTrace s = read_semantic_as(p, SemanticFormat::Auto);
    EXPECT_EQ(s.format, "lmcache-kvio/2");
    EXPECT_FALSE(s.dev_unknown);
    EXPECT_EQ(s.meta.engine, "io_uring");
    EXPECT_EQ(s.meta.max_io_bytes, 131072u);
    ASSERT_EQ(s.ops.size(), 3u);
    EXPECT_EQ(s.ops[0].ts_start, 12500000000u);
    EXPECT_EQ(s.ops[0].ts, 12500001000u);
    EXPECT_EQ(s.ops[0].trace_id, 7u);
    EXPECT_EQ(s.ops[0].extents[0].off, 1048576u);
    EXPECT_EQ(s.ops[0].extents[0].len, 4096u + 8192u);
    EXPECT_EQ(s.ops[1].trace_id, 42u);
    EXPECT_EQ(s.ops[1].ts_start, 13000000000u);
    EXPECT_EQ(s.ops[1].extents[0].off, 2097152u + 4096u);  // slot_dev_off wins; a load reads after the header
    EXPECT_EQ(s.ops[1].extents[0].len, 8192u);
    EXPECT_EQ(s.ops[2].trace_id, 2u);
    EXPECT_EQ(s.ops[2].extents[0].len, 4096u);  // 100 bytes padded to block_align
    EXPECT_TRUE(s.ops[2].failed);
}

TEST(ValidateForeign, KvCommandSetMonitorJoinsByKey) {
    Tmp t;
    const std::string sem = t.write(
        "s.jsonl",
        {
            R"({"type":"meta","schema":"kvio.semantic/1","engine":"uring_cmd","dev":"259:0","lba_bytes":4096,"mdts_bytes":1048576,"header_bytes":0})",
            R"({"op":"store","object_id":0,"key":"kv/a","payload_bytes":65536,"dev":"259:0","dev_off":0,"ts_start":100,"ts":200})",
            R"({"op":"load","object_id":0,"key":"kv/a","payload_bytes":65536,"dev":"259:0","dev_off":0,"ts_start":300,"ts":400})",
        });
    // "kv/a" = 6b 76 2f 61; key_len cuts the padding.
    const std::string mon = t.write(
        "m.jsonl",
        {
            R"({"event_type":"nvme_cmd","pid":1,"tid":1,"user_data":0,"nvme_opcode":129,"op_name":"store","nsid":1,"key_hex":"6b762f610000","key_len":4,"value_len":65536,"rdev":"259:0","ts":150})",
            R"({"event_type":"nvme_cmp","user_data":0,"err":0,"lat_ns":10,"hwq":1,"cid":3,"ts":160})",
            R"({"event_type":"nvme_cmd","op_name":"exist","key_hex":"6b762f61","value_len":0,"rdev":"259:0","ts":250})",
            R"({"event_type":"nvme_cmd","op_name":"retrieve","key_hex":"6b762f61","value_len":65536,"rdev":"259:0","ts":350})",
            R"({"event_type":"cq_overflow","dropped":1})",
            R"({"event_type":"drops","dropped":0})",
        });
    Report r = run(opts(mon, sem));
    EXPECT_EQ(r.join.mode, JoinMode::Key);
    EXPECT_EQ(r.all.exact_match, 2u);
    EXPECT_EQ(r.join.non_data.cmds, 1u);
    EXPECT_TRUE(r.events_summary);
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings.back().find("1 cq_overflow records"), std::string::npos) << r.warnings.back();
}

TEST(ValidateForeign, MalformedLmcacheLinesNameFileLineField) {
    Tmp t;
    const std::string meta =
        R"({"event_type":"kvio_meta","schema":2,"device_path":"/nonexistent","io_engine":"posix","block_align":4096,"header_bytes":4096})";
    const std::string ok = R"("key":"a","object_id":1,"bytes":4096,"slot_offset":0,"ts_start":1,"ts":2)";
    struct Case {
        std::vector<std::string> lines;
        std::string err;  // after "FILE:"
    } cases[] = {
        {{R"({"event_type":"kvio_meta","schema":3,"io_engine":"posix","block_align":4096,"header_bytes":0})"},
         "1: field 'schema': expected 2 (the LMCache kvio trace schema this reader knows), got 3"},
        {{R"({"event_type":"kvio_meta","schema":2,"io_engine":"spdk","block_align":4096,"header_bytes":0})"},
         "1: field 'io_engine': expected posix, io_uring, uring_cmd or cufile (or pread, psync, io_uring_cmd, gds), "
         "got \"spdk\""},
        {{R"({"event_type":"kvio_meta","schema":2,"io_engine":"posix","block_align":1000,"header_bytes":0})"},
         "1: field 'block_align': 1000 is not a multiple of 512"},
        {{R"({"event_type":"kvio_meta","schema":2,"io_engine":"posix","header_bytes":0})"},
         "1: field 'block_align': missing"},
        {{meta, "{\"op\":\"rename\"," + ok + "}"},
         "2: field 'op': expected \"store\", \"load\" or \"delete\", got \"rename\""},
        {{meta, R"({"op":"store","key":"a","object_id":1,"bytes":4096,"slot_offset":0,"ts_start":-1.5,"ts":2})"},
         "2: field 'ts_start': expected CLOCK_MONOTONIC seconds from 0 to 2^64 ns, got -1.5"},
        {{meta, R"({"op":"store","key":"a","object_id":1,"bytes":4096,"slot_offset":0,"ts_start":"1","ts":2})"},
         "2: field 'ts_start': expected CLOCK_MONOTONIC seconds (a fraction) or nanoseconds (an integer), got \"1\""},
        {{meta, R"({"op":"store","key":"a","object_id":1,"bytes":4096,"slot_offset":0,"ts_start":5,"ts":2})"},
         "2: field 'ts': ends before ts_start (2 < 5 ns)"},
        {{meta, "{\"op\":\"store\",\"user_data\":\"0x12_g4\"," + ok + "}"},
         "2: field 'user_data': expected a non-negative integer (decimal, or hex \"0x...\" with optional '_'), got "
         "\"0x12_g4\""},
        {{meta, "{\"op\":\"store\",\"user_data\":\"0x1_0000000000000000\"," + ok + "}"},
         "2: field 'user_data': \"0x1_0000000000000000\" does not fit in 64 bits"},
        {{meta, "{\"op\":\"store\",\"trace_id\":3,\"user_data\":\"0x00000004_00000000\"," + ok + "}"},
         "2: field 'user_data': its upper 32 bits (4) are not the record's trace_id 3"},
        {{meta, "{\"op\":\"store\",\"part\":\"q\"," + ok + "}"},
         "2: field 'part': expected \"kv\", \"k\" or \"v\", got \"q\""},
        {{meta, R"({"op":"store","key":"a","object_id":1,"bytes":4096,"ts_start":1,"ts":2})"},
         "2: field 'slot_offset': missing"},
        {{meta,
          R"({"op":"store","key":"a","object_id":1,"bytes":4096,"slot_offset":18446744073709551615,"ts_start":1,"ts":2})"},
         "2: field 'slot_offset': 18446744073709551615 + 8192 bytes ends beyond 2^64 bytes"},
        {{meta,
          R"({"op":"store","key":"a","object_id":1,"bytes":18446744073709551615,"slot_offset":0,"ts_start":1,"ts":2})"},
         "2: field 'bytes': 18446744073709551615 is beyond any device (its padded size overflows 64 bits)"},
        {{meta, "{\"op\":\"store\",\"components\":{\"k_bytes\":-1}," + ok + "}"},
         "2: field 'k_bytes': expected a non-negative integer, got -1"},
        {{meta, "{\"event_type\":\"kvio_meta\",\"op\":\"store\"," + ok + "}"},
         "2: field 'event_type': only the first line is a meta record; op records carry no event_type, got "
         "\"kvio_meta\""},
    };
    for (const auto& c : cases) {
        const std::string p = t.write("bad.jsonl", c.lines);
        try {
            read_semantic_lmcache(p);
            ADD_FAILURE() << "accepted: " << c.lines.back();
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), p + ":" + c.err);
        }
    }
}

TEST(ValidateForeign, MalformedMonitorLinesNameFileLineField) {
    Tmp t;
    const std::string cmd = R"("event_type":"nvme_cmd","ts":1,"rdev":"259:0")";
    struct Case {
        std::string line, err;  // err after "FILE:1: "
    } cases[] = {
        {R"({"ts":1})",
         "field 'event_type': missing (every monitor record has one; a kvio.events/1 file? --commands-format kvio)"},
        {R"({"event_type":"nvme_sq"})",
         "field 'event_type': expected nvme_cmd, nvme_cmp, cq_overflow, clock_anchor or drops, got \"nvme_sq\""},
        {"{" + cmd + R"(,"op_name":"trim","slba":0,"nlb":1,"bytes":512})",
         "field 'op_name': expected read, write, flush or other, got \"trim\""},
        {"{" + cmd + R"(,"op_name":"read","slba":0,"nlb":0,"bytes":512})",
         "field 'nlb': 0 blocks in a read (nlb counts from 1)"},
        {"{" + cmd + R"(,"op_name":"read","slba":0,"nlb":3,"bytes":512})",
         "field 'bytes': 512 is not a multiple of nlb 3"},
        {"{" + cmd + R"(,"op_name":"read","nlb":1,"bytes":512})", "field 'slba': missing"},
        {"{" + cmd + R"(,"op_name":"write","slba":0,"nlb":1})", "field 'data_len': missing"},
        {"{" + cmd + R"(,"op_name":"write","slba":36028797018963968,"nlb":1,"bytes":512})",
         "field 'slba': 36028797018963968 × 512 bytes is beyond any device"},
        {"{" + cmd + R"(,"op_name":"write","slba":0,"nlb":8388608,"bytes":4294967296000})",
         "field 'bytes': 4294967296000 is not a command size (at most 4 GiB)"},
        {"{" + cmd + R"(,"op_name":"read","slba":0,"nlb":1,"bytes":512,"user_data":-1})",
         "field 'user_data': expected a non-negative integer, got -1"},
        {R"({"event_type":"nvme_cmd","ts":1,"rdev":"nvme0","op_name":"read","slba":0,"nlb":1,"bytes":512})",
         "field 'rdev': expected a device number or \"MAJ:MIN\", got \"nvme0\""},
        {"{" + cmd + R"(,"op_name":"store","key_hex":"6b7","value_len":1})",
         "field 'key_hex': expected an even number of hex digits, got 3"},
        {"{" + cmd + R"(,"op_name":"store","key_hex":"zz","value_len":1})",
         "field 'key_hex': expected hex digits, got \"zz\""},
        {"{" + cmd + R"(,"op_name":"store","key_hex":"6b76","key_len":3,"value_len":1})",
         "field 'key_len': 3 is longer than key_hex's 2 bytes"},
        {"{" + cmd + R"(,"op_name":"store","key_hex":"6b76"})",
         "field 'value_len': missing (a KV store moves value_len bytes)"},
        {"{" + cmd + R"(,"op_name":"read","key_hex":"6b76","value_len":1})",
         "field 'op_name': expected store, retrieve, list, delete or exist (a KV command: it has key_hex), got "
         "\"read\""},
        {"{" + cmd + R"(,"op_name":"read","slba":0,"nlb":1,"bytes":512,"nvme_opcode":300})",
         "field 'nvme_opcode': expected an NVMe opcode (0 to 255), got 300"},
        {R"({"event_type":"nvme_cmp","user_data":1,"err":"EIO","ts":1})",
         "field 'err': expected an integer, got \"EIO\""},
        {R"({"event_type":"nvme_cmp","user_data":1})", "field 'ts': missing"},
        {R"({"event_type":"clock_anchor","monotonic_ns":1})", "field 'realtime_ns': missing"},
        {R"({"event_type":"drops","dropped":1.5})", "field 'dropped': expected a non-negative integer, got 1.5"},
        {"[1]", "expected a JSON object"},
    };
    for (const auto& c : cases) {
        const std::string p = t.write("bad.jsonl", {c.line});
        try {
            MonitorReader r(p);
            Command x;
            while (r.next(x)) {}
            ADD_FAILURE() << "accepted: " << c.line;
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), p + ":1: " + c.err);
        }
    }
}

// `kvio gen --semantic X.zst`: each op is decodable as soon as it is written (a killed gen keeps every completed
// op), close() ends the frame, and validate reads it as the plain file.
TEST(ValidateForeign, SemanticWriterZstdFlushesEachOpAndFinishesAtClose) {
    Tmp t;
    Synth s = synth(t, "posix");
    std::vector<nlohmann::ordered_json> lines;
    {
        std::ifstream in(s.sem);
        std::string l;
        while (std::getline(in, l)) lines.push_back(nlohmann::ordered_json::parse(l));
    }
    const std::string z = t.path("sem.jsonl.zst");
    workload::SemanticWriter w(z);
    for (size_t i = 0; i < 11; ++i) w.write(lines[i]);
    std::vector<std::string> warnings;
    auto old = set_warning_sink([&](const std::string& m) { warnings.push_back(m); });
    EXPECT_FALSE(std::filesystem::exists(z)) << "under its name only once closed";
    EXPECT_EQ(read_semantic(w.write_path()).ops.size(), 10u) << "every op written so far, before close";
    EXPECT_EQ(warnings.size(), 1u);
    for (size_t i = 11; i < lines.size(); ++i) w.write(lines[i]);
    w.close();
    warnings.clear();
    EXPECT_EQ(read_input(z), slurp(s.sem));
    EXPECT_TRUE(warnings.empty());
    set_warning_sink(old);
    EXPECT_EQ(std::system(("zstd -q -t " + z).c_str()), 0);
    EXPECT_EQ(scores_of(report_json(run(opts(s.ev, z)))), scores_of(report_json(run(opts(s.ev, s.sem)))));
}
