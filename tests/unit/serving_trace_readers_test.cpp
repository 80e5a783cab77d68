// The trace-driven arrivals of kvio simulate (docs/mlperf-benchmark.md, "Trace replay and special modes"): the strict
// CSV splitter, the BurstGPT reader and path resolution, the ShareGPT SAX reader (chars // 4 in code points, caps,
// pairing, early stop, FILE:LINE errors naming the field) and the replay sources (pacing, keys, finite cycles); the
// XLSX export's CSV form.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/error_of.h"
#include "common/csv.h"
#include "common/error.h"
#include "workload/serving/arrivals/burstgpt.h"
#include "workload/serving/arrivals/sharegpt.h"
#include "workload/serving/arrivals/trace_source.h"
#include "workload/serving/results/xlsx_export.h"

using namespace kvio;
using namespace kvio::serving;
namespace fs = std::filesystem;

namespace {

struct Dir {
    Dir() {
        char t[] = "/tmp/kvio-traces-XXXXXX";
        path = ::mkdtemp(t);
    }
    ~Dir() { fs::remove_all(path); }
    std::string write(const std::string& name, const std::string& text) const {
        const std::string p = path + "/" + name;
        std::ofstream(p) << text;
        return p;
    }
    std::string path;
};

using kvio::test::error_of;

const char* kHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

}  // namespace

TEST(Csv, SplitsQuotedFieldsAndRefusesMalformedOnes) {
    std::vector<std::string> f;
    EXPECT_FALSE(split_csv_record("a,\"b,c\",\"d\"\"e\",,x\r", f));
    EXPECT_EQ(f, (std::vector<std::string>{"a", "b,c", "d\"e", "", "x"}));
    EXPECT_FALSE(split_csv_record("", f));
    EXPECT_EQ(f, (std::vector<std::string>{""}));
    EXPECT_EQ(split_csv_record("a,b\"c", f).value_or(""), "field 2: a quote inside a bare field");
    EXPECT_EQ(split_csv_record("a,\"bc", f).value_or(""), "field 2: unterminated quote");
    EXPECT_EQ(split_csv_record("\"a\"b,c", f).value_or(""), "field 1: text after the closing quote");
    EXPECT_EQ(csv_field("plain"), "plain");
    EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
}

TEST(BurstGpt, ReadsRowsWithAnyColumnOrderQuotesAndCrlf) {
    Dir d;
    BurstTrace t;
    read_burst_trace_file(d.write("a.csv", std::string(kHeader) + "5,ChatGPT,472,18,490,Conversation log\n"
                                                                  "45.5,GPT-4,1087,0,1087,\"API log, v2\"\n"),
                          t);
    read_burst_trace_file(d.write("b.csv", "Response tokens,Timestamp,Request tokens\r\n\"7\",0.25,9\r\n"), t);
    ASSERT_EQ(t.rows.size(), 3u);
    EXPECT_EQ(t.rows_per_file, (std::vector<uint64_t>{2, 1}));
    EXPECT_DOUBLE_EQ(t.rows[1].timestamp_s, 45.5);
    EXPECT_EQ(t.rows[1].request_tokens, 1087u);
    EXPECT_EQ(t.rows[1].response_tokens, 0u);
    EXPECT_EQ(t.rows[2].request_tokens, 9u);
    EXPECT_EQ(t.rows[2].response_tokens, 7u);
}

TEST(BurstGpt, BadRowsNameFileLineAndField) {
    Dir d;
    auto err = [&](const std::string& text) {
        const std::string p = d.write("bad.csv", text);
        return error_of([&] {
            BurstTrace t;
            read_burst_trace_file(p, t);
        });
    };
    const std::string f = d.path + "/bad.csv";
    EXPECT_EQ(
        err("Timestamp,Model,Response tokens\n1,x,2\n"),
        f + ":1: header lacks column 'Request tokens' (a BurstGPT CSV has Timestamp,Model,Request tokens,Response "
            "tokens,Total tokens,Log Type)");
    EXPECT_EQ(err(std::string(kHeader) + "1,a,2,3,5,l\n2,a,2,3,5\n"), f + ":3: 5 fields, the header has 6");
    EXPECT_EQ(err(std::string(kHeader) + "1,a,2,-3,5,l\n"),
              f + ":2: field 'Response tokens': '-3' is not a non-negative integer");
    EXPECT_EQ(err(std::string(kHeader) + "1,a,2.5,3,5,l\n"),
              f + ":2: field 'Request tokens': '2.5' is not a non-negative integer");
    EXPECT_EQ(err(std::string(kHeader) + "nan,a,2,3,5,l\n"),
              f + ":2: field 'Timestamp': 'nan' is not a non-negative number of seconds");
    EXPECT_EQ(err(std::string(kHeader) + "1,a,2,3,5,l\n\n3,a,2,3,5,l\n"), f + ":3: empty row");
    EXPECT_EQ(err(std::string(kHeader) + "1,\"a,2,3,5,l\n"), f + ":2: field 2: unterminated quote");
    EXPECT_EQ(err(kHeader), f + ": no rows after the header");
    EXPECT_EQ(err(""), f + ": empty file (no header)");
}

TEST(BurstGpt, PathIsAFileADirectoryOfCsvOrAGlob) {
    Dir d;
    const std::string row = std::string(kHeader) + "1,a,2,3,5,l\n";
    d.write("b.csv", row);
    d.write("a.csv", row);
    d.write("notes.txt", "not a trace");
    const std::vector<std::string> sorted = {d.path + "/a.csv", d.path + "/b.csv"};
    EXPECT_EQ(resolve_burst_trace_files(d.path), sorted);
    EXPECT_EQ(resolve_burst_trace_files(d.path + "/*.csv"), sorted);
    EXPECT_EQ(resolve_burst_trace_files(d.path + "/b.csv"), (std::vector<std::string>{d.path + "/b.csv"}));
    EXPECT_EQ(load_burst_trace(d.path).rows.size(), 2u);
    EXPECT_NE(error_of([&] { resolve_burst_trace_files(d.path + "/z*.csv"); }).find("matches no file"),
              std::string::npos);
    EXPECT_NE(error_of([&] { resolve_burst_trace_files(d.path + "/none.csv"); }).find("no such file"),
              std::string::npos);
    fs::remove(d.path + "/a.csv");
    fs::remove(d.path + "/b.csv");
    EXPECT_NE(error_of([&] { resolve_burst_trace_files(d.path); }).find("holds no .csv file"), std::string::npos);
}

TEST(ShareGpt, PairsHumanThenGptAndCountsCodePointsOverFour) {
    Dir d;
    const std::string longer(70000, 'a');  // 17500 tokens: capped at 16384 (context) / 2048 (generation)
    const std::string p = d.write("s.json", R"([
  {"id": "c1", "conversations": [
    {"from": "human", "value": "0123456789abcdef"},
    {"from": "gpt", "value": "héllo ✓ wörld"},
    {"from": "system", "value": "x"},
    {"from": "gpt", "value": "y"},
    {"from": "human", "value": ")" + longer + R"("},
    {"from": "gpt", "value": ")" + longer + R"(", "weight": [1, {"k": null}]}], "lang": {"a": [true]}},
  {"conversations": [{"from": "gpt", "value": "no human"}]},
  {"id": 42, "conversations": [{"from": "human", "value": "ab"}, {"from": "gpt", "value": "c"}]}
])");
    ShareGptDataset ds = load_sharegpt(p, 500);
    EXPECT_EQ(ds.elements_read, 3u);
    EXPECT_EQ(ds.without_pairs, 1u);
    EXPECT_EQ(ds.pairs_skipped, 1u);
    ASSERT_EQ(ds.conversations.size(), 2u);
    const auto& c1 = ds.conversations[0];
    EXPECT_EQ(c1.id, "c1");
    ASSERT_EQ(c1.turns.size(), 2u);
    EXPECT_EQ(c1.turns[0].turn_number, 1);
    EXPECT_EQ(c1.turns[0].context_tokens, 4);   // 16 chars
    EXPECT_EQ(c1.turns[0].generate_tokens, 3);  // 13 code points (16 bytes: 4 if bytes were counted)
    EXPECT_EQ(c1.turns[1].turn_number, 3);      // the pair (turns[4], turns[5])
    EXPECT_EQ(c1.turns[1].context_tokens, 16384);
    EXPECT_EQ(c1.turns[1].generate_tokens, 2048);
    EXPECT_EQ(ds.conversations[1].id, "42");
    EXPECT_EQ(ds.conversations[1].turns[0].context_tokens, 1);  // max(1, 2 // 4)
    EXPECT_EQ(estimate_tokens("ab"), 1);
}

TEST(ShareGpt, StopsReadingAfterMaxConversations) {
    Dir d;
    // Only the first two elements are read: what follows them is never parsed.
    const std::string p =
        d.write("s.json", R"([{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]},
 {"id": "x", "conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]},
 this is not JSON)");
    ShareGptDataset ds = load_sharegpt(p, 2);
    EXPECT_EQ(ds.elements_read, 2u);
    EXPECT_EQ(ds.conversations.size(), 2u);
    EXPECT_EQ(ds.conversations[0].id, "conv_0");
    EXPECT_NE(error_of([&] { load_sharegpt(p, 3); }).find(p + ":3: not valid JSON"), std::string::npos);
}

TEST(ShareGpt, BadElementsNameFileLineAndField) {
    Dir d;
    auto err = [&](const std::string& text) {
        const std::string p = d.write("bad.json", text);
        return error_of([&] { load_sharegpt(p, 500); });
    };
    const std::string f = d.path + "/bad.json";
    EXPECT_EQ(err("[\n {\"id\": \"a\",\n  \"conversations\": [\n   {\"from\": \"human\", \"value\": 7}]}]"),
              f + ":4: element 1: field 'value': expected a string, got a number");
    EXPECT_EQ(err("[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}, {\"from\": \"gpt\", \"value\": "
                  "\"b\"}]},\n"
                  " {\"id\": \"b\"}\n]"),
              f + ":3: element 2: field 'conversations': missing");
    EXPECT_EQ(err("[\n {\"conversations\": [\n  {\"value\": \"a\"}]}]"),
              f + ":3: element 1: field 'conversations': turn 1: field 'from': missing");
    EXPECT_EQ(err("[{\"conversations\": {}}]"),
              f + ":1: element 1: field 'conversations': expected a list, got an object");
    EXPECT_EQ(err("[{\"id\": [1], \"conversations\": []}]"),
              f + ":1: element 1: field 'id': expected a string or an integer, got a list");
    EXPECT_EQ(err("[\n 3]"), f + ":2: expected a conversation object, got a number");
    EXPECT_EQ(err("{\"conversations\": []}"), f + ":1: the top level is an object, not a list of conversations");
    EXPECT_EQ(err("[]"),
              f + ": no conversation with a human → gpt turn pair in the first 0 elements (nothing to replay)");
    EXPECT_NE(err("").find(f + ":1: not valid JSON"), std::string::npos);
    EXPECT_NE(err("[\n{\"conversations\": [}]").find(f + ":2: not valid JSON"), std::string::npos);
}

TEST(TraceSource, BurstPacesByTimestampOverSpeedupAndEndsAfterTheCycles) {
    Dir d;
    SimConfig c;
    c.use_burst_trace = true;
    c.burst_trace_path = d.write("t.csv", std::string(kHeader) + "10,a,100,5,0,l\n12,a,20000,0,0,l\n15,a,0,1,0,l\n");
    c.trace_speedup = 2;
    c.replay_cycles = 2;
    auto src = make_trace_source(c, 7);
    ASSERT_TRUE(src);
    std::vector<double> delays;
    std::vector<std::string> keys;
    for (uint64_t seq = 1;; ++seq) {
        auto a = src->next(seq);
        if (!a) break;
        delays.push_back(a->delay_s);
        keys.push_back(a->cache_key);
        EXPECT_GE(a->context_tokens, 1);
    }
    // No gap between passes: each pass starts without a wait.
    EXPECT_EQ(delays, (std::vector<double>{0, 1, 1.5, 0, 1, 1.5}));
    EXPECT_EQ(keys.front(), "trace_user_0_req_0001");
    EXPECT_EQ(keys[2], "trace_user_2_req_0003");
    EXPECT_EQ(keys.back(), "trace_user_2_req_0006");
    EXPECT_EQ(src->stats_json()["cycles_completed"], 2);
    c.trace_speedup = 0;  // no sleeping
    src = make_trace_source(c, 7);
    for (uint64_t seq = 1; auto a = src->next(seq); ++seq) EXPECT_EQ(a->delay_s, 0.0);
}

TEST(TraceSource, ShareGptKeysRateAndDisabledMultiTurn) {
    Dir d;
    SimConfig c;
    c.num_users = 3;
    c.dataset_path = d.write(
        "s.json", R"([{"id": "k", "conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"},
        {"from": "human", "value": "c"}, {"from": "gpt", "value": "d"}]}])");
    c.request_rate = 4;
    c.replay_cycles = 3;
    auto src = make_trace_source(c, 1);
    std::vector<std::string> keys;
    std::vector<double> delays;
    for (uint64_t seq = 1; auto a = src->next(seq); ++seq) {
        keys.push_back(a->cache_key);
        delays.push_back(a->delay_s);
        if (seq == 5) {
            EXPECT_EQ(a->user_id, "dataset_user_2");
        }
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"k_turn_1", "k_turn_2", "k_turn_1", "k_turn_2", "k_turn_1", "k_turn_2"}));
    EXPECT_EQ(delays, (std::vector<double>{0, 0.25, 0.25, 0.25, 0.25, 0.25}));
    EXPECT_DOUBLE_EQ(src->paced_rate(), 4);
    c.disable_multi_turn = true;
    src = make_trace_source(c, 1);
    EXPECT_EQ(src->next(12)->cache_key, "dataset_user_0_req_000012");
    c.dataset_path.clear();
    EXPECT_EQ(make_trace_source(c, 1), nullptr);  // synthetic users
}

/// The Summary row of a CSV export as column -> cell; its header in `h`. Fails the test unless the file holds exactly
/// a header and one row of as many cells.
std::map<std::string, std::string> summary_row(const std::string& path, std::vector<std::string>& h) {
    std::ifstream in(path);
    std::string header, row, extra;
    std::getline(in, header);
    std::getline(in, row);
    EXPECT_FALSE(std::getline(in, extra)) << path;
    std::vector<std::string> v;
    EXPECT_FALSE(split_csv_record(header, h)) << path;
    EXPECT_FALSE(split_csv_record(row, v)) << path;
    EXPECT_EQ(h.size(), v.size()) << path;
    std::map<std::string, std::string> m;
    for (size_t i = 0; i < h.size() && i < v.size(); ++i) m[h[i]] = v[i];
    return m;
}

TEST(XlsxExport, SummaryRowAsCsvWhenTheNameIsNotXlsx) {
    Dir d;
    SimConfig c;
    c.seed = 5;
    nlohmann::ordered_json r;
    r["summary"] = {{"total_requests", 12},
                    {"elapsed_time", 0.1},
                    {"end_to_end_latency_ms", {{"p95", 2.5}}},
                    {"cache_stats", {{"cache_hit_rate", 0.75}}}};
    const std::string out = export_results_xlsx(r, c, d.path + "/r");
    EXPECT_EQ(out, d.path + "/r.csv");
    std::vector<std::string> h;
    auto m = summary_row(out, h);
    EXPECT_EQ(m["Total Requests"], "12");
    EXPECT_EQ(m["Elapsed Time (s)"], "0.1");
    EXPECT_EQ(m["E2E Latency P95 (ms)"], "2.5");
    EXPECT_EQ(m["E2E Latency P99 (ms)"], "");  // not in the results: an empty cell, as pandas writes None
    EXPECT_EQ(m["Cache Hit Rate"], "0.75");
    EXPECT_EQ(m["Seed"], "5");
    EXPECT_EQ(m["Multi-turn"], "True");
    EXPECT_EQ(m["Dataset Path"], "N/A");
    EXPECT_EQ(h.front(), "Timestamp");
    EXPECT_EQ(h.back(), "Multi-turn Hit Rate");
    EXPECT_EQ(h.size(),
              27u + 72u);  // 27 run parameters + 72 metrics (docs/mlperf-benchmark.md, "Metrics and the results JSON")
    EXPECT_EQ(m.count("Remote Entries"), 0u) << "no remote tier: the benchmark's columns exactly";
}

// A run with --remote-tier: its tier's bytes, bandwidth and entries join the Summary row like the others'.
TEST(XlsxExport, RemoteTierColumnsOnlyWhenTheRunHadOne) {
    Dir d;
    SimConfig c;
    nlohmann::ordered_json r;
    r["summary"] = {{"total_requests", 3},
                    {"cache_stats",
                     {{"tier_remote_kv_bytes_written_gb", 1.5},
                      {"tier_remote_kv_bytes_read_gb", 2.5},
                      {"tier_remote_read_bandwidth_gbps", 0.25},
                      {"tier_remote_write_bandwidth_gbps", 0.125},
                      {"remote_entries", 7}}}};
    std::vector<std::string> h;
    auto m = summary_row(export_results_xlsx(r, c, d.path + "/r.csv"), h);
    EXPECT_EQ(h.size(), 27u + 72u + 5u);  // written, read, two bandwidths, entries
    EXPECT_EQ(m["Tier Remote KV Bytes Written (GiB)"], "1.5");
    EXPECT_EQ(m["Tier Remote KV Bytes Read (GiB)"], "2.5");
    EXPECT_EQ(m["Tier Remote Read Bandwidth (GiB/s)"], "0.25");
    EXPECT_EQ(m["Tier Remote Write Bandwidth (GiB/s)"], "0.125");
    EXPECT_EQ(m["Remote Entries"], "7");
}
