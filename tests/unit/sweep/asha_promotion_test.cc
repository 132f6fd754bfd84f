// ASHA's promotion rule (Li et al. 2018, Algorithm 2), against a hand-worked run of it: a
// free slot promotes the best not-yet-promoted trial among the top floor(n / eta) of the
// highest rung that has one; otherwise a new trial starts (nothing to promote).
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "trib/sweep/asha.h"

namespace trib::sweep {
namespace {

using Promotion = std::optional<std::pair<int, std::int64_t>>;

Promotion at(int trial, std::int64_t rung) { return std::make_pair(trial, rung); }

TEST(AshaPromotion, HandWorkedRunOfThePapersGetJob) {
  Asha a(1, 27, 3, true);  // rungs 1, 3, 9; eta 3
  EXPECT_EQ(a.next_promotion(), std::nullopt);  // nothing recorded: start a new trial
  a.record(0, 1, 0.5);
  a.record(1, 1, 0.7);
  EXPECT_EQ(a.next_promotion(), std::nullopt);  // n = 2: floor(2/3) = 0, nobody is in the top third
  a.record(2, 1, 0.6);
  EXPECT_EQ(a.next_promotion(), at(1, 1));  // n = 3: the top 1 is trial 1 (0.7)
  a.mark_promoted(1, 1);
  EXPECT_EQ(a.next_promotion(), std::nullopt);  // the top 1 is promoted already
  a.record(3, 1, 0.9);
  a.record(4, 1, 0.2);
  a.record(5, 1, 0.65);
  // n = 6: the top 2 are trials 3 (0.9) and 1 (0.7, promoted): trial 3.
  EXPECT_EQ(a.next_promotion(), at(3, 1));
  a.mark_promoted(3, 1);
  a.record(1, 3, 0.8);
  a.record(3, 3, 0.85);
  EXPECT_EQ(a.next_promotion(), std::nullopt);  // rung 3: n = 2, none; rung 1: its top 2 promoted
  a.record(6, 1, 0.95);
  a.record(7, 1, 0.99);
  // n = 8 at rung 1: top 2 = trials 7 and 6, neither promoted: the better, 7.
  EXPECT_EQ(a.next_promotion(), at(7, 1));
  a.mark_promoted(7, 1);
  a.record(7, 3, 0.82);
  // Rung 3 now has n = 3: its top 1 is trial 3 (0.85); the highest rung goes first, before
  // trial 6 waiting at rung 1.
  EXPECT_EQ(a.next_promotion(), at(3, 3));
  a.mark_promoted(3, 3);
  EXPECT_EQ(a.next_promotion(), at(6, 1));  // then rung 1's next in its top 2
  a.mark_promoted(6, 1);
  EXPECT_EQ(a.next_promotion(), std::nullopt);
  EXPECT_TRUE(a.promoted(3, 3));
  EXPECT_FALSE(a.promoted(0, 1));
}

TEST(AshaPromotion, TiesGoToTheLowestIdAndALossIsMinimised) {
  Asha a(1, 27, 3, false);
  a.record(5, 1, 0.3);
  a.record(2, 1, 0.3);
  a.record(9, 1, 0.9);
  EXPECT_EQ(a.next_promotion(), at(2, 1));  // 0.3 is the smaller loss; of 2 and 5, the lower id
}

TEST(AshaPromotion, ADivergedTrialIsTheWorst) {
  Asha a(1, 27, 3, true);
  a.record(0, 1, std::nan(""));
  a.record(1, 1, 0.1);
  a.record(2, 1, 0.05);
  EXPECT_EQ(a.next_promotion(), at(1, 1));
  a.mark_promoted(1, 1);
  for (int i = 3; i < 6; ++i) a.record(i, 1, 0.01);
  EXPECT_EQ(a.next_promotion(), at(2, 1));  // n = 6, top 2: trials 1 and 2, never the NaN
}

TEST(AshaPromotion, TheStoppingRulesContinuationsCountAsPromoted) {
  Asha a(1, 27, 3, true);
  EXPECT_TRUE(a.on_rung(0, 1, 0.5));
  EXPECT_TRUE(a.promoted(0, 1));
  EXPECT_FALSE(a.on_rung(1, 1, 0.4));
  EXPECT_FALSE(a.promoted(1, 1));
}

TEST(AshaPromotion, RuleNames) {
  EXPECT_STREQ(rule_name(AshaRule::stopping), "stopping");
  EXPECT_STREQ(rule_name(AshaRule::promotion), "promotion");
}

}  // namespace
}  // namespace trib::sweep
