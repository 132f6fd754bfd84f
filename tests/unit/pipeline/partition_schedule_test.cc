#include <gtest/gtest.h>

#include "trib/core/error.h"
#include "trib/pipeline/partition.h"
#include "trib/pipeline/schedule.h"

namespace trib::pipeline {
namespace {

using config::PipelineSchedule;

TEST(Partition, EvenSplitGivesEarlierStagesTheRemainder) {
  Partition p = even_partition(5, 3);
  EXPECT_EQ(p.to_string(), "0-1,2-3,4-4");
  EXPECT_EQ(Partition::parse(p.to_string()), p);
}

TEST(Partition, MoreStagesThanLayersIsRefused) {
  try {
    even_partition(2, 3);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("3 stage(s) for a model of 2 layer(s)"), std::string::npos) << e.what();
  }
}

TEST(Partition, ManualStagesCarryForward) {
  EXPECT_EQ(manual_partition({-1, -1, 1, -1, 2}, 3).to_string(), "0-1,2-3,4-4");
}

TEST(Partition, ManualStagesOutOfOrderNameTheLayer) {
  try {
    manual_partition({0, 1, 0}, 2);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("layer 2 has stage 0 after a layer of stage 1"), std::string::npos) << e.what();
  }
}

TEST(Partition, ManualStagesSkippingOneNameIt) {
  EXPECT_THROW(manual_partition({0, 2, 2}, 3), InvalidArgument);
}

TEST(Partition, ParseRefusesGaps) { EXPECT_THROW(Partition::parse("0-1,3-4"), InvalidArgument); }

TEST(Schedule, GPipeRunsEveryForwardFirst) {
  auto t = stage_tasks(PipelineSchedule::gpipe, 1, 3, 3);
  std::vector<Task> want{{Pass::forward, 0}, {Pass::forward, 1}, {Pass::forward, 2},
                         {Pass::backward, 0}, {Pass::backward, 1}, {Pass::backward, 2}};
  EXPECT_EQ(t, want);
  EXPECT_EQ(max_in_flight(t), 3);
}

TEST(Schedule, OneFOneBWarmsUpThenAlternates) {
  auto t = stage_tasks(PipelineSchedule::one_f_one_b, 0, 3, 4);
  std::vector<Task> want{{Pass::forward, 0},  {Pass::forward, 1},  {Pass::forward, 2}, {Pass::backward, 0},
                         {Pass::forward, 3},  {Pass::backward, 1}, {Pass::backward, 2}, {Pass::backward, 3}};
  EXPECT_EQ(t, want);
  for (int s = 0; s < 3; ++s) EXPECT_EQ(max_in_flight(stage_tasks(PipelineSchedule::one_f_one_b, s, 3, 8)), 3 - s);
  // The last stage runs each backward right after its forward.
  EXPECT_EQ(max_in_flight(stage_tasks(PipelineSchedule::one_f_one_b, 2, 3, 8)), 1);
}

TEST(Schedule, IdealBubble) { EXPECT_DOUBLE_EQ(ideal_bubble(4, 8), 3.0 / 11.0); }

}  // namespace
}  // namespace trib::pipeline
