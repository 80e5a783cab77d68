// kvio validate --join files on a real trace: `kvio trace --files --syscalls --events` of two files on ext4 over a
// loop device, joined per file with no semantic log (docs/validate_files.md). The bytes each file moved at the device
// are known exactly from what the test wrote and read (as tests/e2e/trace_files_test.cpp establishes them: ext4's
// journal and metadata are never a file's), so nothing here depends on timing or on the machine's load.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using json = nlohmann::json;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

struct StatId {
    uint64_t ino = 0;
    std::string fs_dev;  // "MAJ:MIN"
};

StatId stat_id(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return {st.st_ino, std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev))};
}

}  // namespace

// File D: written with O_DIRECT (16 x 64 KiB) and read back with O_DIRECT (8 x 128 KiB): 1 MiB each way at the
// device, 0 page-cache share. File B: written buffered (16 x 64 KiB) and fsynced, then read twice with no
// posix_fadvise: its pages stay cached after the write, so the device writes 1 MiB and reads nothing while the
// syscalls read 2 MiB: page-cache share 1. The join's per-file bytes also equal the trace's own per-file table (the
// kernel's per-file map, a different path from the events stream), and --trace-json names each file's path.
TEST(ValidateFiles, JoinFilesOnARealTraceOfDirectAndBufferedFiles) {
    Ext4Mount m(64 * MiB);
    TempDir dir;
    const std::string d = m.mnt + "/direct.bin", b = m.mnt + "/buffered.bin";
    const std::string ev = dir.file("ev.jsonl"), tj = dir.file("t.json"), vj = dir.file("v.json");
    const std::string script = "dd if=/dev/zero of=" + d +
                               " bs=64k count=16 oflag=direct conv=fsync status=none && dd if=" + d +
                               " of=/dev/null bs=128k iflag=direct status=none && dd if=/dev/zero of=" + b +
                               " bs=64k count=16 conv=fsync status=none && dd if=" + b +
                               " of=/dev/null bs=128k status=none && dd if=" + b + " of=/dev/null bs=128k status=none";
    // The whole device is traced (no `-- COMMAND`, which passes only the command's own tasks): the buffered file's
    // writeback is dd's fsync on a quiet machine, but a flusher kworker's when a sync(2) or dirty-memory pressure from
    // elsewhere comes first (measured beside `stress-ng --io`: 64 KiB + 704 KiB of the 1 MiB written by kworkers,
    // missing from a trace of `-- sh -c`). Either way the pages name the file.
    CmdResult t =
        run(trace_in_background(dir.file("ready"), "-q -d " + m.loop.name + " --files --syscalls --events " + ev +
                                                       " --json " + tj + " 2> " + dir.file("trace.err")) +
            "(" + script + "); s=$?; kill -INT $t; wait $t; echo trace=$? script=$s");
    ASSERT_NE(t.out.find("trace=0 script=0"), std::string::npos) << t.out << t.err << slurp(dir.file("trace.err"));

    CmdResult v = run(kvio_bin() + " validate --join files --commands " + ev + " --trace-json " + tj + " --json " + vj);
    ASSERT_EQ(v.status, 0) << v.err;
    const json j = json::parse(slurp(vj));  // throws (fails the test) unless it parses
    EXPECT_EQ(j.at("schema"), "kvio.validate.files/1");
    std::map<std::string, json> rows;
    for (const json& f : j.at("files"))
        if (f.at("path").is_string()) rows[f["path"].get<std::string>()] = f;
    ASSERT_TRUE(rows.count(d)) << j.dump();
    ASSERT_TRUE(rows.count(b)) << j.dump();
    EXPECT_NE(v.out.find(d), std::string::npos) << v.out;  // the text report names the paths too
    EXPECT_NE(v.out.find(b), std::string::npos) << v.out;

    const json tsum = json::parse(slurp(tj));
    std::map<std::string, json> traced;  // the trace's own per-file table, by path
    for (const json& f : tsum.at("files")) traced[f.at("path").get<std::string>()] = f;
    const struct {
        std::string path;
        uint64_t dev_write, dev_read, sys_write, sys_read;
        double cache_share;
    } want[] = {{d, 1 * MiB, 1 * MiB, 1 * MiB, 1 * MiB, 0.0}, {b, 1 * MiB, 0, 1 * MiB, 2 * MiB, 1.0}};
    for (const auto& w : want) {
        SCOPED_TRACE(w.path);
        const json& f = rows[w.path];
        const StatId id = stat_id(w.path);
        EXPECT_EQ(f["ino"], id.ino);
        EXPECT_EQ(f["fs_dev"], id.fs_dev);
        EXPECT_EQ(f["write_bytes"], w.dev_write);
        EXPECT_EQ(f["read_bytes"], w.dev_read);
        EXPECT_GT(f["write_cmds"].get<uint64_t>(), 0u);
        EXPECT_EQ(f["read_cmds"].get<uint64_t>() > 0, w.dev_read > 0);
        EXPECT_EQ(f["sys_write_bytes"], w.sys_write);
        EXPECT_EQ(f["sys_read_bytes"], w.sys_read);
        EXPECT_EQ(f["file_size"], 1 * MiB);
        EXPECT_LE(f["max_cmd_bytes"].get<uint64_t>(), 1 * MiB);
        EXPECT_GT(f["min_cmd_bytes"].get<uint64_t>(), 0u);
        ASSERT_TRUE(f["page_cache_read_share"].is_number()) << f.dump();
        EXPECT_NEAR(f["page_cache_read_share"].get<double>(), w.cache_share, 1e-9);
        ASSERT_TRUE(traced.count(w.path)) << tsum["files"].dump();
        EXPECT_EQ(f["write_bytes"], traced[w.path]["write"]["bytes"]);
        EXPECT_EQ(f["read_bytes"], traced[w.path]["read"]["bytes"]);
        EXPECT_EQ(f["write_cmds"], traced[w.path]["write"]["cmds"]);
        EXPECT_EQ(f["read_cmds"], traced[w.path]["read"]["cmds"]);
    }
    // Journal and metadata commands are not files: counted, not joined; every other command is one of the two files.
    uint64_t joined = 0;
    for (const json& f : j["files"]) joined += f["read_cmds"].get<uint64_t>() + f["write_cmds"].get<uint64_t>();
    EXPECT_EQ(joined + j["unattributed_cmds"].get<uint64_t>(), j["cmds"].get<uint64_t>());
    EXPECT_EQ(j["files"].size(), 2u) << j["files"].dump();
}
