// importer/engine_layout.h: engines' KV file directories (docs/engine_layouts.md) read, checked and joined to
// `kvio trace --files` events; validate/objects.h: the per-object report of the result.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/error_of.h"
#include "common/error.h"
#include "importer/engine_layout.h"
#include "tests/engine_layout_writer.h"
#include "validate/files.h"
#include "validate/objects.h"
#include "validate/semantic.h"
#include "validate/synth.h"
#include "workload/geometry.h"

using namespace kvio;
using kvio::test::hex16;
using kvio::test::lmcache_disk_rel;
using kvio::test::vllm_fs_rel;
using kvio::test::write_kv_file;

namespace {

/// A fresh directory under /tmp (kvio_* as tests/leftovers.sh expects), removed at the end.
struct Dir {
    std::string path;
    Dir() {
        char t[] = "/tmp/kvio_layout_XXXXXX";
        path = mkdtemp(t);
    }
    ~Dir() { std::filesystem::remove_all(path); }
};

/// tiny-1b (12 layers, 4 KV heads, head_dim 128, bf16): 24576 bytes per token per rank at tp 1.
workload::Geometry tiny(uint32_t tokens = 16) {
    workload::GeometryOptions g;
    g.chunk_tokens = tokens;
    return workload::compute_geometry(workload::builtin_model("tiny-1b"), g);
}

importer::LayoutOptions vllm_opts() {
    importer::LayoutOptions o;
    o.engine = importer::EngineLayout::VllmFs;
    o.geometry = tiny();
    return o;
}

using kvio::test::error_of;

}  // namespace

TEST(EngineLayout, TinyGeometryIs24KiBPerTokenPerRank) { EXPECT_EQ(tiny().per_rank_bytes_per_token, 24576u); }

// Three blocks of 2 x 16 tokens each (the path says block_size_16_blocks_per_file_2): 786432 bytes each, keyed by
// their hash; llm-d's in-flight temporary file is left out and counted.
TEST(EngineLayout, VllmFsNamesSizesAndPathParameters) {
    Dir d;
    const uint64_t want = 2 * 16 * 24576;
    for (uint64_t h : {0x00ab12cd34ef5678ull, 0xfedcba9876543210ull, 0x1ull})
        write_kv_file(d.path, vllm_fs_rel("m", 16, 2, 1, 0, "bfloat16", h), want, true);
    write_kv_file(d.path, vllm_fs_rel("m", 16, 2, 1, 0, "bfloat16", 7) + "_1234.tmp", 100, true);
    const importer::LayoutScan s = importer::scan_layout(d.path, vllm_opts());
    ASSERT_EQ(s.files.size(), 3u);
    EXPECT_EQ(s.skipped_tmp, 1u);
    EXPECT_EQ(s.files[0].key, "0000000000000001");
    EXPECT_EQ(s.files[1].key, "00ab12cd34ef5678");
    EXPECT_EQ(s.files[2].key, "fedcba9876543210");
    for (const auto& f : s.files) {
        EXPECT_EQ(f.size, want);
        EXPECT_EQ(f.projected_bytes, want);
        EXPECT_EQ(f.tokens, 32u);
        EXPECT_EQ(f.block_tokens, 32u);
        EXPECT_FALSE(f.partial);
        struct stat st {};
        ASSERT_EQ(stat(f.path.c_str(), &st), 0);
        EXPECT_EQ(f.ino, st.st_ino);
        EXPECT_EQ(f.fs_dev, std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)));
    }
}

TEST(EngineLayout, VllmFsBadNamesAndSizesNameTheFile) {
    {
        Dir d;  // 16 tokens x 24576 expected, one byte short
        const std::string rel = vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", 0x42);
        write_kv_file(d.path, rel, 16 * 24576 - 1, true);
        const std::string e = error_of([&] { importer::scan_layout(d.path, vllm_opts()); });
        EXPECT_NE(e.find(d.path + "/" + rel + ": field 'size': 393215 bytes, expected 393216"), std::string::npos) << e;
    }
    {
        Dir d;
        write_kv_file(d.path, "abc/de/not-a-hash.bin", 16 * 24576, true);
        const std::string e = error_of([&] { importer::scan_layout(d.path, vllm_opts()); });
        EXPECT_NE(e.find("abc/de/not-a-hash.bin: field 'name': expected <16 lowercase hex digits>.bin"),
                  std::string::npos)
            << e;
    }
    {
        Dir d;  // a valid hash under the wrong fan-out directories
        write_kv_file(d.path, "000/00/" + hex16(0xabcdef0000000000ull) + ".bin", 16 * 24576, true);
        const std::string e = error_of([&] { importer::scan_layout(d.path, vllm_opts()); });
        EXPECT_NE(e.find("000/00/abcdef0000000000.bin: field 'name': expected under abc/de/"), std::string::npos) << e;
    }
    {
        Dir d;  // the path says 16-token blocks, the flag 32
        write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", 3), 16 * 24576, true);
        importer::LayoutOptions o = vllm_opts();
        o.block_tokens = 32;
        const std::string e = error_of([&] { importer::scan_layout(d.path, o); });
        EXPECT_NE(e.find("field 'block_size': the path says 16, --block-tokens says 32"), std::string::npos) << e;
    }
    {
        Dir d;  // tp_2 in the path, geometry tp 1
        write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 2, 0, "bfloat16", 3), 16 * 24576, true);
        const std::string e = error_of([&] { importer::scan_layout(d.path, vllm_opts()); });
        EXPECT_NE(e.find("field 'tp': the path says tp_2, the geometry has --tp 1"), std::string::npos) << e;
    }
    {
        Dir d;
        const std::string e = error_of([&] { importer::scan_layout(d.path, vllm_opts()); });
        EXPECT_NE(e.find(d.path + ": no vllm-fs KV file under it"), std::string::npos) << e;
    }
}

// LMCache: a full 256-token chunk and a last chunk of 100 tokens; world_size must be the geometry's tp.
TEST(EngineLayout, LmcacheDiskChunksPartialAndErrors) {
    importer::LayoutOptions o;
    o.engine = importer::EngineLayout::LmcacheDisk;
    o.geometry = tiny(256);
    {
        Dir d;
        write_kv_file(d.path, lmcache_disk_rel("org/tiny", 1, 0, 0xbeef, "bfloat16"), 256 * 24576, true);
        write_kv_file(d.path, lmcache_disk_rel("org/tiny", 1, 0, 0xcafe, "bfloat16"), 100 * 24576, true);
        const importer::LayoutScan s = importer::scan_layout(d.path, o);
        ASSERT_EQ(s.files.size(), 2u);
        EXPECT_EQ(s.files[0].rel, "vllm@org-tiny@1@0@beef@bfloat16.pt");
        EXPECT_EQ(s.files[0].key, "beef");
        EXPECT_EQ(s.files[0].tokens, 256u);
        EXPECT_FALSE(s.files[0].partial);
        EXPECT_EQ(s.files[0].projected_bytes, 6291456u);
        EXPECT_EQ(s.files[1].key, "cafe");
        EXPECT_EQ(s.files[1].tokens, 100u);
        EXPECT_TRUE(s.files[1].partial);
        EXPECT_EQ(s.files[1].projected_bytes, 2457600u);
    }
    struct Case {
        std::string rel;
        uint64_t size;
        std::string want;
    } cases[] = {
        {"vllm@m@1@0@beef.pt", 1000, "vllm@m@1@0@beef.pt: field 'size': 1000 bytes is not a whole, non-zero number"},
        {"vllm@m@1@0@beef.pt", 257 * 24576, "field 'size': 6316032 bytes = 257 tokens, more than a chunk of 256"},
        {"vllm@m@2@0@beef.pt", 24576, "vllm@m@2@0@beef.pt: field 'world_size': 2, the geometry has --tp 1"},
        {"vllm@m@1@0@xyz.pt", 24576, "field 'chunk_hash': expected hex or decimal digits, got \"xyz\""},
        {"chunk.pt", 24576, "chunk.pt: field 'name': expected FMT@MODEL@WORLD_SIZE@WORKER_ID@CHUNK_HASH"},
        {"vllm@m@1@0@beef.bin", 24576, "vllm@m@1@0@beef.bin: field 'name'"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.rel);
        Dir d;
        write_kv_file(d.path, c.rel, c.size, true);
        const std::string e = error_of([&] { importer::scan_layout(d.path, o); });
        EXPECT_NE(e.find(c.want), std::string::npos) << e;
    }
}

namespace {

/// A block command on 7:3 attributed to `f` (its stat identity and generation `gen`).
std::string file_cmd(const char* op, uint64_t bytes, uint64_t ts, const importer::KvFile& f, uint64_t gen) {
    return nlohmann::json{{"type", "cmd"},  {"src", "block"},     {"dev", "7:3"},   {"op", op},
                          {"sector", 2048}, {"bytes", bytes},     {"ts_issue", ts}, {"ts_complete", ts + 50},
                          {"ino", f.ino},   {"fs_dev", f.fs_dev}, {"gen", gen}}
               .dump() +
           "\n";
}

/// The closing summary record of a whole stream (a stream without one is cut).
const char* const kSummary = "{\"type\":\"summary\",\"events\":0,\"dropped\":0}\n";

/// Writes the kvio.trace/1 summary `path` whose files table has `rows` (`kvio trace --files --json`), and returns
/// `path`.
std::string write_trace_json(const std::string& path, const nlohmann::json& rows = nlohmann::json::array()) {
    std::ofstream(path) << nlohmann::json{{"schema", "kvio.trace/1"}, {"files", rows}}.dump();
    return path;
}

/// A files-table row of `f`: the application read `rd` and wrote `wr` bytes of it, the device moved `dev_rd` and
/// `dev_wr`.
nlohmann::json file_row(const importer::KvFile& f, uint64_t gen, uint64_t rd, uint64_t wr, uint64_t dev_rd = 0,
                        uint64_t dev_wr = 0) {
    return {{"path", f.path},
            {"files", 1},
            {"ino", f.ino},
            {"fs_dev", f.fs_dev},
            {"gen", gen},
            {"read", {{"cmds", dev_rd ? 1 : 0}, {"bytes", dev_rd}, {"app_calls", 1}, {"app_bytes", rd}}},
            {"write", {{"cmds", dev_wr ? 1 : 0}, {"bytes", dev_wr}, {"app_calls", 1}, {"app_bytes", wr}}}};
}

/// i_generation where the filesystem answers FS_IOC_GETVERSION, else any value (the import adopts the stream's).
uint64_t gen_of(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY);
    long g = 0;
    const bool ok = fd >= 0 && ioctl(fd, FS_IOC_GETVERSION, &g) == 0;
    if (fd >= 0) close(fd);
    return ok ? uint32_t(g) : 77;
}

/// Two 16-token vLLM files of model "m" (hashes 0xa and 0xb, tiny-1b's 24576 bytes per token) in a fresh directory,
/// scanned as vllm_opts() scans them; their generations (gen_of), and the paths of an events stream and a semantic
/// log in a second directory `outs`.
struct TwoKvFiles {
    static constexpr uint64_t size = 16 * 24576;  // 393216
    Dir d, outs;
    importer::LayoutScan s;
    uint64_t ga = 0, gb = 0;
    std::string ev = outs.path + "/ev.jsonl", sem = outs.path + "/sem.jsonl";
    TwoKvFiles() {
        for (uint64_t h : {0xa, 0xb}) write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", h), size, true);
        s = importer::scan_layout(d.path, vllm_opts());
        if (s.files.size() == 2) ga = gen_of(s.files[0].path), gb = gen_of(s.files[1].path);
    }
};

/// Import options over events file `ev` whose files all map to one extent at 1 MiB of disk 7:3 (limit 128 KiB,
/// 4 KiB filesystem blocks), so tests need no real disk.
importer::ImportOptions synthetic_import(const std::string& ev) {
    importer::ImportOptions io;
    io.layout = vllm_opts();
    io.events_path = ev;
    if (!std::filesystem::exists(ev + ".trace.json")) write_trace_json(ev + ".trace.json");
    io.trace_json_path = ev + ".trace.json";
    io.mapper = [](const importer::KvFile& f) {
        importer::MappedFile m;
        m.dev = "7:3";
        m.extents = {{1048576, f.size}};
        m.max_sectors_kb = 128;
        m.lba_bytes = 4096;
        return m;
    };
    return io;
}

/// Imports layout directory `dir` with `synthetic_import(ev)` into the semantic log `sem` (closed before return).
importer::ImportSummary import_to_file(const std::string& dir, const std::string& ev, const std::string& sem) {
    std::ofstream out(sem);
    return importer::import_engine_layout(dir, synthetic_import(ev), out);
}

}  // namespace

// Block A written whole (two 196608-byte commands) and read back whole; block B written half; block C untouched.
// The import writes stores for A and B and a load for A, sized by the geometry; --objects says A's store and load
// match their projection byte for byte and command for command (128 KiB kernel limit: 3 commands of 393216 bytes),
// B's store does not.
TEST(EngineLayout, ImportAndObjectsReportOnSyntheticEvents) {
    Dir d;
    const uint64_t size = 16 * 24576;  // 393216
    for (uint64_t h : {0xa, 0xb, 0xc}) write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", h), size, true);
    const importer::LayoutScan s = importer::scan_layout(d.path, vllm_opts());
    ASSERT_EQ(s.files.size(), 3u);
    const auto &a = s.files[0], &b = s.files[1];
    const uint64_t ga = gen_of(a.path), gb = gen_of(b.path);
    Dir outs;  // outside the scanned directory
    const std::string ev = outs.path + "/ev.jsonl";
    std::ofstream(ev) << file_cmd("write", 196608, 1000, a, ga) << file_cmd("write", 196608, 1100, a, ga)
                      << file_cmd("write", 196608, 1200, b, gb) << file_cmd("read", 393216, 5000, a, ga) << kSummary;
    const std::string sem = outs.path + "/sem.jsonl";
    const importer::ImportSummary sum = import_to_file(d.path, ev, sem);
    EXPECT_EQ(sum.stores, 2u);
    EXPECT_EQ(sum.loads, 1u);
    EXPECT_EQ(sum.untouched, 1u);
    EXPECT_EQ(sum.projected_bytes, 3 * size);

    const validate::SemanticTrace t = validate::read_semantic(sem);
    ASSERT_EQ(t.ops.size(), 3u);
    EXPECT_EQ(t.meta.layout, "files");
    EXPECT_EQ(t.meta.max_sectors_kb, 128u);
    EXPECT_EQ(t.ops[0].key, hex16(0xa));  // ts order: A's store (1000), B's store (1200), A's load (5000)
    EXPECT_EQ(t.ops[0].kind, validate::OpKind::Store);
    EXPECT_EQ(t.ops[0].ts_start, 1000u);
    EXPECT_EQ(t.ops[0].ts, 1150u);
    EXPECT_EQ(t.ops[1].key, hex16(0xb));
    EXPECT_EQ(t.ops[2].kind, validate::OpKind::Load);
    EXPECT_EQ(t.ops[2].bytes, size);
    EXPECT_TRUE(t.ops[0].has_file);
    EXPECT_EQ(t.ops[0].ino, a.ino);
    EXPECT_EQ(t.ops[0].gen, ga);
    EXPECT_EQ(t.ops[0].path, a.rel);

    const validate::ObjectsReport r = validate::join_objects(sem, ev, {});
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_EQ(r.rows[0].projected_bytes, size);
    EXPECT_EQ(r.rows[0].measured_bytes, size);
    EXPECT_EQ(r.rows[0].projected_cmds, 3u);
    EXPECT_EQ(r.rows[0].measured_cmds, 2u);
    EXPECT_EQ(r.rows[1].measured_bytes, 196608u);
    EXPECT_FALSE(r.rows[1].bytes_match());
    EXPECT_EQ(r.rows[2].measured_bytes, size);
    EXPECT_EQ(r.rows[2].measured_cmds, 1u);
    EXPECT_EQ(r.bytes_exact, 2u);
    EXPECT_EQ(r.cmds_exact, 0u);
    std::ostringstream text;
    validate::print_objects_report(text, r);
    EXPECT_NE(text.str().find("objects: bytes exact 2/3"), std::string::npos) << text.str();
    EXPECT_EQ(r.stored_not_loaded, 1u);  // B
    EXPECT_EQ(r.loaded_not_stored, 0u);
    EXPECT_TRUE(r.events.summary);
    EXPECT_NE(text.str().find("files: 1 stored and never loaded, 0 loaded and never stored"), std::string::npos)
        << text.str();
}

// Events traced without --files name no file: the import says so, naming the events file and the field, instead of
// writing every KV file as untouched.
TEST(EngineLayout, ImportRefusesEventsThatNameNoFile) {
    Dir d;
    write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", 0xa), 16 * 24576, true);
    Dir outs;
    const std::string ev = outs.path + "/ev.jsonl";
    std::ofstream(ev) << "{\"type\":\"cmd\",\"src\":\"block\",\"dev\":\"7:3\",\"op\":\"write\",\"sector\":0,"
                         "\"bytes\":4096,\"ts_issue\":1}\n"
                      << kSummary;
    importer::ImportOptions io;
    io.layout = vllm_opts();
    io.events_path = ev;
    io.trace_json_path = write_trace_json(outs.path + "/t.json");
    std::ostringstream out;
    const std::string e = error_of([&] { importer::import_engine_layout(d.path, io, out); });
    EXPECT_NE(e.find(ev + ": field 'ino': none of its 2 records names a file"), std::string::npos) << e;
    EXPECT_NE(e.find("kvio trace --files"), std::string::npos) << e;
    // An empty events file is called empty, not a trace without --files.
    std::ofstream(ev, std::ios::trunc).close();
    const std::string empty = error_of([&] { importer::import_engine_layout(d.path, io, out); });
    EXPECT_NE(empty.find(ev + ": empty: no record"), std::string::npos) << empty;
}

// A command of two files' blocks names only the first (the kernel merged them): the import counts that file as merged,
// as its commands moved more bytes than it holds; a file whose commands moved exactly its size is not.
TEST(EngineLayout, ImportCountsFilesWhoseCommandsMergedOthers) {
    const TwoKvFiles f;
    ASSERT_EQ(f.s.files.size(), 2u);
    const Dir& d = f.d;
    const uint64_t size = TwoKvFiles::size;
    const auto &a = f.s.files[0], &b = f.s.files[1];
    Dir outs;
    const std::string ev = outs.path + "/ev.jsonl";
    std::ofstream(ev) << file_cmd("write", 2 * size, 1000, a, gen_of(a.path))  // a's and b's blocks in one command
                      << file_cmd("read", size, 5000, b, gen_of(b.path)) << kSummary;
    importer::ImportOptions io = synthetic_import(ev);
    std::ostringstream out;
    const importer::ImportSummary sum = importer::import_engine_layout(d.path, io, out);
    EXPECT_EQ(sum.stores, 1u);
    EXPECT_EQ(sum.loads, 1u);
    EXPECT_EQ(sum.merged, 1u);
}

// The same merged command with its "files" (a kvio that writes each file's part): each file takes its own bytes, so
// nothing counts as merged and --objects finds both stores exact.
TEST(EngineLayout, ImportTakesEachFilesPartOfAMergedCommand) {
    const TwoKvFiles f;
    ASSERT_EQ(f.s.files.size(), 2u);
    const Dir& d = f.d;
    const uint64_t size = TwoKvFiles::size;
    const auto &a = f.s.files[0], &b = f.s.files[1];
    const uint64_t ga = f.ga, gb = f.gb;
    nlohmann::json merged = nlohmann::json::parse(file_cmd("write", 2 * size, 1000, a, ga));
    merged["files"] = nlohmann::json::array({{{"ino", a.ino}, {"fs_dev", a.fs_dev}, {"gen", ga}, {"bytes", size}},
                                             {{"ino", b.ino}, {"fs_dev", b.fs_dev}, {"gen", gb}, {"bytes", size}}});
    merged["nofile_bytes"] = 0;
    const std::string &ev = f.ev, &sem = f.sem;
    std::ofstream(ev) << merged.dump() << "\n" << file_cmd("read", size, 5000, b, gb) << kSummary;
    const importer::ImportSummary sum = import_to_file(d.path, ev, sem);
    EXPECT_EQ(sum.stores, 2u);
    EXPECT_EQ(sum.loads, 1u);
    EXPECT_EQ(sum.merged, 0u);
    const validate::ObjectsReport r = validate::join_objects(sem, ev, {});
    ASSERT_EQ(r.rows.size(), 3u);
    for (const auto& row : r.rows) {
        EXPECT_EQ(row.measured_bytes, size) << row.path;
        EXPECT_EQ(row.measured_cmds, 1u) << row.path;
    }
    EXPECT_EQ(r.bytes_exact, 3u);
    EXPECT_EQ(r.other_file_cmds, 0u);
    // One command of two files no op names is one command of other files, not two.
    nlohmann::json others = merged;
    others["files"][0]["ino"] = a.ino + 1000003;
    others["files"][1]["ino"] = a.ino + 1000004;
    others["ino"] = a.ino + 1000003;
    std::ofstream(ev) << merged.dump() << "\n"
                      << others.dump() << "\n"
                      << file_cmd("read", size, 5000, b, gb) << kSummary;
    EXPECT_EQ(validate::join_objects(sem, ev, {}).other_file_cmds, 1u);
}

// Events of another run name files, but none of this directory's: the import refuses them, naming the events file,
// the field and the directory, and writes nothing (an empty stream would only fail later, in validate).
TEST(EngineLayout, ImportRefusesEventsOfAnotherRun) {
    Dir d;
    write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", 0xa), 16 * 24576, true);
    const importer::LayoutScan s = importer::scan_layout(d.path, vllm_opts());
    ASSERT_EQ(s.files.size(), 1u);
    importer::KvFile other = s.files[0];
    other.ino += 1000003;  // another run's file
    Dir outs;
    const std::string ev = outs.path + "/ev.jsonl";
    std::ofstream(ev) << file_cmd("write", 4096, 1000, other, 1) << kSummary;
    importer::ImportOptions io;
    io.layout = vllm_opts();
    io.events_path = ev;
    io.trace_json_path = write_trace_json(outs.path + "/t.json");
    std::ostringstream out;
    const std::string e = error_of([&] { importer::import_engine_layout(d.path, io, out); });
    EXPECT_NE(e.find(ev + ": field 'ino': none of the 1 KV files under " + d.path), std::string::npos) << e;
    EXPECT_TRUE(out.str().empty()) << out.str();
}

// A semantic file whose ops name no file cannot be joined by file: the error names the line and the importer.
TEST(EngineLayout, ObjectsNeedOpsThatNameTheirFile) {
    Dir d;
    const std::string sem = d.path + "/s.jsonl", ev = d.path + "/e.jsonl";
    std::ofstream(sem) << "{\"type\":\"meta\",\"schema\":\"kvio.semantic/1\",\"engine\":\"posix\",\"layout\":\"files\","
                          "\"lba_bytes\":4096,\"max_sectors_kb\":128}\n"
                          "{\"op\":\"store\",\"object_id\":0,\"bytes\":4096,\"dev\":\"7:3\",\"dev_off\":0,"
                          "\"ts_start\":1,\"ts\":2}\n";
    std::ofstream(ev) << "{\"type\":\"cmd\",\"src\":\"block\",\"dev\":\"7:3\",\"op\":\"write\",\"sector\":0,"
                         "\"bytes\":4096,\"ts_issue\":1,\"ino\":5,\"fs_dev\":\"7:3\",\"gen\":0}\n"
                      << kSummary;
    const std::string e = error_of([&] { validate::join_objects(sem, ev, {}); });
    EXPECT_NE(e.find(sem + ":2: field 'ino': missing: --objects needs ops that name their file"), std::string::npos)
        << e;
}

// A file the application read whole from the page cache (the trace's files table: app bytes read, no device read)
// is a load measured 0, not no load; --objects then finds its bytes short. Without the table and without syscall
// records the import cannot see such a load: it refuses, saying what to add.
TEST(EngineLayout, ACachedReadIsALoadMeasuredZero) {
    const TwoKvFiles f;
    ASSERT_EQ(f.s.files.size(), 2u);
    const Dir& d = f.d;
    const uint64_t size = TwoKvFiles::size;
    const auto &a = f.s.files[0], &b = f.s.files[1];
    const uint64_t ga = f.ga, gb = f.gb;
    const Dir& outs = f.outs;
    const std::string &ev = f.ev, &sem = f.sem;
    // A written and read from the device; B written, then read only from the page cache.
    std::ofstream(ev) << file_cmd("write", size, 1000, a, ga) << file_cmd("write", size, 2000, b, gb)
                      << file_cmd("read", size, 5000, a, ga) << kSummary;
    write_trace_json(ev + ".trace.json", nlohmann::json::array({file_row(a, ga, size, size, size, size),
                                                                file_row(b, gb, size, size, 0, size)}));
    const importer::ImportSummary sum = import_to_file(d.path, ev, sem);
    EXPECT_EQ(sum.stores, 2u);
    EXPECT_EQ(sum.loads, 2u);
    EXPECT_EQ(sum.cached_loads, 1u);
    const validate::ObjectsReport r = validate::join_objects(sem, ev, {});
    ASSERT_EQ(r.rows.size(), 4u);
    const validate::ObjectRow* cached = nullptr;
    for (const auto& row : r.rows)
        if (row.kind == validate::OpKind::Load && row.ino == b.ino) cached = &row;
    ASSERT_NE(cached, nullptr);
    EXPECT_EQ(cached->projected_bytes, size);
    EXPECT_EQ(cached->measured_bytes, 0u);
    EXPECT_EQ(cached->measured_cmds, 0u);
    EXPECT_EQ(r.bytes_exact, 3u);
    EXPECT_DOUBLE_EQ(validate::objects_bytes_exact_pct(r), 75.0);

    importer::ImportOptions bare = synthetic_import(ev);
    bare.trace_json_path.clear();
    std::ostringstream out;
    const std::string e = error_of([&] { importer::import_engine_layout(d.path, bare, out); });
    EXPECT_NE(e.find(ev + ": field 'name': no syscall record"), std::string::npos) << e;
    EXPECT_NE(e.find("give --trace-json T"), std::string::npos) << e;
    EXPECT_NE(e.find("--syscalls"), std::string::npos) << e;
    EXPECT_TRUE(out.str().empty());

    // The same read seen by a syscall record (--syscalls) instead of the table: a load measured 0 too.
    const std::string ev2 = outs.path + "/ev2.jsonl";
    nlohmann::json sc = {{"type", "syscall"}, {"name", "read"},     {"pid", 1},        {"tid", 1},
                         {"fd", 3},           {"ts_enter", 6000},   {"ts_exit", 6100}, {"ret", size},
                         {"ino", b.ino},      {"fs_dev", b.fs_dev}, {"gen", gb}};
    std::ofstream(ev2) << file_cmd("write", size, 2000, b, gb) << sc.dump() << "\n" << kSummary;
    importer::ImportOptions with_sys = synthetic_import(ev2);
    with_sys.trace_json_path.clear();
    std::ostringstream out2;
    const importer::ImportSummary sum2 = importer::import_engine_layout(d.path, with_sys, out2);
    EXPECT_EQ(sum2.loads, 1u);
    EXPECT_EQ(sum2.cached_loads, 1u);

    // The same stream having dropped records: the read may have gone to the device, its record lost. Without the
    // summary's table to tell, the import refuses unless told to accept a partial stream.
    const std::string ev3 = outs.path + "/ev3.jsonl";
    std::ofstream(ev3) << file_cmd("write", size, 2000, b, gb) << sc.dump() << "\n"
                       << "{\"type\":\"summary\",\"events\":0,\"dropped\":3}\n";
    importer::ImportOptions lossy = synthetic_import(ev3);
    lossy.trace_json_path.clear();
    std::ostringstream out3;
    const std::string e3 = error_of([&] { importer::import_engine_layout(d.path, lossy, out3); });
    EXPECT_NE(e3.find(ev3 + ": 1 loads have no device read in a stream that lost records (3 dropped"),
              std::string::npos)
        << e3;
    EXPECT_TRUE(out3.str().empty());
    lossy.accept_partial = true;
    std::ostringstream out4;
    EXPECT_EQ(importer::import_engine_layout(d.path, lossy, out4).cached_loads, 1u);
}

// A file the trace summary's table counts device reads for, with none in the stream (records cut or dropped), is not
// a load from the page cache: the import refuses it unless told to accept a partial stream, and then counts it apart.
// A file the table counts none for is the cached load it was.
TEST(EngineLayout, AStreamShortOfTheSummarysDeviceBytesIsNotACachedLoad) {
    const TwoKvFiles f;
    const uint64_t size = TwoKvFiles::size;
    const auto &a = f.s.files[0], &b = f.s.files[1];
    const uint64_t ga = f.ga, gb = f.gb;
    const std::string& ev = f.ev;
    std::ofstream(ev) << file_cmd("write", size, 1000, a, ga) << file_cmd("write", size, 2000, b, gb) << kSummary;
    write_trace_json(ev + ".trace.json", nlohmann::json::array({file_row(a, ga, size, size, size, size),
                                                                file_row(b, gb, size, size, 0, size)}));
    std::ostringstream out;
    const std::string e = error_of([&] { importer::import_engine_layout(f.d.path, synthetic_import(ev), out); });
    EXPECT_NE(e.find(ev + ": 1 stores or loads of the KV files have fewer device bytes"), std::string::npos) << e;
    EXPECT_NE(e.find("--partial"), std::string::npos) << e;
    EXPECT_TRUE(out.str().empty());
    importer::ImportOptions partial = synthetic_import(ev);
    partial.accept_partial = true;
    std::ostringstream out2;
    const importer::ImportSummary sum = importer::import_engine_layout(f.d.path, partial, out2);
    EXPECT_EQ(sum.loads, 2u);
    EXPECT_EQ(sum.short_ops, 1u);
    EXPECT_EQ(sum.cached_loads, 1u);  // B's only
}

// A run whose loads all came from the page cache, where the device saw only metadata (commands naming no file):
// --objects scores it (each load measured 0, with a warning), where the files join refuses a stream of no file.
TEST(EngineLayout, ObjectsScoreARunWhoseDeviceSawOnlyMetadata) {
    const TwoKvFiles f;
    const uint64_t size = TwoKvFiles::size;
    const auto &a = f.s.files[0], &b = f.s.files[1];
    const uint64_t ga = f.ga, gb = f.gb;
    const std::string &ev = f.ev, &sem = f.sem;
    const std::string journal =
        nlohmann::json{{"type", "cmd"}, {"src", "block"}, {"dev", "7:3"},    {"op", "write"},
                       {"sector", 8},   {"bytes", 4096},  {"ts_issue", 100}, {"ts_complete", 150}}
            .dump() +
        "\n";
    std::ofstream(ev) << journal << kSummary;
    write_trace_json(ev + ".trace.json", nlohmann::json::array({file_row(a, ga, size, 0), file_row(b, gb, size, 0)}));
    const importer::ImportSummary sum = import_to_file(f.d.path, ev, sem);
    EXPECT_EQ(sum.loads, 2u);
    EXPECT_EQ(sum.cached_loads, 2u);
    const validate::ObjectsReport r = validate::join_objects(sem, ev, {});
    ASSERT_EQ(r.rows.size(), 2u);
    for (const auto& row : r.rows) EXPECT_EQ(row.measured_bytes, 0u);
    EXPECT_EQ(r.unattributed_cmds, 1u);
    const std::string e = error_of([&] { validate::join_files(ev); });
    EXPECT_NE(e.find(ev + ": none of its 1 read/write device commands carries a file (ino): trace with --files"),
              std::string::npos)
        << e;
}

// An events stream cut in the middle (JSONL: whole lines then half of one; no closing summary): the import and
// --objects refuse it, naming the file and its last complete record, unless told to accept a partial stream, and
// then count it as cut. A read whose completion was lost is counted.
TEST(EngineLayout, CutJsonlStreamAndLostCompletionsAreSaid) {
    Dir d;
    const uint64_t size = 16 * 24576;
    write_kv_file(d.path, vllm_fs_rel("m", 16, 1, 1, 0, "bfloat16", 0xa), size, true);
    const importer::LayoutScan s = importer::scan_layout(d.path, vllm_opts());
    const auto& a = s.files[0];
    const uint64_t ga = gen_of(a.path);
    Dir outs;
    const std::string ev = outs.path + "/ev.jsonl", sem = outs.path + "/sem.jsonl";
    nlohmann::json lost = nlohmann::json::parse(file_cmd("read", 4096, 9000, a, ga));
    lost.erase("ts_complete");
    lost.erase("ino");
    lost["complete_lost"] = true;
    const std::string whole =
        file_cmd("write", size, 1000, a, ga) + file_cmd("read", size, 5000, a, ga) + lost.dump() + "\n" + kSummary;
    const std::string cut = whole.substr(0, whole.size() - std::string(kSummary).size() / 2);
    std::ofstream(ev) << cut;
    std::ostringstream out;
    std::string e = error_of([&] { import_to_file(d.path, ev, sem); });
    EXPECT_NE(e.find(ev + ": no closing summary: the stream is cut; import it anyway with --partial"),
              std::string::npos)
        << e;
    importer::ImportOptions partial = synthetic_import(ev);
    partial.accept_partial = true;
    std::ofstream so(sem);
    const importer::ImportSummary sum = importer::import_engine_layout(d.path, partial, so);
    so.close();
    EXPECT_FALSE(sum.events.summary);
    EXPECT_EQ(sum.events.records, 3u);
    EXPECT_EQ(sum.events.last_line, 3u);
    EXPECT_EQ(sum.events.lost_completions, 1u);
    EXPECT_EQ(sum.loads, 1u);
    e = error_of([&] { validate::join_objects(sem, ev, {}); });
    EXPECT_NE(e.find(ev + ": no closing summary: the stream is cut; score it anyway with --partial"), std::string::npos)
        << e;
    const validate::ObjectsReport r = validate::join_objects(sem, ev, {}, true);
    EXPECT_FALSE(r.events.summary);
    EXPECT_EQ(r.events.lost_completions, 1u);
    std::ostringstream text;
    validate::print_objects_report(text, r);
    EXPECT_NE(text.str().find("CUT (no closing summary), 0 records dropped, 1 commands without their completion"),
              std::string::npos)
        << text.str();
    // Whole, it passes; the summary's dropped count is carried.
    std::ofstream(ev) << file_cmd("write", size, 1000, a, ga) << file_cmd("read", size, 5000, a, ga)
                      << "{\"type\":\"summary\",\"events\":2,\"dropped\":3}\n";
    const validate::ObjectsReport w = validate::join_objects(sem, ev, {});
    EXPECT_TRUE(w.events.summary);
    EXPECT_EQ(w.events.dropped, 3u);
}

// A binary capture cut in half has no closing summary: the reader's tally says so and where it stopped; whole, it
// has one. warn_stream_end tells the two apart.
TEST(EngineLayout, CutBinaryCaptureHasNoSummary) {
    Dir outs;
    validate::SynthSpec spec;
    spec.objects = 40;
    spec.object_bytes = 1 << 20;
    const std::string kvb = outs.path + "/ev.kvb", sem = outs.path + "/sem.jsonl";
    validate::synth_write(spec, sem, kvb);
    auto read_all = [](const std::string& path) {
        EventsReader rd(path);
        EventRecord r;
        while (rd.next_checked(r)) {}
        return rd.tally();
    };
    const EventsTally whole = read_all(kvb);
    EXPECT_TRUE(whole.summary);
    EXPECT_TRUE(whole.capture);
    EXPECT_FALSE(warn_stream_end(kvb, whole, "test"));
    // Given where a semantic log belongs, the capture is named as one, not "not valid JSON".
    const std::string e = error_of([&] { validate::read_semantic(kvb); });
    EXPECT_NE(e.find(kvb + ": is a kvio.events.bin/1 capture"), std::string::npos) << e;
    std::filesystem::resize_file(kvb, std::filesystem::file_size(kvb) / 2);
    const EventsTally cut = read_all(kvb);
    EXPECT_FALSE(cut.summary);
    EXPECT_GT(cut.records, 0u);
    EXPECT_LT(cut.records, whole.records);
    EXPECT_GE(cut.last_line, cut.records);
    EXPECT_TRUE(warn_stream_end(kvb, cut, "test"));
}
