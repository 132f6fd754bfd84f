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

}  // namespace
}  // namespace trib::stream
