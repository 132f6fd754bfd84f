#include "trib/stream/stream_position.h"

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

TEST(StreamPositionTest, OffsetsRoundTripThroughAPositionNextToOtherFields) {
  data::DataPosition position;
  position.set_int("shuffle_buffer.window", 3);
  set_offsets(position, "card.events", {{0, 17}, {11, 4}});
  EXPECT_EQ(position.get_int("kafka.card.events.11"), 4);
  const data::DataPosition parsed = data::DataPosition::parse(position.serialize());
  EXPECT_EQ(offsets_of(parsed, "card.events"), (PartitionOffsets{{0, 17}, {11, 4}}));
  EXPECT_TRUE(offsets_of(data::DataPosition(), "card.events").empty());
}

TEST(StreamPositionTest, APositionOfAnotherTopicIsRejected) {
  data::DataPosition position;
  set_offsets(position, "payments", {{0, 1}});
  try {
    offsets_of(position, "transactions");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("payments"), std::string::npos) << e.what();
  }
}

TEST(StreamPositionTest, MalformedOffsetsAreCorruption) {
  data::DataPosition position;
  position.set("kafka.t.0", "x12");
  EXPECT_THROW(offsets_of(position, "t"), Corruption);
}

TEST(StreamPositionTest, MergingWorkersPositionsRefusesAPartitionClaimedTwice) {
  data::DataPosition a, b, c;
  set_offsets(a, "t", {{0, 5}});
  set_offsets(b, "t", {{1, 7}});
  set_offsets(c, "t", {{1, 9}});
  merge_offsets(a, b);
  EXPECT_EQ(offsets_of(a, "t"), (PartitionOffsets{{0, 5}, {1, 7}}));
  EXPECT_THROW(merge_offsets(a, c), InvalidArgument);
}

// A worker's cursors (ps::DataCursors): an older one is covered by a newer one, not the other
// way; a replay in another order is judged record by record; the merge keeps both lineages.
data::DataPosition progress(std::int64_t next, const std::string& applied, std::int64_t other_next = 10) {
  data::DataPosition p;
  set_progress(p, "t",
               {{0, {next, applied.empty() ? OffsetRanges() : OffsetRanges::parse(applied), 0}}, {3, {other_next, {}, 0}}});
  return p;
}

TEST(StreamPositionTest, ANewerCursorCoversAnOlderOneAndNotTheOtherWay) {
  const data::DataPosition older = progress(5, "7"), newer = progress(6, "7-9");
  EXPECT_TRUE(progress_covers(newer, older));
  EXPECT_FALSE(progress_covers(older, newer));
  EXPECT_TRUE(progress_covers(newer, newer));
  EXPECT_FALSE(progress_covers(newer, progress(5, "7", 11))) << "another partition further on";
  EXPECT_FALSE(progress_covers(newer, data::DataPosition())) << "a cursor without progress covers nothing";
  data::DataPosition one_partition;
  set_progress(one_partition, "t", {{0, {4, {}, 0}}});
  EXPECT_FALSE(progress_covers(one_partition, older)) << "partition 3 not held";
}

TEST(StreamPositionTest, EncodedCursorsCompareAndMergeRecordByRecord) {
  // Server A applied record 6 of partition 0; the relaunched worker read 7 first instead.
  const std::string a = progress(7, "").serialize(), replay_7 = progress(6, "7").serialize();
  EXPECT_FALSE(cursor_covers(a, replay_7));
  const std::string merged = merge_cursors(a, replay_7);
  EXPECT_TRUE(cursor_covers(merged, progress(8, "").serialize())) << "records 6 and 7: its replay of 6 is covered";
  EXPECT_FALSE(cursor_covers(merged, progress(9, "").serialize()));
  EXPECT_FALSE(cursor_covers("", a)) << "nothing kept yet";
  EXPECT_EQ(merge_cursors("", a), a);
  EXPECT_THROW(cursor_covers(a, "not a position"), InvalidArgument);
  data::DataPosition bad;
  bad.set("kafka.t.0", "x");
  EXPECT_THROW(cursor_covers(a, bad.serialize()), InvalidArgument);
}

}  // namespace
}  // namespace trib::stream
