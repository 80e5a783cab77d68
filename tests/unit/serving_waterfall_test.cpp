// The waterfall placement policy (workload/serving/waterfall.h) on sizes alone: demotion chains, the
// large-entry rule, LRU deletion order, skipped tiers, the recursion cap, and the "never above the limit"
// invariant under many threads (a shadow counter of the bytes physically present or being written).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "workload/serving/tiers/waterfall.h"

using namespace kvio::serving;

namespace {

/// Places `key` the way the cache does, executing every demotion/deletion at once. Returns the tier (-1: none).
int place(WaterfallPolicy& p, const std::string& key, uint64_t bytes, std::vector<WaterfallAction>* done = nullptr) {
    if (!p.begin_allocate(key)) return -2;
    int from = 0;
    for (int round = 0; round < 1000; ++round) {
        PlaceStep s = p.place_step(bytes, from);
        switch (s.kind) {
            case PlaceStep::Kind::Reserved:
                p.commit_write(key, s.tier, bytes);
                return s.tier;
            case PlaceStep::Kind::Work:
                for (const auto& a : s.actions) {
                    if (done) done->push_back(a);
                    if (a.kind == WaterfallAction::Kind::Demote)
                        p.finish_demotion(a, true);
                    else
                        p.finish_delete(a);
                }
                from = s.tier;
                break;
            case PlaceStep::Kind::Wait:
                p.wait_change(s.generation, 10), from = s.tier;
                break;
            case PlaceStep::Kind::Fail:
                p.end_allocate(key);
                return -1;
        }
    }
    p.end_allocate(key);
    return -1;
}

}  // namespace

TEST(Waterfall, FillsTheFirstTierToItsTargetThenDemotesTheOldest) {
    WaterfallPolicy p({1000, 1000, 1000});  // gpu, cpu, storage
    EXPECT_EQ(place(p, "a", 300), 0);
    EXPECT_EQ(place(p, "b", 300), 0);
    std::vector<WaterfallAction> done;
    EXPECT_EQ(place(p, "c", 300, &done), 0);  // 900 > 800: a goes down
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, WaterfallAction::Kind::Demote);
    EXPECT_EQ(done[0].key, "a");
    EXPECT_EQ(done[0].to, 1);
    EXPECT_EQ(p.tier_of("a"), 1);
    EXPECT_EQ(p.usage(0).claimed, 600u);
    EXPECT_EQ(p.usage(1).claimed, 300u);
}

// A remote tier (the middle one) marked down after a fault: new entries and the CPU tier's victims go past it to
// storage; what it held stays readable while it only refuses writes (a full server), and becomes a miss once it is
// gone (a killed server).
TEST(Waterfall, ATierMarkedDownIsPassedOverAndItsEntriesGoWithIt) {
    WaterfallPolicy p({1000, 1000, 10000});  // cpu, remote, storage
    ASSERT_EQ(place(p, "a", 300), 0);
    ASSERT_EQ(place(p, "b", 300), 0);
    ASSERT_EQ(place(p, "c", 300), 0);  // a demoted to the remote tier
    ASSERT_EQ(p.tier_of("a"), 1);
    p.mark_down(1, true);
    EXPECT_TRUE(p.is_down(1));
    std::vector<WaterfallAction> done;
    EXPECT_EQ(place(p, "d", 300, &done), 0);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].key, "b");
    EXPECT_EQ(done[0].to, 2) << "demoted past the tier that is down";
    EXPECT_EQ(place(p, "big", 960), 2) << "an entry too large for the cpu tier (> 95 %) skips the remote tier";
    ReadGrant g = p.begin_read("a");
    EXPECT_EQ(g.tier, 1) << "a full server's entries are still read";
    p.end_read("a");
    p.mark_down(1, false);
    EXPECT_EQ(p.begin_read("a").tier, -1) << "a gone server's entries are misses";
    EXPECT_FALSE(p.contains("a"));
    EXPECT_EQ(p.usage(1).entries, 0u);
}

// The remote tier as the last tier (no storage) marked down: the CPU tier is the last one now and deletes its
// oldest entries instead of demoting them to a server that is gone.
TEST(Waterfall, WithTheLastTierDownTheTierAboveDeletes) {
    WaterfallPolicy p({1000, 1000});  // cpu, remote
    ASSERT_EQ(place(p, "a", 300), 0);
    ASSERT_EQ(place(p, "b", 300), 0);
    p.mark_down(1, false);
    ASSERT_EQ(place(p, "c", 300), 0) << "the cpu tier now fills to its limit, as a last tier does";
    std::vector<WaterfallAction> done;
    EXPECT_EQ(place(p, "d", 300, &done), 0);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, WaterfallAction::Kind::Delete);
    EXPECT_EQ(done[0].key, "a");
    EXPECT_EQ(place(p, "huge", 2000), -1) << "no tier that is up can take it";
}

TEST(Waterfall, DemotionChainReachesStorageRecursively) {
    WaterfallPolicy p({1000, 1000, 1000});
    for (const char* k : {"a", "b", "c", "d", "e"}) ASSERT_EQ(place(p, k, 300), 0) << k;
    // gpu holds 2 (600), every newcomer pushes the gpu's oldest to cpu; cpu at 2 entries (600) must push its
    // oldest to storage before taking a third.
    EXPECT_EQ(p.tier_of("e"), 0);
    EXPECT_EQ(p.tier_of("d"), 0);
    EXPECT_EQ(p.tier_of("c"), 1);
    EXPECT_EQ(p.tier_of("b"), 1);
    EXPECT_EQ(p.tier_of("a"), 2);
    EXPECT_EQ(p.usage(2).claimed, 300u);
    for (int t = 0; t < 3; ++t) EXPECT_EQ(p.usage(t).reserved, 0u);
}

TEST(Waterfall, LargeEntrySkipsANonTerminalTier) {
    WaterfallPolicy p({1000, 10000, 100000});
    EXPECT_EQ(place(p, "big", 951), 1);   // > 0.95 × 1000
    EXPECT_EQ(place(p, "fits", 950), 0);  // near-empty tier: above the 0.8 target, under the limit
    EXPECT_EQ(p.usage(0).claimed, 950u);
}

TEST(Waterfall, BottomTierDeletesInLruOrderThenAccessCount) {
    WaterfallPolicy p({0, 1000});  // cpu skipped (limit 0), storage 1000 (filled to 100 %)
    for (const char* k : {"a", "b", "c"}) ASSERT_EQ(place(p, k, 300), 1);
    p.set_lru("a", 5, 2);
    p.set_lru("b", 9, 1);
    p.set_lru("c", 5, 1);  // same last_access as a, fewer accesses: the first to go
    EXPECT_EQ(p.lru_order(1), (std::vector<std::string>{"c", "a", "b"}));
    std::vector<WaterfallAction> done;
    ASSERT_EQ(place(p, "d", 300, &done), 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, WaterfallAction::Kind::Delete);
    EXPECT_EQ(done[0].key, "c");
    done.clear();
    ASSERT_EQ(place(p, "e", 700, &done), 1);
    ASSERT_EQ(done.size(), 2u);  // 1600 − 1000: a, then b (oldest first); d is newer than both
    EXPECT_EQ(done[0].key, "a");
    EXPECT_EQ(done[1].key, "b");
    EXPECT_EQ(p.usage(1).claimed, 1000u);
    EXPECT_EQ(p.lru_order(1), (std::vector<std::string>{"d", "e"}));
    EXPECT_FALSE(p.contains("c"));
}

TEST(Waterfall, ZeroLimitTierIsSkippedAndDoesNotShortenTheChain) {
    // gpu > 0, cpu 0: gpu entries can never be demoted (the cpu refuses them), so gpu fills to 80 % and every
    // later entry goes straight to storage (docs/mlperf-benchmark.md, "Tiers and the waterfall").
    WaterfallPolicy p({1000, 0, 10000});
    EXPECT_EQ(place(p, "a", 400), 0);
    EXPECT_EQ(place(p, "b", 400), 0);
    EXPECT_EQ(place(p, "c", 400), 2);
    EXPECT_EQ(p.tier_of("a"), 0);
    EXPECT_EQ(p.usage(1).claimed, 0u);
}

TEST(Waterfall, RecursionDepthCapStopsDeepDemotion) {
    auto fill = [](WaterfallPolicy& p) {
        for (const char* k : {"g1", "g2"}) place(p, k, 400);  // gpu 800 = target
        for (const char* k : {"c1", "c2"}) {
            place(p, k, 400);
        }  // land in gpu after demoting g1, g2
    };
    WaterfallPolicy deep({1000, 1000, 100000});
    fill(deep);
    ASSERT_EQ(deep.usage(1).claimed, 800u);  // g1, g2 in cpu (at its target)
    EXPECT_EQ(place(deep, "new", 400), 0);   // gpu → cpu → storage: depth 1
    EXPECT_EQ(deep.tier_of("g1"), 2);

    WaterfallOptions o;
    o.max_depth = 0;
    WaterfallPolicy shallow({1000, 1000, 100000}, o);
    fill(shallow);
    ASSERT_EQ(shallow.usage(1).claimed, 800u);
    // The gpu cannot make room (its victim needs a demotion one level deeper): the entry goes to the cpu,
    // which makes room by demoting its own oldest to storage (depth 0).
    EXPECT_EQ(place(shallow, "new", 400), 1);
    EXPECT_EQ(shallow.tier_of("c1"), 0);
}

TEST(Waterfall, NearEmptyRuleNeverAdmitsAboveTheLimit) {
    // The benchmark admits anything while usage < 5 % of the limit, even above the limit; kvio deletes first.
    WaterfallPolicy p({0, 1000});
    ASSERT_EQ(place(p, "small", 40), 1);
    std::vector<WaterfallAction> done;
    ASSERT_EQ(place(p, "big", 990, &done), 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].key, "small");
    EXPECT_EQ(p.usage(1).claimed, 990u);
}

TEST(Waterfall, EntryLargerThanEveryTierFails) {
    WaterfallPolicy p({100, 100, 1000});
    EXPECT_EQ(place(p, "huge", 1001), -1);
    EXPECT_FALSE(p.contains("huge"));
    EXPECT_EQ(p.usage(2).claimed, 0u);
}

TEST(Waterfall, UnlimitedStorageNeverEvicts) {
    WaterfallPolicy p({0, 0, kUnlimited});
    for (int i = 0; i < 100; ++i) ASSERT_EQ(place(p, "k" + std::to_string(i), 1ull << 40), 2);
    EXPECT_EQ(p.usage(2).entries, 100u);
}

TEST(Waterfall, AbortedWriteReleasesItsReservation) {
    WaterfallPolicy p({0, 1000});
    ASSERT_TRUE(p.begin_allocate("x"));
    PlaceStep s = p.place_step(600);
    ASSERT_EQ(s.kind, PlaceStep::Kind::Reserved);
    EXPECT_EQ(p.usage(1).reserved, 600u);
    p.abort_write("x", s.tier, 600);
    EXPECT_EQ(p.usage(1).claimed, 0u);
    EXPECT_FALSE(p.contains("x"));
    EXPECT_TRUE(p.begin_allocate("x"));  // may be tried again
}

// A storage write cut at the stop leaves its file until the tier closes (docs/simulate.md, "Stop rules"): its bytes
// stay claimed, so a write of the drain cannot take room the filesystem does not have (before, the room was released
// at the cut and several ranks' drains overcommitted a shared cache filesystem: ENOSPC).
TEST(Waterfall, CutWriteStaysClaimedUntilTheTierCloses) {
    WaterfallPolicy p({0, 1000});
    ASSERT_TRUE(p.begin_allocate("x"));
    PlaceStep s = p.place_step(600);
    ASSERT_EQ(s.kind, PlaceStep::Kind::Reserved);
    p.hold_cut_write("x", s.tier, 600);
    EXPECT_EQ(p.usage(1).claimed, 600u);
    EXPECT_EQ(p.usage(1).reserved, 0u);
    EXPECT_FALSE(p.contains("x"));
    ASSERT_TRUE(p.begin_allocate("y"));
    EXPECT_NE(p.place_step(600).kind, PlaceStep::Kind::Reserved) << "600 more bytes on a 1000-byte tier holding 600";
    const PlaceStep fits = p.place_step(400);
    ASSERT_EQ(fits.kind, PlaceStep::Kind::Reserved);
    EXPECT_EQ(p.usage(1).claimed, 1000u);
}

TEST(Waterfall, ExistingOrInFlightKeyIsNotAllocatedTwice) {
    WaterfallPolicy p({0, 1000});
    ASSERT_TRUE(p.begin_allocate("k"));
    EXPECT_FALSE(p.begin_allocate("k"));  // being written
    PlaceStep s = p.place_step(10);
    p.commit_write("k", s.tier, 10);
    EXPECT_FALSE(p.begin_allocate("k"));  // cached
}

TEST(Waterfall, EntryBeingReadIsNotEvicted) {
    WaterfallPolicy p({0, 1000});
    ASSERT_EQ(place(p, "old", 500), 1);
    ASSERT_EQ(place(p, "mid", 400), 1);
    ReadGrant g = p.begin_read("mid");  // mid becomes the newest; old is the LRU
    ASSERT_EQ(g.tier, 1);
    g = p.begin_read("old");  // now mid is the LRU but it is being read too
    std::vector<WaterfallAction> done;
    ASSERT_TRUE(p.begin_allocate("new"));
    PlaceStep s = p.place_step(300);
    EXPECT_EQ(s.kind, PlaceStep::Kind::Wait);  // nothing may leave while both are read
    p.end_read("mid");
    s = p.place_step(300);
    ASSERT_EQ(s.kind, PlaceStep::Kind::Work);
    ASSERT_EQ(s.actions.size(), 1u);
    EXPECT_EQ(s.actions[0].key, "mid");
    p.end_read("old");
}

TEST(Waterfall, FootprintCountsWhatTheLayoutOccupies) {
    WaterfallOptions o;
    o.footprint = [](int tier, uint64_t b) { return tier == 1 ? (128 + b + 4095) / 4096 * 4096 : b; };
    WaterfallPolicy p({0, 3 * 4096}, o);
    for (const char* k : {"a", "b", "c"}) ASSERT_EQ(place(p, k, 4096), 1);  // 8 KiB each on disk
    EXPECT_EQ(p.usage(1).claimed, 8192u);  // the second and third deleted their predecessor
    EXPECT_EQ(p.usage(1).entries, 1u);
}

// Many threads place, read and evict at once; the executor keeps a shadow count of the bytes physically
// present or being written in each tier (incremented before a write starts, decremented after the bytes are
// gone) and checks it against the limit at every increment.
TEST(Waterfall, StressNeverExceedsALimitAndAccountingMatches) {
    const std::vector<uint64_t> limits = {64 << 10, 256 << 10, 1 << 20};
    WaterfallPolicy p(limits);
    std::atomic<int64_t> phys[3] = {0, 0, 0};
    std::atomic<int64_t> peak[3] = {0, 0, 0};
    std::atomic<bool> over{false};
    std::mutex mu;
    std::map<std::string, uint64_t> sizes;
    auto add = [&](int t, uint64_t b) {
        int64_t v = phys[t].fetch_add(int64_t(b)) + int64_t(b);
        if (v > int64_t(limits[t])) over = true;
        int64_t pk = peak[t].load();
        while (v > pk && !peak[t].compare_exchange_weak(pk, v)) {}
    };
    auto sub = [&](int t, uint64_t b) { phys[t].fetch_sub(int64_t(b)); };
    auto tiny_io = [](std::mt19937& r) { std::this_thread::sleep_for(std::chrono::microseconds(r() % 50)); };
    std::atomic<int> placed{0}, failed{0};
    auto worker = [&](int id) {
        std::mt19937 rng(uint32_t(id) * 7919u + 1);
        for (int i = 0; i < 300; ++i) {
            std::string key = "t" + std::to_string(id) + "_" + std::to_string(i);
            uint64_t bytes = 1024 + rng() % (40 << 10);
            if (i > 3 && rng() % 3 == 0) {  // read an earlier key of ours
                std::string rk = "t" + std::to_string(id) + "_" + std::to_string(rng() % i);
                ReadGrant g = p.begin_read(rk);
                if (g.tier >= 0) {
                    tiny_io(rng);
                    p.end_read(rk);
                }
            }
            ASSERT_TRUE(p.begin_allocate(key));
            int tier = -1, from = 0;
            for (int round = 0; round < 10000 && tier < 0; ++round) {
                PlaceStep s = p.place_step(bytes, from);
                if (s.kind != PlaceStep::Kind::Reserved) from = s.tier;
                if (s.kind == PlaceStep::Kind::Reserved) {
                    tier = s.tier;
                } else if (s.kind == PlaceStep::Kind::Work) {
                    for (const auto& a : s.actions) {
                        if (a.kind == WaterfallAction::Kind::Demote) {
                            add(a.to, a.bytes);  // destination write starts
                            tiny_io(rng);
                            sub(a.from, a.bytes);  // source bytes gone
                            p.finish_demotion(a, true);
                        } else {
                            tiny_io(rng);
                            sub(a.from, a.bytes);
                            p.finish_delete(a);
                        }
                    }
                } else if (s.kind == PlaceStep::Kind::Wait) {
                    p.wait_change(s.generation, 5);
                } else {
                    break;
                }
            }
            if (tier < 0) {
                p.end_allocate(key);
                failed++;
                continue;
            }
            add(tier, bytes);
            tiny_io(rng);
            if (rng() % 20 == 0) {  // a failed write: its bytes vanish and nothing is counted
                sub(tier, bytes);
                p.abort_write(key, tier, bytes);
                continue;
            }
            p.commit_write(key, tier, bytes);
            placed++;
            std::lock_guard<std::mutex> g(mu);
            sizes[key] = bytes;
        }
    };
    std::vector<std::thread> th;
    for (int i = 0; i < 16; ++i) th.emplace_back(worker, i);
    for (auto& t : th) t.join();
    EXPECT_FALSE(over.load()) << "peaks " << peak[0] << " " << peak[1] << " " << peak[2];
    EXPECT_EQ(failed.load(), 0);
    EXPECT_GT(placed.load(), 4000);
    for (int t = 0; t < 3; ++t) {
        uint64_t sum = 0, n = 0;
        for (const auto& k : p.lru_order(t)) sum += sizes.at(k), ++n;
        TierUsage u = p.usage(t);
        EXPECT_EQ(u.reserved, 0u) << t;
        EXPECT_EQ(u.resident, sum) << t;
        EXPECT_EQ(u.entries, n) << t;
        EXPECT_EQ(int64_t(u.claimed), phys[t].load()) << t;
        EXPECT_LE(peak[t].load(), int64_t(limits[t])) << t;
        EXPECT_GT(peak[t].load(), int64_t(limits[t]) / 2) << t;  // the tier was really used
    }
}

// The benchmark holds a per-key lock across a read (docs/mlperf-benchmark.md, "Tiers and the waterfall"): a second read
// of the same key waits for the first.
TEST(Waterfall, ReadsOfOneKeyAreSerialised) {
    WaterfallPolicy p({0, 1000});
    ASSERT_EQ(place(p, "k", 100), 1);
    ASSERT_EQ(place(p, "other", 100), 1);
    ASSERT_EQ(p.begin_read("k").tier, 1);
    EXPECT_EQ(p.begin_read("other").tier, 1);  // another key is not held up
    p.end_read("other");
    std::atomic<bool> second_started{false};
    std::thread t([&] {
        ReadGrant g = p.begin_read("k");
        second_started = true;
        EXPECT_EQ(g.tier, 1);
        p.end_read("k");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(second_started.load());  // still waiting for the first reader
    p.end_read("k");
    t.join();
    EXPECT_TRUE(second_started.load());
}
