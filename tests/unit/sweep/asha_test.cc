// ASHA's rungs and promotion rule, against hand-worked examples (Ray Tune's rule: continue
// when the metric reaches the (1 - 1/rf) percentile of the rung's earlier results).
#include <gtest/gtest.h>

#include "trib/core/error.h"
#include "trib/sweep/asha.h"

namespace trib::sweep {
namespace {

TEST(Asha, RungsAreGraceTimesPowersOfTheFactorBelowMax) {
  Asha a(1, 81, 3, true);
  EXPECT_EQ(a.rungs(), (std::vector<std::int64_t>{1, 3, 9, 27}));  // 81 is the end, no rung
  Asha b(100, 1000, 3, true);
  EXPECT_EQ(b.rungs(), (std::vector<std::int64_t>{100, 300, 900}));
  EXPECT_EQ(b.next_stop(0), 100);
  EXPECT_EQ(b.next_stop(100), 300);
  EXPECT_EQ(b.next_stop(900), 1000);
  EXPECT_EQ(b.max_steps(), 1000);
}

TEST(Asha, BadSettingsAreRefused) {
  EXPECT_THROW(Asha(0, 10, 3, true), InvalidArgument);
  EXPECT_THROW(Asha(11, 10, 3, true), InvalidArgument);
  EXPECT_THROW(Asha(1, 10, 1, true), InvalidArgument);
}

TEST(Asha, PercentileInterpolatesAsNumpy) {
  // numpy.percentile([0.5, 0.7, 0.6], 200/3) = 0.6 + (4/3 - 1) * 0.1
  EXPECT_NEAR(Asha::percentile({0.5, 0.7, 0.6}, 200.0 / 3), 0.63333333, 1e-7);
  EXPECT_DOUBLE_EQ(Asha::percentile({0.4}, 66.7), 0.4);
  EXPECT_DOUBLE_EQ(Asha::percentile({1, 2}, 50), 1.5);
}

TEST(Asha, HandWorkedPromotions) {
  Asha a(10, 90, 3, true);  // rungs 10, 30
  // Trial 0 is first at rung 10: nothing to compare with, it goes on.
  EXPECT_TRUE(a.on_rung(0, 10, 0.50));
  // Trial 1: cut-off = 67th percentile of {0.50} = 0.50; 0.40 < 0.50: stops.
  EXPECT_FALSE(a.on_rung(1, 10, 0.40));
  // Trial 2: cut-off over {0.40, 0.50}: 0.40 + 2/3 * 0.10 = 0.4667; 0.60 goes on.
  EXPECT_NEAR(*a.cutoff(10), 0.466667, 1e-6);
  EXPECT_TRUE(a.on_rung(2, 10, 0.60));
  // Trial 3: over {0.40, 0.50, 0.60}: position 4/3: 0.5333; 0.52 stops, although better
  // than two earlier trials: only the top third goes on.
  EXPECT_NEAR(*a.cutoff(10), 0.533333, 1e-6);
  EXPECT_FALSE(a.on_rung(3, 10, 0.52));
  // Rung 30 has its own records: trial 0 is first there.
  EXPECT_FALSE(a.cutoff(30).has_value());
  EXPECT_TRUE(a.on_rung(0, 30, 0.55));
  EXPECT_FALSE(a.on_rung(2, 30, 0.54));
}

TEST(Asha, LossIsMinimised) {
  Asha a(10, 90, 3, false);
  EXPECT_TRUE(a.on_rung(0, 10, 1.0));
  EXPECT_FALSE(a.on_rung(1, 10, 1.2));  // a larger loss is worse
  EXPECT_TRUE(a.on_rung(2, 10, 0.7));
}

TEST(Asha, ADivergedTrialStopsAndCountsAsWorst) {
  Asha a(10, 90, 3, true);
  EXPECT_TRUE(a.on_rung(0, 10, 0.3));
  EXPECT_FALSE(a.on_rung(1, 10, std::nan("")));
  // {-inf, 0.3}: cut-off = -inf + ... is -inf: everything finite goes on.
  EXPECT_TRUE(a.on_rung(2, 10, 0.1));
}

TEST(Asha, RecordedResultsCountAsLive) {
  Asha a(10, 90, 3, true), b(10, 90, 3, true);
  a.on_rung(0, 10, 0.5);
  a.on_rung(1, 10, 0.6);
  b.record(0, 10, 0.5);  // what --resume does with the log
  b.record(1, 10, 0.6);
  EXPECT_EQ(a.cutoff(10), b.cutoff(10));
  EXPECT_EQ(a.on_rung(2, 10, 0.55), b.on_rung(2, 10, 0.55));
}

}  // namespace
}  // namespace trib::sweep
