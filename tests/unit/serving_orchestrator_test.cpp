// The orchestrator's parts of `kvio simulate`: conversations, system prompts, RAG chunking and picks, QoS
// compliance, the request queue's order (docs/mlperf-benchmark.md, "Users and the request stream", "Multi-turn, prefix
// and RAG reuse").
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "workload/serving/conversation.h"
#include "workload/serving/prefix.h"
#include "workload/serving/qos.h"
#include "workload/serving/rag.h"
#include "workload/serving/request_queue.h"

using namespace kvio::serving;

TEST(Conversation, IdsArePerUserCountersAndKeysNameTheTurn) {
    ConversationManager m(1000);
    std::string a = m.start_conversation("user_0003");
    std::string b = m.start_conversation("user_0003");
    EXPECT_EQ(a, "conv_user_0003_1");
    EXPECT_EQ(b, "conv_user_0003_2");
    EXPECT_EQ(m.start_conversation("user_0001"), "conv_user_0001_1");
    auto t1 = m.add_turn(a, 100), t2 = m.add_turn(a, 200);
    ASSERT_TRUE(t1 && t2);
    EXPECT_EQ(t1->turn_number, 1);
    EXPECT_EQ(t2->cache_key, "conv_user_0003_1_turn_2");
    EXPECT_EQ(m.turn_count(a), 2);
}

TEST(Conversation, PreviousTurnsIncludeLaterTurnsLikeTheBenchmark) {
    ConversationManager m;
    std::string c = m.start_conversation("user_0000");
    for (int i = 1; i <= 4; ++i) m.add_turn(c, 10 * i);
    auto prev = m.previous_turns(c, c + "_turn_2");
    ASSERT_EQ(prev.size(), 3u);  // turns 1, 3, 4: everything but the current key (docs/mlperf-benchmark.md,
                                 // "Multi-turn, prefix and RAG reuse", "Upstream bugs kvio fixes or keeps")
    EXPECT_EQ(prev[0].cache_key, c + "_turn_1");
    EXPECT_EQ(prev[1].cache_key, c + "_turn_3");
    EXPECT_EQ(prev[2].context_tokens, 40);
}

TEST(Conversation, CapDropsTheLeastRecentlyUsedAndAddTurnReportsIt) {
    ConversationManager m(2);
    std::string a = m.start_conversation("u");
    std::string b = m.start_conversation("u");
    m.add_turn(a, 1);  // a is now more recent than b
    std::string c = m.start_conversation("u");
    EXPECT_EQ(m.size(), 2u);
    EXPECT_EQ(m.dropped(), 1u);
    EXPECT_FALSE(m.add_turn(b, 1));
    EXPECT_TRUE(m.add_turn(a, 1));
    EXPECT_TRUE(m.add_turn(c, 1));
}

// A turn is sized once its prefill set its tokens; a handoff message carries that, so the client taking the
// conversation over knows which turns' sizes are the written ones (docs/simulate.md, "Remote tier", handoff).
TEST(Conversation, HandoffMessageCarriesWhetherEachTurnIsSized) {
    ConversationManager m;
    std::string a = m.start_conversation("u");
    m.add_turn(a, 1000);
    m.add_turn(a, 2000);
    EXPECT_FALSE(m.turns(a)[0].sized);
    m.set_turn_tokens(a, a + "_turn_1", 990);  // a system prompt of 10 tokens came off
    const std::vector<Turn> t = m.turns(a);
    EXPECT_TRUE(t[0].sized);
    EXPECT_EQ(t[0].context_tokens, 990);
    EXPECT_FALSE(t[1].sized);
    const std::optional<HandedConversation> h = parse_handoff_message(handoff_message(a, t));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->conv_id, a);
    ASSERT_EQ(h->turns.size(), 2u);
    EXPECT_EQ(h->turns[0].cache_key, a + "_turn_1");
    EXPECT_EQ(h->turns[0].context_tokens, 990);
    EXPECT_TRUE(h->turns[0].sized);
    EXPECT_EQ(h->turns[1].turn_number, 2);
    EXPECT_EQ(h->turns[1].context_tokens, 2000);
    EXPECT_FALSE(h->turns[1].sized);
    EXPECT_TRUE(h->turns[0].handed_over && h->turns[1].handed_over);
    EXPECT_FALSE(parse_handoff_message("not json"));
    EXPECT_FALSE(parse_handoff_message(R"({"conv": "x", "turns": [["k", 5]]})"));  // no sized flag
}

// A conversation handed off and handed back (two clients, each hands every conversation to the other) is taken over
// again with the turns the other client added; one still open here is not replaced.
TEST(Conversation, AdoptTakesBackAConversationThisClientHandedOff) {
    ConversationManager m;
    std::string a = m.start_conversation("u");
    m.add_turn(a, 100);
    EXPECT_FALSE(m.adopt(a, {}));  // open here: refused
    m.end_conversation(a);         // handed off before turn 1's prefill: the message carries it unsized
    std::vector<Turn> back = m.turns(a);
    for (Turn& t : back) t.handed_over = true;
    back.push_back({2, a + "_turn_2", 200, true, true});
    m.set_turn_tokens(a, a + "_turn_1", 90);  // turn 1's prefill ran here meanwhile
    ASSERT_TRUE(m.adopt(a, back));
    const std::vector<Turn> t = m.turns(a);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_TRUE(t[0].sized);  // this client's own turn: its size is known here
    EXPECT_EQ(t[0].context_tokens, 90);
    EXPECT_FALSE(t[0].handed_over);
    EXPECT_TRUE(t[1].handed_over && t[1].sized);
    EXPECT_EQ(m.add_turn(a, 300)->cache_key, a + "_turn_3");  // numbering goes on
    EXPECT_EQ(m.size(), 1u);
}

// Which tiers a turn is read from (docs/simulate.md, "Remote tier"): the server only for a turn another client handed
// over sized; a turn added here stays this client's own when its conversation comes back, also before its prefill.
TEST(Conversation, OnlyTurnsHandedOverSizedAreReadFromTheServer) {
    EXPECT_EQ(turn_read({1, "k", 10, false, false}), TurnRead::Local);
    EXPECT_EQ(turn_read({1, "k", 10, true, false}), TurnRead::Local);
    EXPECT_EQ(turn_read({1, "k", 10, false, true}), TurnRead::Skip);
    EXPECT_EQ(turn_read({1, "k", 10, true, true}), TurnRead::Shared);
    ConversationManager m;
    const std::string a = m.start_conversation("u");
    m.add_turn(a, 891);  // its request still queued here when the conversation is handed off
    m.end_conversation(a);
    std::vector<Turn> back = m.turns(a);
    for (Turn& t : back) t.handed_over = true;  // the other client got it unsized and sends it back so
    back.push_back({2, a + "_turn_2", 200, true, true});
    ASSERT_TRUE(m.adopt(a, back));
    EXPECT_EQ(turn_read(m.turns(a)[0]), TurnRead::Local);  // still this client's: not asked of the server
    m.set_turn_tokens(a, a + "_turn_1", 882);              // its prefill, the system prompt's 9 tokens off
    EXPECT_EQ(turn_read(m.turns(a)[0]), TurnRead::Local);
    EXPECT_EQ(m.turns(a)[0].context_tokens, 882);
    EXPECT_EQ(turn_read(m.turns(a)[1]), TurnRead::Shared);
}

TEST(Prefix, ThreePromptsWithTheBenchmarksWordCountsAndStableKeys) {
    EXPECT_EQ(system_prompt(0).tokens, 5);
    EXPECT_EQ(system_prompt(1).tokens, 9);
    EXPECT_EQ(system_prompt(2).tokens, 6);
    std::set<std::string> keys;
    for (size_t i = 0; i < kSystemPromptCount; ++i) {
        EXPECT_EQ(system_prompt(i).key.rfind("kv_system_", 0), 0u);
        EXPECT_EQ(system_prompt(i).key.size(), 10u + 16u);
        keys.insert(system_prompt(i).key);
    }
    EXPECT_EQ(keys.size(), 3u);
    EXPECT_EQ(system_prompt_key("You are a helpful assistant.", 5), system_prompt(0).key);
}

TEST(Prefix, DetectsWithItsProbabilityAndCountsBytesSaved) {
    PrefixCacheManager p(0.2, 1000);
    PyRandom rng(7);
    int hits = 0, n = 20000;
    for (int i = 0; i < n; ++i) hits += p.detect(rng).has_value();
    EXPECT_NEAR(double(hits) / n, 0.2, 0.01);
    auto j = p.stats_json();
    EXPECT_EQ(j["prefix_hits"], hits);
    EXPECT_EQ(j["prefix_misses"], n - hits);
    EXPECT_EQ(j["system_prompt_reuse"], hits);
    // mean words (5 + 9 + 6) / 3 ≈ 6.67 per hit
    EXPECT_NEAR(j["bytes_saved"].get<double>() / hits / 1000.0, 20.0 / 3.0, 0.15);
}

TEST(Rag, ChunksOfAtMost512TokensOr256MiB) {
    YamlSettings y = default_yaml_settings();
    EXPECT_EQ(rag_chunk_tokens(y, 131072), 512);      // 256 MiB / 128 KiB = 2048 > 512
    EXPECT_EQ(rag_chunk_tokens(y, 1ull << 20), 256);  // 256 MiB / 1 MiB
    RagDocument d = make_rag_document("doc_0003", 1300, 512);
    ASSERT_EQ(d.chunks.size(), 3u);
    EXPECT_EQ(d.chunks[2].tokens, 1300 - 1024);
    EXPECT_EQ(d.chunks[1].key, "rag_doc_0003_chunk_1");
}

TEST(Rag, TopKPicksAreDistinctAndZipfFavoursTheFirstChunks) {
    PyRandom rng(42);
    int first = 0, with0 = 0, with19 = 0, n = 20000;
    for (int i = 0; i < n; ++i) {
        auto k = pick_rag_chunks(rng, 20, 5, "zipfian");
        ASSERT_EQ(k.size(), 5u);
        EXPECT_EQ(std::set<size_t>(k.begin(), k.end()).size(), 5u);
        first += k[0] == 0;
        with0 += std::count(k.begin(), k.end(), size_t(0)) > 0;
        with19 += std::count(k.begin(), k.end(), size_t(19)) > 0;
    }
    // first draw picks chunk 0 with weight 1 / H(20) = 0.278
    EXPECT_NEAR(double(first) / n, 1.0 / 3.5977, 0.02);
    EXPECT_GT(with0, 5 * with19);  // weight 1 vs 1/20: chunk 0 is in most picks, chunk 19 in few
    EXPECT_EQ(pick_rag_chunks(rng, 3, 5, "uniform").size(), 3u);
}

TEST(Qos, PerRequestP95TargetTestAndCompliance) {
    QosMonitor q(default_yaml_settings().qos_profiles);
    for (int i = 0; i < 95; ++i) q.record(QosClass::Interactive, 0.040);  // under the 50 ms target
    for (int i = 0; i < 5; ++i) q.record(QosClass::Interactive, 0.060);
    q.record(QosClass::Batch, 2.0);  // over 1000 ms
    auto j = q.to_json();
    EXPECT_EQ(j["interactive"]["total_requests"], 100);
    EXPECT_DOUBLE_EQ(j["interactive"]["sla"]["compliance"].get<double>(), 0.95);
    EXPECT_TRUE(j["interactive"]["sla"]["met"].get<bool>());
    EXPECT_DOUBLE_EQ(j["interactive"]["sla"]["target_p95_ms"].get<double>(), 50.0);
    EXPECT_FALSE(j["batch"]["sla"]["met"].get<bool>());
    EXPECT_TRUE(j["responsive"]["no_data"].get<bool>());
}

TEST(RequestQueue, StrictPriorityThenFifoBySequence) {
    RequestQueue q;
    auto mk = [](QosClass c, uint64_t seq) {
        auto r = std::make_shared<InferenceRequest>();
        r->qos = c;
        r->seq = seq;
        return r;
    };
    q.push(mk(QosClass::Batch, 1));
    q.push(mk(QosClass::Responsive, 2));
    q.push(mk(QosClass::Interactive, 4));
    q.push(mk(QosClass::Interactive, 3));
    q.push(mk(QosClass::Batch, 0));
    std::vector<uint64_t> order;
    while (auto r = q.pop(std::chrono::milliseconds(0))) order.push_back(r->seq);
    EXPECT_EQ(order, (std::vector<uint64_t>{3, 4, 2, 0, 1}));
    q.push(mk(QosClass::Batch, 9));
    EXPECT_EQ(q.close(), 1u);
    EXPECT_EQ(q.pop(std::chrono::milliseconds(0)), nullptr);
}
