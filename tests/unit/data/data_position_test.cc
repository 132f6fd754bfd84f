#include "trib/data/data_position.h"

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::data {
namespace {

TEST(DataPositionTest, RoundTripsThroughBytes) {
  DataPosition p;
  p.set_int("epoch", 3);
  p.set_int("cursor", -1);
  p.set_uint("seed", 18446744073709551615ull);
  p.set("blob", std::string("a\nb\0c 9\n", 8));  // newlines and NULs survive
  DataPosition q = DataPosition::parse(p.serialize());
  EXPECT_EQ(p, q);
  EXPECT_EQ(q.get_int("epoch"), 3);
  EXPECT_EQ(q.get_uint("seed"), 18446744073709551615ull);
  EXPECT_EQ(q.to_string(), "blob=<8 bytes> cursor=-1 epoch=3 seed=18446744073709551615");
}

TEST(DataPositionTest, MissingAndNonNumericFieldsAreNamed) {
  DataPosition p;
  p.set("epoch", "three");
  EXPECT_THROW(p.get("cursor"), NotFound);
  try {
    p.get_int("epoch");
    FAIL();
  } catch (const Corruption& e) {
    EXPECT_STREQ(e.what(), "data position field 'epoch' should be an integer, got 'three'");
  }
}

TEST(DataPositionTest, RejectsDamagedBytes) {
  DataPosition p;
  p.set_int("epoch", 12345);
  std::string bytes = p.serialize();
  EXPECT_THROW(DataPosition::parse("something else"), Corruption);
  EXPECT_THROW(DataPosition::parse(bytes.substr(0, bytes.size() - 3)), Corruption);
  std::string inflated = bytes;
  inflated.replace(inflated.find("epoch 5"), 7, "epoch 999999999999");
  EXPECT_THROW(DataPosition::parse(inflated), Corruption);
}

}  // namespace
}  // namespace trib::data
