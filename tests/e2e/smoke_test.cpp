// The CLI shell: help, version, and refusals that need no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/helpers.h"

using namespace kvio::test;

TEST(Cli, HelpListsCommands) {
    auto r = run(kvio_bin() + " --help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("trace"), std::string::npos) << r.out;
}

// Before: "Usage: [OPTIONS] SUBCOMMAND" and "Usage: trace [OPTIONS]", without the program's name.
TEST(Cli, UsageLinesNameTheProgram) {
    EXPECT_NE(run(kvio_bin() + " --help").out.find("Usage: kvio [OPTIONS] SUBCOMMAND"), std::string::npos);
    EXPECT_NE(run(kvio_bin() + " trace --help").out.find("Usage: kvio trace [OPTIONS]"), std::string::npos);
    EXPECT_NE(run(kvio_bin() + " import blktrace --help").out.find("Usage: kvio import blktrace [OPTIONS]"),
              std::string::npos);
}

// Before: the command list carried every command's whole description, 60 lines for 14 commands. Now one line each,
// the description's first clause; `kvio CMD --help` keeps the whole.
TEST(Cli, HelpListsEachCommandOnOneLine) {
    const std::string out = run(kvio_bin() + " --help").out;
    const size_t list = out.find("Subcommands:\n");
    ASSERT_NE(list, std::string::npos) << out;
    std::istringstream lines(out.substr(list + 13));
    int commands = 0;
    for (std::string line; std::getline(lines, line) && !line.empty(); ++commands) {
        EXPECT_EQ(line.rfind("  ", 0), 0u) << line;
        EXPECT_NE(line[2], ' ') << "a continuation line: " << line;
        EXPECT_LE(line.size(), 200u) << line;
    }
    EXPECT_GE(commands, 14) << out;
    EXPECT_NE(out.find("and report the storage latency stack\n"), std::string::npos) << out;
    EXPECT_NE(run(kvio_bin() + " trace --help").out.find("LBA heatmap"), std::string::npos);
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
    // The release number (VERSION) first, then the build's git describe: a hash alone said nothing of the release.
    std::string release;
    {
        std::ifstream in("VERSION");  // the tests run from the source tree, as tests/fixtures/ are found
        std::getline(in, release);
    }
    ASSERT_FALSE(release.empty());
    EXPECT_EQ(r.out.rfind("kvio " + release + " (", 0), 0u) << r.out;
    EXPECT_EQ(r.err.find("subcommand is required"), std::string::npos) << r.err;
}

TEST(Cli, DumpOfJsonlSaysItNeedsNoDump) {
    TempDir d;
    std::ofstream(d.file("ev.jsonl")) << R"({"type":"cmd","src":"block","dev":"7:0"})"
                                      << "\n";
    auto r = run(kvio_bin() + " dump " + d.file("ev.jsonl"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(d.file("ev.jsonl") + " is a JSONL file (kvio.events/1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("it needs no dump"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

// A trace.json given to dump is named as what it is (it said "a JSONL file (kvio.events/1 ...)").
TEST(Cli, DumpOfATraceJsonNamesItsSchema) {
    TempDir d;
    std::ofstream(d.file("trace.json")) << "{\n  \"schema\": \"kvio.trace/1\",\n  \"devices\": []\n}\n";
    auto r = run(kvio_bin() + " dump " + d.file("trace.json"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(d.file("trace.json") + " is a kvio.trace/1 document, not a kvio.events.bin capture"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("JSONL"), std::string::npos) << r.err;
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

/// `kvio ARGS` is a usage error: exit 2, stderr `line...` and the hint to the command's --help, nothing on stdout.
static void expect_usage_error(const std::string& args, const std::string& line) {
    auto r = run(kvio_bin() + " " + args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(line, 0), 0u) << args << "\n" << r.err;
    const std::string cmd = line.substr(0, line.find(':'));
    const std::string hint = "Run '" + cmd + " --help' for the " + (cmd == "kvio" ? "commands" : "options") + ".\n";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("\n" + hint), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
}

// A command line that cannot be parsed exits 2 in every command (before: CLI11's own 105/106/109, `kvio import`'s 1),
// with one line naming the command and a hint to its --help.
TEST(Cli, UsageErrorsExitTwoWithOneLineAndAHint) {
    const std::pair<std::string, std::string> cases[] = {
        {"trace --duration x", "kvio trace: --duration: not a number of seconds: x"},
        {"trace --bogus", "kvio trace: The following argument was not expected: --bogus"},
        {"trace --qd-sample 3", "kvio trace: --qd-sample: must be a power of two from 1 to 1024"},
        {"trace --qd-sample x", "kvio trace: --qd-sample: not a number: x"},
        {"trace --qd-sample 16 --events x.jsonl", "kvio trace: --events excludes --qd-sample 16"},
        {"trace --qd-sample 4 --perfetto /nonexistent/p.json",
         "kvio trace: --perfetto excludes --qd-sample 4 (its commands come from an --events capture"},
        {"run --num-chunks x", "kvio run: --num-chunks: must be a whole number >= 1, got x"},
        {"run --engine nope", "kvio run: --engine: nope not in {posix,io_uring,uring_cmd}"},
        {"gen --qd x", "kvio gen: --qd: "},
        {"validate --bogus", "kvio validate: The following argument was not expected: --bogus"},
        {"distill --bogus", "kvio distill: The following argument was not expected: --bogus"},
        {"replay --bogus", "kvio replay: The following argument was not expected: --bogus"},
        {"compare", "kvio compare: A is required"},
        {"dump", "kvio dump: file is required"},
        {"geometry --tp x", "kvio geometry: --tp: "},
        {"import foo x",
         "kvio import: unknown format 'foo': give a subcommand, blktrace, fio-iolog, vllm-fs or lmcache-disk"},
        {"import fio-iolog", "kvio import fio-iolog: FILE is required"},
        {"no-such-command", "kvio: unknown command 'no-such-command'"},
        {"", "kvio: A subcommand is required"},
    };
    for (const auto& [args, line] : cases) expect_usage_error(args, line);
    // --help and --version are not errors.
    EXPECT_EQ(run(kvio_bin() + " trace --help").status, 0);
    EXPECT_EQ(run(kvio_bin() + " run --help").status, 0);
}

// --files' --group-by and --under are checked when the command line is read: a bad pattern or a missing directory
// was refused only after the whole trace (the traced command had run, and no --json was written), a relative or
// symlinked --under matched nothing, and a pattern of 30000 nested groups crashed std::regex's recursive compiler.
TEST(Cli, FileTableOptionsAreCheckedBeforeTheCommandRuns) {
    TempDir d;
    const std::string marker = d.file("ran");
    const std::string deep(600, '('), close(600, ')');
    const std::pair<std::string, std::string> cases[] = {
        {"--group-by '['", "kvio trace: --group-by: '[': not a regular expression ("},
        {"--group-by ''", "kvio trace: --group-by: an empty pattern"},
        {"--group-by '" + deep + close + "'", "kvio trace: --group-by: a pattern of 1200 characters (at most 1024)"},
        {"--under " + d.file("none"), "kvio trace: --under: " + d.file("none") + ": No such file or directory"},
        {"--under " + marker + "x", "kvio trace: --under: " + marker + "x: No such file or directory"},
        {"--under ''", "kvio trace: --under: an empty path: give a directory"},
    };
    for (const auto& [opt, line] : cases) {
        expect_usage_error("trace -d loop0 --files " + opt + " -- touch " + marker, line);
        EXPECT_FALSE(std::filesystem::exists(marker)) << opt << ": the traced command ran";
    }
    std::ofstream(d.file("plain")) << "x";
    expect_usage_error("trace -d loop0 --files --under " + d.file("plain") + " -- touch " + marker,
                       "kvio trace: --under: " + d.file("plain") + ": not a directory");
    EXPECT_FALSE(std::filesystem::exists(marker));
}

// Options that parse but do not go together, or name nothing known, are usage errors too: exit 2 with the same two
// lines (before: exit 1 and `kvio: ...`, as for a failed run).
TEST(Cli, OptionConflictsFoundAfterParsingExitTwo) {
    const std::pair<std::string, std::string> cases[] = {
        {"geometry --model nope", "kvio geometry: --model: unknown model 'nope' (known models: "},
        {"geometry", "kvio geometry: give --model NAME or --hf-config config.json"},
        {"geometry --model tiny-1b --kv-dtype fp7", "kvio geometry: --kv-dtype: "},
        {"gen --model nope --target /dev/null", "kvio gen: --model: unknown model 'nope'"},
        {"trace --syscalls", "kvio trace: --syscalls writes syscall records into --events FILE: give --events"},
        {"trace --events x.jsonl --json x.jsonl", "kvio trace: --events and --json name the same file"},
        {"trace 1 3 -d loop0", "kvio trace: '-d' after the positionals: options go before INTERVAL"},
        {"distill", "kvio distill: give the trace with --events FILE"},
        {"distill trace.jsonl", "kvio distill: 'trace.jsonl' is not an option: give the trace as --events FILE"},
        {"distill --events x.jsonl --max-tv 0.1", "kvio distill: --max-tv: needs --verify"},
        {"distill --events x.jsonl --force", "kvio distill: --force: needs --verify"},
        {"distill --events x.jsonl --iolog x.log", "kvio distill: --iolog: needs --filename TARGET"},
        {"replay", "kvio replay: give --record REC.json, --events CMDS.jsonl or --io-trace FILE.csv"},
        {"replay --events x.jsonl --target /dev/null --map-dev 7:0=/dev/null",
         "kvio replay: give either --target or --map-dev, not both"},
        {"replay --record x.json --target /dev/null --timing afap",
         "kvio replay: --map-dev and --timing apply to --events replays"},
    };
    for (const auto& [args, line] : cases) expect_usage_error(args, line);
}
