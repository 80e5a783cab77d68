// kvio import vllm-fs / lmcache-disk and kvio validate --objects on a real trace (docs/engine_layouts.md): each
// engine's KV directory (tests/engine_layout_writer.h names) written on ext4 over a loop device with buffered and
// O_DIRECT writes, then read back, under `kvio trace --files --events`. Every block file's device bytes are known
// from what the test wrote (whole 4 KiB multiples, each fsynced; buffered reads after the file's pages were dropped),
// so nothing here depends on timing or load.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"
#include "tests/engine_layout_writer.h"

using namespace kvio::test;
using json = nlohmann::json;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t kTinyBytesPerToken = 24576;  // tiny-1b, bf16, tp 1: 12 layers x 2 x 4 KV heads x 128 x 2 B

struct Block {
    std::string rel;
    uint64_t size;
    bool direct;
    bool tmp_rename;  // llm-d writes NAME_<n>.tmp and renames it
};

/// Shell commands that write `b` under `dir` as the engine does, then read it back (O_DIRECT, or buffered after
/// dropping its pages with dd's nocache).
std::string write_and_read(const std::string& dir, const Block& b) {
    const std::string p = dir + "/" + b.rel, tmp = b.tmp_rename ? p + "_4242.tmp" : p;
    const std::string bs = " bs=" + std::to_string(b.size) + " count=1 status=none";
    std::string s = "dd if=/dev/zero of=" + tmp + bs + " conv=fsync" + (b.direct ? " oflag=direct" : "");
    if (b.tmp_rename) s += " && mv " + tmp + " " + p;
    if (b.direct)
        s += " && dd if=" + p + " of=/dev/null" + bs + " iflag=direct";
    else
        s += " && dd if=" + p + " iflag=nocache count=0 status=none && dd if=" + p + " of=/dev/null" + bs;
    return s + " && ";
}

/// `kvio import ENGINE DIR ... ` then `kvio validate --objects`; returns the validate JSON.
json import_and_validate(const TempDir& t, const std::string& engine, const std::string& dir, const std::string& ev,
                         const std::string& flags) {
    const std::string sem = t.file(engine + ".semantic.jsonl"), vj = t.file(engine + ".validate.json");
    CmdResult i = run(kvio_bin() + " import " + engine + " " + dir + " --model tiny-1b " + flags + " --events " + ev +
                      " --trace-json " + t.file("trace.json") + " -o " + sem);
    EXPECT_EQ(i.status, 0) << i.err;
    CmdResult v = run(kvio_bin() + " validate --objects --commands " + ev + " --semantic " + sem + " --json " + vj);
    EXPECT_EQ(v.status, 0) << v.err;
    std::cerr << i.err << v.out;  // the numbers the test asserts, in its log
    return json::parse(slurp(vj));
}

/// Every block: one store and one load, each moving exactly the bytes its size projects.
void expect_exact(const json& j, const std::vector<Block>& blocks) {
    EXPECT_EQ(j.at("schema"), "kvio.validate.objects/1");
    std::map<std::string, std::map<std::string, json>> rows;  // path -> op -> row
    for (const json& r : j.at("objects")) rows[r.at("path").get<std::string>()][r.at("op").get<std::string>()] = r;
    ASSERT_EQ(rows.size(), blocks.size()) << j.dump();
    uint64_t total = 0;
    for (const Block& b : blocks) {
        SCOPED_TRACE(b.rel);
        ASSERT_TRUE(rows.count(b.rel)) << j.dump();
        for (const char* op : {"store", "load"}) {
            SCOPED_TRACE(op);
            ASSERT_TRUE(rows[b.rel].count(op)) << j.dump();
            const json& r = rows[b.rel][op];
            EXPECT_EQ(r.at("projected_bytes"), b.size);
            EXPECT_EQ(r.at("measured_bytes"), b.size);
            EXPECT_EQ(r.at("bytes_match"), true);
            EXPECT_GT(r.at("measured_cmds").get<uint64_t>(), 0u);
            total += b.size;
        }
    }
    EXPECT_EQ(j.at("ops"), 2 * blocks.size());
    EXPECT_EQ(j.at("bytes_exact"), 2 * blocks.size());
    EXPECT_EQ(j.at("projected_bytes"), total);
    EXPECT_EQ(j.at("measured_bytes"), total);
}

}  // namespace

// vLLM fs tier: 4 files of 16 tokens (393216 B), two written buffered through llm-d's temporary name and rename, two
// with O_DIRECT. LMCache local disk (--block-tokens 32): two full chunks (786432 B) with O_DIRECT (use_odirect),
// one buffered, and a 16-token last chunk (393216 B) buffered. Each block's store and load move exactly its bytes.
TEST(EngineLayout, ImportedBlocksMoveExactlyTheirProjectedBytes) {
    Ext4Mount m(64 * MiB);
    TempDir t;
    const std::string vdir = m.mnt + "/vllm", ldir = m.mnt + "/lmcache", ev = t.file("ev.jsonl");
    const uint64_t v = 16 * kTinyBytesPerToken, l = 32 * kTinyBytesPerToken;
    const std::vector<Block> vblocks = {
        {vllm_fs_rel("tiny", 16, 1, 1, 0, "bfloat16", 0x1111aaaa2222bbbbull), v, false, true},
        {vllm_fs_rel("tiny", 16, 1, 1, 0, "bfloat16", 0x3333cccc4444ddddull), v, false, true},
        {vllm_fs_rel("tiny", 16, 1, 1, 0, "bfloat16", 0x5555eeee6666ffffull), v, true, false},
        {vllm_fs_rel("tiny", 16, 1, 1, 0, "bfloat16", 0x0123456789abcdefull), v, true, false}};
    const std::vector<Block> lblocks = {{lmcache_disk_rel("org/tiny", 1, 0, 0xa1, "bfloat16"), l, true, false},
                                        {lmcache_disk_rel("org/tiny", 1, 0, 0xa2, "bfloat16"), l, true, false},
                                        {lmcache_disk_rel("org/tiny", 1, 0, 0xa3, "bfloat16"), l, false, false},
                                        {lmcache_disk_rel("org/tiny", 1, 0, 0xa4, "bfloat16"), v, false, false}};
    std::string script;
    for (const Block& b : vblocks) {
        std::filesystem::create_directories(std::filesystem::path(vdir + "/" + b.rel).parent_path());
        script += write_and_read(vdir, b);
    }
    std::filesystem::create_directories(ldir);
    for (const Block& b : lblocks) script += write_and_read(ldir, b);
    script += "true";
    // The whole device is traced (docs/validate_files.md, "Tests": a flusher kworker may write a buffered file's
    // pages).
    CmdResult tr =
        run(trace_in_background(t.file("ready"), "-q -d " + m.loop.name + " --files --events " + ev + " --json " +
                                                     t.file("trace.json") + " 2> " + t.file("trace.err")) +
            "(" + script + "); s=$?; kill -INT $t; wait $t; echo trace=$? script=$s");
    ASSERT_NE(tr.out.find("trace=0 script=0"), std::string::npos) << tr.out << tr.err << slurp(t.file("trace.err"));

    expect_exact(import_and_validate(t, "vllm-fs", vdir, ev, ""), vblocks);
    expect_exact(import_and_validate(t, "lmcache-disk", ldir, ev, "--block-tokens 32"), lblocks);

    // The semantic file says what the geometry projected: 16 tokens a vLLM block, LMCache's last chunk partial.
    const std::string sem = slurp(t.file("lmcache-disk.semantic.jsonl"));
    EXPECT_NE(sem.find("\"partial\":true"), std::string::npos);
    EXPECT_NE(sem.find("\"tokens\":16"), std::string::npos);
}

// vLLM's fs tier with small blocks (1 token, 24576 B a file), the way its offloading writes them: 40 files in one
// directory, written buffered with no fsync, then one `sync` writes them back, so the block layer merges several
// files' pages into one write command (asserted: the test is about those). The events give each file its own bytes
// of a merged command (`files`), so the import warns of no merge and every object's store and load are exact.
TEST(EngineLayout, MergedSmallFilesAreExactPerObject) {
    Ext4Mount m(64 * MiB);
    TempDir t;
    const std::string vdir = m.mnt + "/vllm", ev = t.file("ev.jsonl");
    std::vector<Block> blocks;
    for (uint64_t i = 0; i < 40; ++i)  // one hash prefix: one directory (the layout's hhh/hh)
        blocks.push_back(
            {vllm_fs_rel("tiny", 1, 1, 1, 0, "bfloat16", 0x1234500000000000ull + i), kTinyBytesPerToken, false, false});
    std::filesystem::create_directories(std::filesystem::path(vdir + "/" + blocks[0].rel).parent_path());
    std::string script;
    for (const Block& b : blocks)
        script += "head -c " + std::to_string(b.size) + " /dev/zero > " + vdir + "/" + b.rel + " && ";
    script += "sync && ";
    for (const Block& b : blocks) {
        const std::string p = vdir + "/" + b.rel;
        script += "dd if=" + p + " iflag=nocache count=0 status=none && dd if=" + p +
                  " of=/dev/null bs=" + std::to_string(b.size) + " count=1 status=none && ";
    }
    script += "true";
    CmdResult tr =
        run(trace_in_background(t.file("ready"), "-q -d " + m.loop.name + " --files --events " + ev + " --json " +
                                                     t.file("trace.json") + " 2> " + t.file("trace.err")) +
            "(" + script + "); s=$?; kill -INT $t; wait $t; echo trace=$? script=$s");
    ASSERT_NE(tr.out.find("trace=0 script=0"), std::string::npos) << tr.out << tr.err << slurp(t.file("trace.err"));
    size_t merged = 0, most = 0;  // write commands of several files, and the most files one held
    std::map<uint64_t, uint64_t> by_ino;
    json summary;
    for (const json& e : read_jsonl(ev)) {
        if (e.value("type", "") == "summary") summary = e;
        if (e.value("type", "") != "cmd" || e.value("op", "") != "write" || !e.contains("files")) continue;
        merged += e["files"].size() > 1;
        most = std::max(most, e["files"].size());
        uint64_t sum = e["nofile_bytes"].get<uint64_t>();
        for (const json& f : e["files"]) sum += f["bytes"].get<uint64_t>();
        EXPECT_EQ(sum, e["bytes"].get<uint64_t>()) << e.dump();  // the parts and the bytes of no file add up
    }
    EXPECT_GT(merged, 0u) << "no write command held two files' blocks: the test did not test the merge";
    std::cerr << merged << " write commands held several files, up to " << most << "\n";
    ASSERT_TRUE(summary.contains("files_parts")) << summary.dump();
    EXPECT_EQ(summary["files_parts"]["incomplete"], 0) << summary.dump();
    EXPECT_EQ(summary["files_parts"]["lost"], 0) << summary.dump();
    EXPECT_GE(summary["files_parts"]["cmds"].get<uint64_t>(), merged) << summary.dump();

    const std::string sem = t.file("vllm.semantic.jsonl"), vj = t.file("vllm.validate.json");
    CmdResult i = run(kvio_bin() + " import vllm-fs " + vdir + " --model tiny-1b --events " + ev + " --trace-json " +
                      t.file("trace.json") + " -o " + sem);
    EXPECT_EQ(i.status, 0) << i.err;
    EXPECT_EQ(i.err.find("merged"), std::string::npos) << i.err;  // each file's part: nothing to warn of
    CmdResult v = run(kvio_bin() + " validate --objects --commands " + ev + " --semantic " + sem + " --json " + vj);
    EXPECT_EQ(v.status, 0) << v.err;
    std::cerr << i.err << v.out;
    expect_exact(json::parse(slurp(vj)), blocks);
}

// The new user's case: 40 small vLLM files written buffered and written back by `sync`, then read with `cat` while
// their pages are still cached, so no read reaches the device. The trace's files table (--json) saw the application
// read every file; the import takes it (--trace-json), so each file has a load measured 0 and `validate --objects
// --fail-below 100` fails. Without --trace-json (and without --syscalls) the import refuses, saying what to add.
TEST(EngineLayout, LoadsFromThePageCacheAreMeasuredZero) {
    Ext4Mount m(64 * MiB);
    TempDir t;
    const std::string vdir = m.mnt + "/vllm", ev = t.file("ev.jsonl"), tj = t.file("trace.json");
    std::vector<Block> blocks;
    for (uint64_t i = 0; i < 40; ++i)
        blocks.push_back(
            {vllm_fs_rel("tiny", 1, 1, 1, 0, "bfloat16", 0x6789a00000000000ull + i), kTinyBytesPerToken, false, false});
    std::filesystem::create_directories(std::filesystem::path(vdir + "/" + blocks[0].rel).parent_path());
    std::string script;
    for (const Block& b : blocks)
        script += "head -c " + std::to_string(b.size) + " /dev/zero > " + vdir + "/" + b.rel + " && ";
    script += "sync && find " + vdir + " -name '*.bin' | xargs cat > /dev/null";
    CmdResult tr = run(trace_in_background(t.file("ready"), "-q -d " + m.loop.name + " --files --events " + ev +
                                                                " --json " + tj + " 2> " + t.file("trace.err")) +
                       "(" + script + "); s=$?; kill -INT $t; wait $t; echo trace=$? script=$s");
    ASSERT_NE(tr.out.find("trace=0 script=0"), std::string::npos) << tr.out << tr.err << slurp(t.file("trace.err"));
    const std::string sem = t.file("sem.jsonl"), vj = t.file("validate.json");
    CmdResult bare = run(kvio_bin() + " import vllm-fs " + vdir + " --model tiny-1b --events " + ev + " -o " + sem);
    EXPECT_NE(bare.status, 0);
    EXPECT_NE(bare.err.find("give --trace-json T"), std::string::npos) << bare.err;
    EXPECT_FALSE(std::filesystem::exists(sem));
    CmdResult i = run(kvio_bin() + " import vllm-fs " + vdir + " --model tiny-1b --events " + ev + " --trace-json " +
                      tj + " -o " + sem);
    ASSERT_EQ(i.status, 0) << i.err;
    EXPECT_NE(i.err.find("40 stores, 40 loads"), std::string::npos) << i.err;
    EXPECT_NE(i.err.find("40 loads from the page cache"), std::string::npos) << i.err;
    CmdResult v = run(kvio_bin() + " validate --objects --commands " + ev + " --semantic " + sem + " --json " + vj +
                      " --fail-below 100");
    EXPECT_EQ(v.status, 1) << v.out << v.err;
    EXPECT_NE(v.err.find("below --fail-below"), std::string::npos) << v.err;
    std::cerr << i.err << v.out;
    const json j = json::parse(slurp(vj));
    EXPECT_EQ(j.at("ops"), 80);
    EXPECT_EQ(j.at("bytes_exact"), 40);  // the stores
    EXPECT_EQ(j.at("stored_not_loaded"), 0);
    size_t loads = 0;
    for (const json& r : j.at("objects")) {
        if (r.at("op") != "load") continue;
        loads++;
        EXPECT_EQ(r.at("measured_bytes"), 0) << r.dump();
        EXPECT_EQ(r.at("projected_bytes"), kTinyBytesPerToken) << r.dump();
    }
    EXPECT_EQ(loads, 40u);
}
