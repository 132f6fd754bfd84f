#include "trib/stream/offset_ranges.h"

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::stream {
namespace {

TEST(OffsetRangesTest, InsertsMergeTouchingAndOverlappingRanges) {
  OffsetRanges r;
  r.insert(5);
  r.insert(7);
  r.insert(9, 12);
  EXPECT_EQ(r.to_string(), "5,7,9-11");
  r.insert(6);  // joins 5 and 7
  r.insert(8);  // joins 5-7 and 9-11
  EXPECT_EQ(r.to_string(), "5-11");
  EXPECT_EQ(r.ranges().size(), 1u);
  r.insert(3, 20);
  EXPECT_EQ(r.to_string(), "3-19");
  EXPECT_EQ(r.count(), 17);
}

TEST(OffsetRangesTest, ContainsFirstGapAndEraseBelow) {
  OffsetRanges r = OffsetRanges::parse("2-4,8,10-12");
  EXPECT_FALSE(r.contains(1));
  EXPECT_TRUE(r.contains(2));
  EXPECT_TRUE(r.contains(4));
  EXPECT_FALSE(r.contains(5));
  EXPECT_TRUE(r.contains(12));
  EXPECT_FALSE(r.contains(13));
  EXPECT_EQ(r.first_gap(0), 0);
  EXPECT_EQ(r.first_gap(2), 5);
  EXPECT_EQ(r.first_gap(3), 5);
  EXPECT_EQ(r.first_gap(8), 9);
  EXPECT_EQ(r.first_gap(11), 13);
  r.erase_below(3);
  EXPECT_EQ(r.to_string(), "3-4,8,10-12");
  r.erase_below(11);
  EXPECT_EQ(r.to_string(), "11-12");
  r.erase_below(100);
  EXPECT_TRUE(r.empty());
}

TEST(OffsetRangesTest, TextRoundTripsAndBadTextIsCorruption) {
  const OffsetRanges r = OffsetRanges::parse("0,3-5,9000000000");
  EXPECT_EQ(OffsetRanges::parse(r.to_string()), r);
  EXPECT_TRUE(OffsetRanges::parse("").empty());
  for (const char* bad : {"x", "5,3", "3-1", "1,,2", "-4", "2-", "3-5,4"})
    EXPECT_THROW(OffsetRanges::parse(bad), Corruption) << bad;
}

}  // namespace
}  // namespace trib::stream
