// FanOut runs one task per server at once, round after round, and reports a task's failure.
#include "ps/fan_out.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "trib/core/error.h"

namespace trib::ps {
namespace {

TEST(FanOut, TasksRunAtTheSameTime) {
  FanOut fan(3);
  // Each task waits until all three have started: run one after another, they never would
  // (the wait's bound only keeps a broken FanOut from hanging the test).
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::vector<bool> saw_all(3, false);
  fan.run(3, [&](std::size_t i) {
    std::unique_lock lock(mu);
    ++started;
    cv.notify_all();
    saw_all[i] = cv.wait_for(lock, std::chrono::seconds(60), [&] { return started == 3; });
  });
  EXPECT_EQ(saw_all, (std::vector<bool>{true, true, true}));
}

TEST(FanOut, RoundsRepeatAndFewerTasksThanTheWidthRun) {
  FanOut fan(4);
  std::atomic<int> sum{0};
  for (int round = 0; round < 100; ++round) fan.run(1 + round % 4, [&](std::size_t i) { sum += static_cast<int>(i) + 1; });
  // Rounds of 1, 2, 3, 4 tasks, 25 times each: 25 * (1 + 3 + 6 + 10).
  EXPECT_EQ(sum.load(), 500);
}

TEST(FanOut, AFailingTaskIsRethrownAfterTheOthersFinish) {
  FanOut fan(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(fan.run(3,
                       [&](std::size_t i) {
                         if (i == 2) throw Unavailable("ps 2 is gone");
                         ++finished;
                       }),
               Unavailable);
  EXPECT_EQ(finished.load(), 2);
  fan.run(3, [&](std::size_t) { ++finished; });  // usable again
  EXPECT_EQ(finished.load(), 5);
  EXPECT_THROW(fan.run(4, [](std::size_t) {}), InvalidArgument);
}

}  // namespace
}  // namespace trib::ps
