// Non-finite gradients at a parameter server (RELIABILITY.md row 12): a sync round holding
// one applies nothing and every worker of it is told; async servers drop it and count it.
#include <gtest/gtest.h>

#include "roster_server.h"

namespace trib::ps {
namespace {

using Server = testing::RosterServer;

TEST(PsNonFinite, ASyncRoundWithANonFinitePushIsSkippedForEveryWorker) {
  Server s(Mode::sync, 2);
  s.push(0, 0, 2.0f);
  s.push_nonfinite(1, 0);
  for (int w = 0; w < 2; ++w) {
    auto r = s.pull(w, 1);
    ASSERT_TRUE(r) << "worker " << w;
    EXPECT_TRUE(r->skipped) << "worker " << w << " is told the round was skipped";
    EXPECT_FLOAT_EQ(r->value, 0.0f) << "nothing was applied";
  }
  EXPECT_EQ(s.server.stats().skipped_rounds, 1u);
  EXPECT_EQ(s.server.stats().applied, 0u);
  // The same step again, now finite: applied, and nobody is told "skipped".
  s.push(0, 0, 2.0f);
  s.push(1, 0, 4.0f);
  auto r = s.pull(0, 1);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->skipped);
  EXPECT_FLOAT_EQ(r->value, -3.0f);
  EXPECT_EQ(s.pull(1, -1)->step, 1);
}

TEST(PsNonFinite, AsyncDropsTheNonFinitePushAndCountsIt) {
  Server s(Mode::async, 2);
  s.push(0, 0, 1.0f);
  s.push_nonfinite(1, 0);
  auto r = s.pull(0, 1);
  ASSERT_TRUE(r);
  EXPECT_FLOAT_EQ(r->value, -1.0f);
  EXPECT_EQ(s.server.stats().dropped_nonfinite, 1u);
  EXPECT_EQ(s.server.stats().applied, 1u);
  EXPECT_EQ(s.pull(1, -1)->step, 0) << "the worker's clock does not move: it takes the step again";
}

TEST(PsNonFinite, ANonFinitePushWithValuesIsRefused) {
  Server s(Mode::async, 2);
  testing::Request r(proto::Type::push, 1, 0);
  net::Message m = r.message(Tensor::full(Shape{4}, 1.0f));
  proto::Body b = proto::decode(m.body);
  b.header.flags = proto::kFlagNonFinite;
  m.body = proto::encode(b);
  EXPECT_THROW(s.server.handle(std::move(m), s.peer(1)), InvalidArgument);
  EXPECT_EQ(s.server.stats().refused, 1u);
}

}  // namespace
}  // namespace trib::ps
