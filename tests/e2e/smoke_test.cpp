// The CLI shell: help, version, and refusals that need no device.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/helpers.h"

using namespace kvio::test;

TEST(Cli, HelpListsCommands) {
    auto r = run(kvio_bin() + " --help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("trace"), std::string::npos) << r.out;
}

TEST(Cli, UnknownCommandFails) {
    auto r = run(kvio_bin() + " no-such-command");
    EXPECT_NE(r.status, 0);
}

TEST(Cli, VersionPrintsTheBuildsVersion) {
    auto r = run(kvio_bin() + " --version");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.rfind("kvio ", 0), 0u) << r.out;
    EXPECT_GT(r.out.size(), std::string("kvio \n").size()) << r.out;  // a git describe, or "unknown" outside git
    EXPECT_EQ(r.err.find("subcommand is required"), std::string::npos) << r.err;
}

TEST(Cli, DumpOfJsonlSaysItNeedsNoDump) {
    TempDir d;
    std::ofstream(d.file("ev.jsonl")) << R"({"type":"cmd","src":"block","dev":"7:0"})" << "\n";
    auto r = run(kvio_bin() + " dump " + d.file("ev.jsonl"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(d.file("ev.jsonl") + " is a JSONL file (kvio.events/1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("it needs no dump"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(Cli, ValidateSynthIsListedAndCreatesItsDirectory) {
    auto h = run(kvio_bin() + " validate --help");
    EXPECT_NE(h.out.find("--synth "), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("--synth-objects"), std::string::npos) << h.out;
    TempDir d;
    const std::string dir = d.file("new/synth");
    auto r = run(kvio_bin() + " validate --synth " + dir + " --synth-objects 4 --synth-object-bytes 1048576");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir + "/semantic.jsonl"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/events.jsonl"));
    auto v = run(kvio_bin() + " validate --commands " + dir + "/events.jsonl --semantic " + dir + "/semantic.jsonl");
    EXPECT_EQ(v.status, 0) << v.err;
    EXPECT_NE(v.out.find("exact-match 4/4"), std::string::npos) << v.out;
}

TEST(Cli, GenRefusesMaxIoZero) {
    auto r = run(kvio_bin() + " gen --model llama3.2-1b --target /dev/null --max-io 0");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--max-io"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("must be a whole number >= 1, got 0"), std::string::npos) << r.err;
}
