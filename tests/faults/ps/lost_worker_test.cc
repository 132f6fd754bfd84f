// Parameter servers go on without a lost worker (its connection closed) and re-admit it when
// it is relaunched: RELIABILITY.md row 1, at the level of one server.
#include <gtest/gtest.h>

#include "roster_server.h"

namespace trib::ps {
namespace {

using Server = testing::RosterServer;

TEST(PsLostWorker, SyncRoundInProgressClosesWithTheRemainingWorkers) {
  Server s(Mode::sync, 3);
  s.push(0, 0, 3.0f);
  s.push(1, 0, 6.0f);
  EXPECT_FALSE(s.pull(0, 1)) << "the round waits for worker 2";
  s.lose(2);
  ASSERT_TRUE(s.pull(0, 1)) << "worker 2's connection closed: the round closes with workers 0 and 1";
  EXPECT_FLOAT_EQ(s.pull(0, 1)->value, -4.5f) << "the average of the two, applied with lr 1";
  // The next rounds expect N-1.
  s.push(0, 1, 1.0f);
  EXPECT_FALSE(s.pull(0, 2));
  s.push(1, 1, 1.0f);
  ASSERT_TRUE(s.pull(0, 2));
  EXPECT_FLOAT_EQ(s.pull(0, 2)->value, -5.5f);
  EXPECT_EQ(s.server.stats().workers_lost, 1u);
}

TEST(PsLostWorker, SyncLossWithBackupWorkersStillNeedsOneContribution) {
  Server s(Mode::sync, 3, /*backup=*/1);
  s.lose(2);
  EXPECT_FALSE(s.pull(0, 1)) << "two workers left, one a backup: the round needs one push";
  s.push(1, 0, 2.0f);
  ASSERT_TRUE(s.pull(0, 1));
  EXPECT_FLOAT_EQ(s.pull(0, 1)->value, -2.0f);
}

TEST(PsLostWorker, ARelaunchedSyncWorkerResumesAtTheCurrentRoundAndCountsFromTheNext) {
  Server s(Mode::sync, 2);
  s.push(0, 0, 2.0f);
  s.push(1, 0, 2.0f);  // round 0 applied: -2
  s.push(0, 1, 2.0f);  // round 1 open
  s.lose(1);            // closes round 1 with worker 0 alone: -4
  s.push(0, 2, 2.0f);  // round 2 applied by worker 0 alone: -6
  s.push(0, 3, 2.0f);  // round 3: applied at once too (worker 1 is gone)
  s.relaunch(1);
  s.push(0, 4, 2.0f);  // round 4 in the making when worker 1 comes back... it is applied (N-1)
  auto read = s.pull(1, -1);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->step, 5) << "the relaunched worker starts at the current round";
  EXPECT_FLOAT_EQ(read->value, -10.0f) << "with the current values";
  s.push(0, 5, 2.0f);
  EXPECT_FALSE(s.pull(0, 6)) << "from the next round on it is counted again";
  s.push(1, 5, 4.0f);
  ASSERT_TRUE(s.pull(0, 6));
  EXPECT_FLOAT_EQ(s.pull(0, 6)->value, -13.0f);
  EXPECT_EQ(s.server.stats().workers_readmitted, 1u);
}

TEST(PsLostWorker, AWorkerRelaunchedDuringAnOpenRoundIsNotWaitedForUntilTheNext) {
  Server s(Mode::sync, 3);
  s.push(0, 0, 1.0f);
  s.lose(2);
  s.push(1, 0, 1.0f);  // round 0 closes with 0 and 1
  s.push(0, 1, 3.0f);  // round 1 open
  s.relaunch(2);
  ASSERT_TRUE(s.pull(2, -1));
  EXPECT_EQ(s.pull(2, -1)->step, 1);
  s.push(1, 1, 3.0f);
  EXPECT_TRUE(s.pull(0, 2)) << "round 1 closed without the re-admitted worker";
  s.push(0, 2, 0.0f);
  s.push(1, 2, 0.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "round 2 waits for it";
  s.push(2, 2, 0.0f);
  EXPECT_TRUE(s.pull(0, 3));
}

TEST(PsLostWorker, AsyncGoesOnAndARelaunchedWorkerResumesAfterItsLastPush) {
  Server s(Mode::async, 2);
  for (int step = 0; step < 3; ++step) s.push(1, step, 1.0f);
  s.lose(1);
  s.push(0, 0, 1.0f);
  ASSERT_TRUE(s.pull(0, 1));
  EXPECT_FLOAT_EQ(s.pull(0, 1)->value, -4.0f);
  s.relaunch(1);
  auto read = s.pull(1, -1);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->step, 3) << "one past its last applied push";
  EXPECT_FLOAT_EQ(read->value, -4.0f);
}

TEST(PsLostWorker, BoundedStalenessSkipsALostWorker) {
  Server s(Mode::bounded, 2, 0, /*staleness=*/2);
  for (int step = 0; step < 3; ++step) s.push(0, step, 0.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "3 steps ahead of worker 1, bound 2";
  s.lose(1);
  EXPECT_TRUE(s.pull(0, 3));
}

TEST(PsLostWorker, AnAveragingRoundClosesWithTheRemainingWorkers) {
  Server s(Mode::averaging, 2);
  s.push(0, 1, 4.0f);
  EXPECT_FALSE(s.pull(0, 1));
  s.lose(1);
  ASSERT_TRUE(s.pull(0, 1));
  EXPECT_FLOAT_EQ(s.pull(0, 1)->value, 4.0f);
}

TEST(PsLostWorker, ADoneWorkersClosedConnectionIsNoLoss) {
  Server s(Mode::sync, 2);
  s.send(1, testing::Request(proto::Type::done, 1));
  s.lose(1);
  EXPECT_EQ(s.server.stats().workers_lost, 0u);
}

TEST(PsLostWorker, AWorkerToldLostIsRefusedOnItsOldConnection) {
  Server s(Mode::async, 2);
  s.push(1, 0, 1.0f);
  s.server.worker_lost(1, 0);  // a loss that raises no generation floor
  EXPECT_THROW(s.push(1, 1, 1.0f), InvalidArgument);
  s.relaunch(1);
  EXPECT_NO_THROW(s.push(1, 1, 1.0f));
}

}  // namespace
}  // namespace trib::ps
