// `kvio replay --record kvio_record.json` (the reference tooling's manifest, written from its field list) on a loop
// device under `kvio trace`: the replay validates 100 % exact, every part of the record replayed.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/e2e/helpers.h"
#include "tests/kvio_record_fixture.h"

using namespace kvio::test;
using nlohmann::json;

TEST(ReplayKvioRecordJson, ReplaysEveryPartAndValidatesExactly) {
    LoopDevice loop(32ull << 20);
    TempDir d;
    const std::string rec = d.file("kvio_record.json");
    std::ofstream(rec) << kvio_record_fixture(1 << 20, "io_uring").dump(2);
    auto r = run(kvio_bin() + " trace -q -d " + loop.name + " --events " + d.file("ev.jsonl") + " -- " + kvio_bin() +
                 " replay -q --record " + rec + " --target " + loop.path + " --semantic " + d.file("sem.jsonl"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("verified against the pattern: ok"), std::string::npos) << r.out;
    auto sem = read_jsonl(d.file("sem.jsonl"));
    ASSERT_EQ(sem.size(), 7u) << "meta + 3 stores + 3 loads";
    const char* order[] = {"store", "store", "store", "load", "load", "load"};
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(sem[i + 1]["op"], order[i]) << i;
    EXPECT_EQ(sem[2]["key"], "llama3.1-8b/obj0/v");
    auto v = run(kvio_bin() + " validate --commands " + d.file("ev.jsonl") + " --semantic " + d.file("sem.jsonl") +
                 " --json " + d.file("v.json"));
    ASSERT_EQ(v.status, 0) << v.err << v.out;
    json j = json::parse(slurp(d.file("v.json")));
    EXPECT_EQ(j["objects"], 6);
    EXPECT_EQ(j["exact_match"], 6) << v.out;
    EXPECT_EQ(j["join"]["mode"], "user_data");
}
