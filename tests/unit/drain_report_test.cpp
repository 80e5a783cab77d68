// Unit tests of the drain line (workload/serving/results/drain_report.h): what a stopped simulation's drain waited
// on, from the bytes each tier moved since the stop (docs/simulate.md, "Stop rules").
#include <gtest/gtest.h>

#include "workload/serving/results/drain_report.h"

using namespace kvio::serving;

// Option 2's drain is memcpy into its CPU tier while the device is idle: the line says what moved where, never "a
// stalled device" (the wording before, whatever the drain waited on); a tier not present is not named.
TEST(DrainReport, SaysWhatEachTierMovedSinceTheStop) {
    CacheStats at_stop, now;
    for (CacheStats* s : {&at_stop, &now}) s->tier_present[1] = s->tier_present[2] = true;  // cpu, storage
    at_stop.tier_bytes_written[1] = 4'000'000'000;
    at_stop.tier_bytes_read[1] = 100;
    at_stop.tier_bytes_written[2] = 7'000;
    now = at_stop;
    now.tier_bytes_written[1] += 1'210'000'000;
    EXPECT_EQ(drain_line(12, 5.7, at_stop, now),
              "simulate: draining: 12 requests in flight after 5 s; since the stop: cpu tier 1.21 GB written, 0.00 GB "
              "read; storage tier nothing moved");
    now.tier_bytes_read[2] += 30'000'000;  // the device read back entries
    EXPECT_EQ(drain_line(1, 10, at_stop, now),
              "simulate: draining: 1 requests in flight after 10 s; since the stop: cpu tier 1.21 GB written, 0.00 GB "
              "read; storage tier 0.00 GB written, 0.03 GB read");
    EXPECT_EQ(drain_line(3, 5, CacheStats{}, CacheStats{}),
              "simulate: draining: 3 requests in flight after 5 s; since the stop: no tier");
}
