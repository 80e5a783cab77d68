// kvio import fio-iolog on a real `fio --write_iolog` run (v3, the version fio 3.33 writes) traced by `kvio trace`:
// the imported commands are the traced ones in the same order (direction, sector, bytes), and distill and compare
// read the import. (`kvio import blktrace` of a real capture: tests/e2e/nvme_guest_test.cpp, in the QEMU guest: this
// host's kernel lockdown refuses blktrace's debugfs relay files.)
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

std::vector<json> data_cmds(const std::string& path) {
    std::vector<json> v;
    for (auto& j : read_jsonl(path))
        if (j.value("type", "") == "cmd" && (j["op"] == "read" || j["op"] == "write")) v.push_back(j);
    std::stable_sort(v.begin(), v.end(), [](const json& a, const json& b) { return a["ts_issue"] < b["ts_issue"]; });
    return v;
}

}  // namespace

TEST(ImportFioIolog, RealFioLogEqualsTheTracedCommandsAndDistills) {
    LoopDevice loop(64 << 20);
    TempDir d;
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --events " + d.file("ev.jsonl") +
                 " -- fio --name=x --filename=" + loop.path +
                 " --rw=randrw --rwmixread=40 --bs=64k --size=32M --io_size=4M --ioengine=psync --direct=1 "
                 "--randrepeat=1 --write_iolog=" +
                 d.file("fio.log") + " --output=/dev/null");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    ASSERT_EQ(slurp(d.file("fio.log")).rfind("fio version 3 iolog\n", 0), 0u) << "fio wrote another iolog version";
    ASSERT_EQ(run("zstd -q " + d.file("fio.log") + " -o " + d.file("fio.log.zst")).status, 0);
    r = run(kvio_bin() + " import fio-iolog " + d.file("fio.log.zst") + " -o " + d.file("imp.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("version 3, 64 commands"), std::string::npos) << r.err;
    auto imp = data_cmds(d.file("imp.jsonl")), tr = data_cmds(d.file("ev.jsonl"));
    ASSERT_EQ(imp.size(), 64u);
    ASSERT_EQ(tr.size(), imp.size());
    for (size_t i = 0; i < imp.size(); ++i) {
        SCOPED_TRACE("command " + std::to_string(i) + ": traced " + tr[i].dump() + "\nimported " + imp[i].dump());
        EXPECT_EQ(imp[i]["op"], tr[i]["op"]);
        EXPECT_EQ(imp[i]["sector"], tr[i]["sector"]);
        EXPECT_EQ(imp[i]["bytes"], tr[i]["bytes"]);
        EXPECT_EQ(imp[i]["dev"], loop.majmin);
    }
    // distill and compare read the import like a capture.
    // distill of the import and of the trace: the same mix, sizes and range (the same commands).
    auto distilled = [&](const std::string& ev) {
        auto x = run(kvio_bin() + " distill --events " + ev + " --filename " + loop.path + " -o " + d.file("job.fio"));
        EXPECT_EQ(x.status, 0) << x.err << x.out;
        // "wrote job.fio: rw=... rwmixread=... bssplit=... iodepth=... numjobs=..."; thinktime left out: an iolog has
        // issue times only (completion = issue), so the gaps distill measures differ from the trace's by design.
        return std::regex_replace(x.out, std::regex(" thinktime=[^ \n]*"), "");
    };
    const std::string from_import = distilled(d.file("imp.jsonl")), from_trace = distilled(d.file("ev.jsonl"));
    EXPECT_NE(from_import.find("rwmixread="), std::string::npos) << from_import;
    EXPECT_EQ(from_import, from_trace);
    r = run(kvio_bin() + " compare " + d.file("ev.jsonl") + " " + d.file("imp.jsonl") + " --json " + d.file("c.json"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    json c = json::parse(slurp(d.file("c.json")));
    EXPECT_EQ(c["order"]["same_position"], 64);
    EXPECT_EQ(c["diff_pct"]["bytes"].get<double>(), 0.0);
    // A bad line is named.
    std::ofstream(d.file("bad.log")) << "fio version 3 iolog\n0 " << loop.path << " add\n1 " << loop.path << " open\n2 "
                                     << loop.path << " write 4096 -1\n";
    r = run(kvio_bin() + " import fio-iolog " + d.file("bad.log"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(d.file("bad.log") + ":4: field 'length'"), std::string::npos) << r.err;
}

TEST(ImportCli, HelpExplainsAndBadInputIsNamed) {
    auto r = run(kvio_bin() + " import --help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("blktrace"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fio-iolog"), std::string::npos) << r.out;
    r = run(kvio_bin() + " import blktrace --help");
    EXPECT_NE(r.out.find("NAME.blktrace.<cpu>"), std::string::npos) << r.out;
    TempDir d;
    std::ofstream(d.file("x.blktrace.0")) << std::string(48, 'x');
    r = run(kvio_bin() + " import blktrace " + d.file("x"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("x.blktrace.0: record 1 at byte 0: field 'magic'"), std::string::npos) << r.err;
    // an unknown or missing format names the ones there are, exit 2 as every usage error (not CLI11's bare 106)
    r = run(kvio_bin() + " import foo x");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("unknown format 'foo'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("blktrace, fio-iolog, vllm-fs or lmcache-disk"), std::string::npos) << r.err;
    r = run(kvio_bin() + " import");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("blktrace, fio-iolog, vllm-fs or lmcache-disk"), std::string::npos) << r.err;
}
