#include "trib/stream/applied_offsets.h"

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

PartitionProgress at(std::int64_t next, const char* applied = "", std::int64_t from = 0) {
  return PartitionProgress{.next = next, .applied = OffsetRanges::parse(applied), .from = from};
}

// A shuffle buffer hands records out of order; the position counts only what was applied.
TEST(AppliedOffsetsTest, TheLowWatermarkIsTheFirstRecordNotApplied) {
  AppliedOffsets t;
  t.start(0, at(10));
  for (std::int64_t o = 10; o < 20; ++o) t.handed_out(0, o);
  EXPECT_EQ(t.progress({{0, 20}}).at(0), at(10));  // read 10 records, applied none
  for (std::int64_t o : {12, 15, 16, 19}) t.applied(0, o);
  EXPECT_EQ(t.progress({{0, 20}}).at(0), at(10, "12,15-16,19"));
  for (std::int64_t o : {10, 11}) t.applied(0, o);
  EXPECT_EQ(t.progress({{0, 20}}).at(0), at(13, "15-16,19"));
  for (std::int64_t o : {13, 14, 17, 18}) t.applied(0, o);
  EXPECT_EQ(t.progress({{0, 22}}).at(0), at(22)) << "records read past the last handed out were skipped";
  EXPECT_EQ(t.pending(), 0);
}

// Against a plain model: records handed out in order in chunks, applied in a shuffled order
// (a window at a time), with gaps (poison, consumed at once) now and then.
TEST(AppliedOffsetsTest, ProgressMatchesAPlainModelUnderShuffledApplication) {
  std::mt19937 rng(7);
  AppliedOffsets t;
  t.start(0, at(100));
  std::set<std::int64_t> applied_model;
  std::int64_t read = 100;
  std::vector<std::int64_t> window;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 13; ++i, ++read) {
      if (rng() % 17 == 0) {
        t.consumed(0, read);
        applied_model.insert(read);
        continue;
      }
      t.handed_out(0, read);
      window.push_back(read);
    }
    std::shuffle(window.begin(), window.end(), rng);
    const std::size_t apply = window.size() / 2;
    for (std::size_t i = 0; i < apply; ++i) {
      t.applied(0, window[i]);
      applied_model.insert(window[i]);
    }
    window.erase(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(apply));
    std::int64_t low = 100;
    while (applied_model.contains(low)) ++low;
    OffsetRanges above;
    for (std::int64_t o : applied_model)
      if (o > low) above.insert(o);
    ASSERT_EQ(t.progress({{0, read}}).at(0), (PartitionProgress{.next = low, .applied = above, .from = 0}))
        << "round " << round;
    ASSERT_EQ(t.pending(), static_cast<std::int64_t>(window.size()));
  }
}

TEST(AppliedOffsetsTest, NothingHandedOutMeansTheReadPosition) {
  AppliedOffsets t;
  t.start(3, at(0));
  EXPECT_EQ(t.progress({{3, 0}}).at(3), at(0));
  t.consumed(3, 0);  // a poison record
  EXPECT_EQ(t.progress({{3, 1}}).at(3), at(1));
}

TEST(AppliedOffsetsTest, ARestoredPositionSkipsWhatWasAppliedBeforeIt) {
  AppliedOffsets t;
  t.start(0, at(10, "12,14-15"));
  EXPECT_FALSE(t.skip(0, 10));
  EXPECT_TRUE(t.skip(0, 9));
  EXPECT_TRUE(t.skip(0, 12));
  EXPECT_TRUE(t.skip(0, 15));
  EXPECT_FALSE(t.skip(0, 16));
  EXPECT_FALSE(t.skip(1, 0)) << "an untracked partition skips nothing";
  t.handed_out(0, 10);
  t.handed_out(0, 11);
  EXPECT_EQ(t.progress({{0, 12}}).at(0), at(10, "12,14-15"));
  t.applied(0, 11);
  t.applied(0, 10);
  // 12 is done, 13 not read yet.
  EXPECT_EQ(t.progress({{0, 13}}).at(0), at(13, "14-15"));
}

TEST(AppliedOffsetsTest, AReleasedPartitionIsClaimedUntilItsRecordsAreApplied) {
  AppliedOffsets t;
  t.start(0, at(0));
  t.handed_out(0, 0);
  t.handed_out(0, 1);
  t.release(0, 2);
  EXPECT_EQ(t.progress({}).at(0), at(0));
  t.applied(0, 1);
  t.applied(0, 0);
  EXPECT_EQ(t.progress({}).at(0), at(2)) << "reported once more, then dropped";
  EXPECT_FALSE(t.tracks(0));
  EXPECT_TRUE(t.progress({}).empty());
}

TEST(AppliedOffsetsTest, ARollbackForgetsTheClaimsOfReleasedPartitionsOnly) {
  // Partition 0 moved to another member while 0 and 1 were still to be applied; partition 1
  // is still owned. After a rollback nothing handed out before it is applied any more.
  AppliedOffsets t;
  t.start(0, at(0));
  t.start(1, at(7));
  t.handed_out(0, 0);
  t.handed_out(0, 1);
  t.release(0, 2);
  t.handed_out(1, 7);
  t.forget_released();
  EXPECT_FALSE(t.tracks(0)) << "the new owner claims partition 0 from the rollback's progress";
  ASSERT_TRUE(t.tracks(1));
  t.applied(0, 0);  // a late report for the forgotten partition changes nothing
  const PartitionProgressMap p = t.progress({{1, 8}});
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.at(1), at(7));
}

TEST(AppliedOffsetsTest, APartitionGivenBackKeepsItsClaimAndPendingRecords) {
  AppliedOffsets t;
  t.start(0, at(0));
  t.handed_out(0, 0);
  t.handed_out(0, 1);
  t.release(0, 2);
  ASSERT_TRUE(t.reclaim(0));
  t.handed_out(0, 2);  // reading goes on where it stopped
  t.applied(0, 1);
  EXPECT_EQ(t.progress({{0, 3}}).at(0), at(0, "1"));
  t.applied(0, 0);
  t.applied(0, 2);
  EXPECT_EQ(t.progress({{0, 3}}).at(0), at(3));
  EXPECT_FALSE(t.reclaim(0)) << "owned, not released";
  EXPECT_FALSE(t.reclaim(5)) << "not tracked";
}

TEST(AppliedOffsetsTest, ApplyingAnUnknownRecordChangesNothing) {
  AppliedOffsets t;
  t.start(0, at(5));
  t.applied(0, 7);
  t.applied(2, 7);
  EXPECT_EQ(t.progress({{0, 5}}).at(0), at(5));
}

TEST(AppliedOffsetsTest, ClaimsOfAPartitionThatMovedMergeIntoWhatBothApplied) {
  // The old owner read up to 100 and still applies 90..99 (95 applied); the new owner started
  // at 100 and applied 100..119 and 125.
  const PartitionProgress old_owner = at(90, "95");
  const PartitionProgress new_owner = at(120, "125", 100);
  const PartitionProgress m = merge_claims(old_owner, new_owner);
  EXPECT_EQ(m, at(90, "95,100-119,125"));
  EXPECT_EQ(merge_claims(new_owner, old_owner), m);
  // Once the old owner is done, the claims join up.
  EXPECT_EQ(merge_claims(at(100), new_owner), at(120, "125"));
}

TEST(AppliedOffsetsTest, ProgressRoundTripsThroughAPositionAndMergesPerPartition) {
  data::DataPosition a, b;
  a.set_int("shuffle_buffer.window", 4);
  set_progress(a, "t.x", {{0, at(7, "9,11-12")}, {1, at(3)}});
  set_progress(b, "t.x", {{2, at(5, "", 4)}});
  b.set_int("stream_metrics.w1.trained", 12);
  EXPECT_EQ(a.get("kafka.t.x.0.applied"), "9,11-12");
  EXPECT_FALSE(a.has("kafka.t.x.1.applied"));
  EXPECT_EQ(offsets_of(a, "t.x"), (PartitionOffsets{{0, 7}, {1, 3}})) << "readers of offsets see low watermarks";
  const data::DataPosition parsed = data::DataPosition::parse(a.serialize());
  EXPECT_EQ(progress_in(parsed, "t.x"), (PartitionProgressMap{{0, at(7, "9,11-12")}, {1, at(3)}}));
  merge_claims(a, b);
  EXPECT_EQ(progress_in(a, "t.x"), (PartitionProgressMap{{0, at(7, "9,11-12")}, {1, at(3)}, {2, at(5, "", 4)}}));
  EXPECT_EQ(a.get_int("stream_metrics.w1.trained"), 12);
  EXPECT_TRUE(is_stream_field("stream_metrics.w1.trained"));
  EXPECT_TRUE(is_stream_field("kafka.t.x.0.applied"));
  EXPECT_FALSE(is_stream_field("shuffle_buffer.window"));
}

TEST(AppliedOffsetsTest, AppliedOffsetsBelowTheWatermarkOrWithoutOneAreCorruption) {
  data::DataPosition p;
  p.set_int("kafka.t.0", 7);
  p.set("kafka.t.0.applied", "5");
  EXPECT_THROW(progress_in(p, "t"), Corruption);
  data::DataPosition q;
  q.set("kafka.t.1.applied", "9");
  EXPECT_THROW(progress_in(q, "t"), Corruption);
  data::DataPosition r;
  r.set_int("kafka.t.0", 7);
  r.set("kafka.t.0.applied", "9-x");
  EXPECT_THROW(progress_in(r, "t"), Corruption);
}

}  // namespace
}  // namespace trib::stream
