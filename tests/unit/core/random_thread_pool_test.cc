#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "trib/core/random.h"
#include "trib/core/thread_pool.h"

namespace trib {
namespace {

TEST(Rng, SameSeedSameNumbersEverywhere) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
  EXPECT_EQ(Rng::block(0, 0), Rng::block(0, 0));
  EXPECT_NE(Rng::block(0, 0), Rng::block(1, 0));
  EXPECT_NE(Rng::block(0, 0), Rng::block(0, 1));
}

TEST(Rng, KnownAnswerPhilox4x32_10) {
  // Random123's published known-answer test for philox4x32-10 with zero counter and key.
  auto b = Rng::block(0, 0);
  EXPECT_EQ(b[0], 0x6627e8d5u);
  EXPECT_EQ(b[1], 0xe169c58du);
  EXPECT_EQ(b[2], 0xbc57ac4cu);
  EXPECT_EQ(b[3], 0x9b00dbd8u);
}

TEST(Rng, StateRoundTripResumesMidBlock) {
  Rng a(7);
  a.next_u32();
  a.next_u32();
  Rng b(a.state());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
}

TEST(Rng, DistributionsLookRight) {
  Rng r(3);
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    float x = r.normal();
    sum += x;
    sq += double(x) * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sq / n, 1.0, 0.05);
  for (int i = 0; i < 1000; ++i) {
    float u = r.uniform();
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    EXPECT_LT(r.below(7), 7u);
  }
  EXPECT_NE(r.fork(1).next_u32(), r.fork(2).next_u32());
}

TEST(ThreadPool, RunsEveryTask) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(3);
    EXPECT_EQ(pool.size(), 3);
    for (int i = 0; i < 1000; ++i) pool.submit([&] { count++; });
  }
  EXPECT_EQ(count.load(), 1000);
  EXPECT_GE(hardware_threads(), 1);
}

}  // namespace
}  // namespace trib
