// The raw-device extent allocator of the storage tier (workload/serving/extent_alloc.h): 1 MiB alignment
// after the reserved first MiB, first fit, coalescing on release, pieces when fragmented.
#include <gtest/gtest.h>

#include "workload/serving/tiers/extent_alloc.h"

using namespace kvio::serving;

namespace {
constexpr uint64_t M = 1 << 20;
}

TEST(ExtentAlloc, AlignedFirstFitAfterTheFirstMiB) {
    ExtentAllocator a(M, 10 * M + 12345, M);  // the tail that is not a whole MiB is unused
    EXPECT_EQ(a.capacity(), 9 * M);
    auto p1 = a.allocate(1);
    ASSERT_EQ(p1.size(), 1u);
    EXPECT_EQ(p1[0], std::make_pair(M, M));
    auto p2 = a.allocate(2 * M + 1);
    EXPECT_EQ(p2, (ExtentAllocator::Pieces{{2 * M, 3 * M}}));
    EXPECT_EQ(a.free_bytes(), 5 * M);
    EXPECT_TRUE(a.allocate(6 * M).empty());  // more than is free
    EXPECT_TRUE(a.allocate(0).empty());
}

TEST(ExtentAlloc, ReleaseCoalescesNeighbours) {
    ExtentAllocator a(M, 9 * M, M);
    auto x = a.allocate(2 * M), y = a.allocate(2 * M), z = a.allocate(2 * M);
    a.release(x);
    a.release(z);
    EXPECT_EQ(a.free_ranges().size(), 2u);  // [1,3) and [5,9)
    a.release(y);
    ASSERT_EQ(a.free_ranges().size(), 1u);
    EXPECT_EQ(a.free_ranges().begin()->first, M);
    EXPECT_EQ(a.free_ranges().begin()->second, 8 * M);
}

TEST(ExtentAlloc, FragmentedSpaceIsUsedInPieces) {
    ExtentAllocator a(0, 8 * M, M);
    std::vector<ExtentAllocator::Pieces> v;
    for (int i = 0; i < 8; ++i) v.push_back(a.allocate(M));
    for (int i = 0; i < 8; i += 2) a.release(v[size_t(i)]);  // every other MiB free
    auto first_fit = a.allocate(M);
    EXPECT_EQ(first_fit, (ExtentAllocator::Pieces{{0, M}}));
    auto p = a.allocate(3 * M);  // no 3 MiB hole: the three lowest holes
    EXPECT_EQ(p, (ExtentAllocator::Pieces{{2 * M, M}, {4 * M, M}, {6 * M, M}}));
    EXPECT_EQ(a.free_bytes(), 0u);
}
