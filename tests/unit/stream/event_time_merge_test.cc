#include "stream/event_time_merge.h"

#include <gtest/gtest.h>

namespace trib::stream::detail {
namespace {

PendingRecord record(std::int64_t offset, std::int64_t ts, bool poison = false) {
  PendingRecord r;
  r.offset = offset;
  r.timestamp_ms = ts;
  r.skip = poison;
  return r;
}

std::vector<std::pair<std::int32_t, std::int64_t>> take_all(EventTimeMerge& m, std::int64_t now) {
  std::vector<PendingRecord> out;
  m.take(1000, now, out);
  std::vector<std::pair<std::int32_t, std::int64_t>> got;
  for (const auto& r : out) got.emplace_back(r.partition, r.offset);
  return got;
}

// Partition 0 and 1 with known watermarks, records pushed with their partition set.
void push(EventTimeMerge& m, std::int32_t p, std::int64_t offset, std::int64_t ts, std::int64_t now) {
  PendingRecord r = record(offset, ts);
  r.partition = p;
  m.push(p, std::move(r), now);
}

TEST(EventTimeMergeTest, HandsOutByTimestampThenPartition) {
  EventTimeMerge m(MergeOptions{.replayable = true, .grace_ms = 100, .stall_ms = 2000});
  m.add(0, 0, 0);
  m.add(1, 0, 0);
  push(m, 0, 0, 10, 0);
  push(m, 0, 1, 30, 0);
  push(m, 1, 0, 10, 0);
  push(m, 1, 1, 20, 0);
  m.set_high_watermark(0, 2, 0);
  m.set_high_watermark(1, 2, 0);
  // At time 1000 all are older than the grace period.
  auto got = take_all(m, 1000);
  EXPECT_EQ(got, (std::vector<std::pair<std::int32_t, std::int64_t>>{{0, 0}, {1, 0}, {1, 1}, {0, 1}}));
  EXPECT_EQ(m.positions(), (PartitionOffsets{{0, 2}, {1, 2}}));
}

TEST(EventTimeMergeTest, TheSameRecordsArrivingInAnotherOrderMergeTheSame) {
  auto run = [](bool partition0_first) {
    EventTimeMerge m(MergeOptions{.replayable = true, .grace_ms = 100, .stall_ms = 2000});
    m.add(0, 0, 0);
    m.add(1, 0, 0);
    std::vector<std::pair<std::int32_t, std::int64_t>> all;
    for (int round = 0; round < 2; ++round) {
      const bool zero = (round == 0) == partition0_first;
      for (int i = 0; i < 3; ++i) push(m, zero ? 0 : 1, i, 100 + 7 * i + (zero ? 0 : 3), 0);
      m.set_high_watermark(zero ? 0 : 1, 3, 0);
      m.set_high_watermark(zero ? 1 : 0, 3, 0);
      auto part = take_all(m, 0);  // before the grace period ends: only safe records go
      all.insert(all.end(), part.begin(), part.end());
    }
    auto rest = take_all(m, 10'000);
    all.insert(all.end(), rest.begin(), rest.end());
    return all;
  };
  EXPECT_EQ(run(true), run(false));
  EXPECT_EQ(run(true).size(), 6u);
}

TEST(EventTimeMergeTest, AnEmptyPartitionWithRecordsOnTheBrokerHoldsTheOthersBack) {
  EventTimeMerge m(MergeOptions{.replayable = true, .grace_ms = 100, .stall_ms = 2000});
  m.add(0, 0, 0);
  m.add(1, 0, 0);
  push(m, 0, 0, 10, 0);
  m.set_high_watermark(0, 1, 0);
  m.set_high_watermark(1, 5, 0);  // partition 1 has 5 records not yet fetched
  EXPECT_TRUE(take_all(m, 1000).empty());
  EXPECT_FALSE(m.retry_at().has_value());  // waiting for data, not for time
  // Once it stalls for stall_ms it no longer holds the others back.
  EXPECT_EQ(take_all(m, 2500).size(), 1u);
}

TEST(EventTimeMergeTest, ACaughtUpEmptyPartitionHoldsBackOnlyForTheGracePeriod) {
  EventTimeMerge m(MergeOptions{.replayable = true, .grace_ms = 100, .stall_ms = 2000});
  m.add(0, 0, 0);
  m.add(1, 0, 0);
  push(m, 0, 0, 1000, 1000);
  m.set_high_watermark(0, 1, 1000);
  m.set_high_watermark(1, 0, 1000);
  EXPECT_TRUE(take_all(m, 1050).empty());
  ASSERT_TRUE(m.retry_at().has_value());
  EXPECT_EQ(*m.retry_at(), 1100);
  EXPECT_EQ(take_all(m, 1100).size(), 1u);
}

TEST(EventTimeMergeTest, ArrivalOrderNeverWaits) {
  EventTimeMerge m(MergeOptions{.replayable = false, .grace_ms = 0, .stall_ms = 0});
  m.add(0, 0, 0);
  m.add(1, 0, 0);
  push(m, 0, 0, 1000, 1000);
  EXPECT_EQ(take_all(m, 1000).size(), 1u);
}

TEST(EventTimeMergeTest, PoisonRecordsAdvanceThePositionWithoutBeingHandedOut) {
  EventTimeMerge m(MergeOptions{.replayable = false});
  m.add(0, 5, 0);
  PendingRecord bad = record(5, 1, /*poison=*/true);
  m.push(0, std::move(bad), 0);
  EXPECT_EQ(m.positions().at(0), 6);  // as good as consumed
  push(m, 0, 6, 2, 0);
  auto got = take_all(m, 0);
  EXPECT_EQ(got, (std::vector<std::pair<std::int32_t, std::int64_t>>{{0, 6}}));
  EXPECT_EQ(m.positions().at(0), 7);
}

TEST(EventTimeMergeTest, IgnoresRecordsOfOtherOrPassedOffsets) {
  EventTimeMerge m(MergeOptions{.replayable = false});
  m.add(0, 10, 0);
  EXPECT_FALSE(m.push(1, record(0, 0), 0));
  EXPECT_FALSE(m.push(0, record(9, 0), 0));
  EXPECT_TRUE(m.push(0, record(10, 0), 0));
  m.reset(0, 3, 0);
  EXPECT_EQ(m.buffered(0), 0);
  EXPECT_EQ(m.positions().at(0), 3);
}

}  // namespace
}  // namespace trib::stream::detail
