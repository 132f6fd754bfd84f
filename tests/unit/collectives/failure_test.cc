// A rank that dies mid-collective: every other rank fails within the deadline with an error
// naming it, and nothing hangs (every run here has a hard deadline).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "collectives/group_core.h"
#include "trib/collectives/allgather.h"
#include "trib/collectives/allreduce.h"
#include "trib/collectives/barrier.h"
#include "trib/collectives/broadcast.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using ::testing::HasSubstr;
using testing::ThreadGroup;
using testing::what;
using Clock = std::chrono::steady_clock;

// Rank `victim` drops all its connections `after` into a collective of the others.
void expect_named_failure(int n, int victim, const std::function<void(Group&)>& collective) {
  ThreadGroup g(n, GroupOptions{.op_timeout = std::chrono::seconds(20), .segment_bytes = 4096});
  const auto start = Clock::now();
  auto errors = g.run(
      [&](int r, Group& group) {
        if (r == victim) {
          std::thread crash([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            group.core().shut_down();  // as if the process died: its connections close
          });
          try {
            collective(group);
          } catch (const Error&) {
          }
          crash.join();
          return;
        }
        collective(group);
      },
      std::chrono::seconds(10));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " did not notice";
    EXPECT_THROW(std::rethrow_exception(errors[static_cast<std::size_t>(r)]), Unavailable);
    EXPECT_THAT(what(errors[static_cast<std::size_t>(r)]),
                HasSubstr(fmt::format("rank {} (worker {} at coll:", victim, victim)))
        << "rank " << r << ": " << what(errors[static_cast<std::size_t>(r)]);
    EXPECT_THAT(what(errors[static_cast<std::size_t>(r)]), HasSubstr("is unreachable"));
    if (std::getenv("TRIB_SHOW_ERRORS")) std::fprintf(stderr, "rank %d: %s\n", r, what(errors[static_cast<std::size_t>(r)]).c_str());
  }
}

TEST(Failure, RankLostDuringRingAllreduce) {
  // A tensor big enough that the loss lands mid-transfer; repeated to be sure.
  expect_named_failure(4, 2, [](Group& group) {
    Tensor t = Tensor::full(Shape{1 << 20}, 1.0f);
    for (int i = 0; i < 1000; ++i) allreduce(group, t, {.algorithm = AllreduceAlgorithm::ring});
  });
}

TEST(Failure, RankLostDuringDirectAllreduceBroadcastAllgatherBarrier) {
  expect_named_failure(3, 0, [](Group& group) {
    Tensor t = Tensor::full(Shape{100}, 1.0f);
    for (int i = 0; i < 100000; ++i) allreduce(group, t, {.algorithm = AllreduceAlgorithm::direct});
  });
  expect_named_failure(3, 1, [](Group& group) {
    Tensor t = Tensor::full(Shape{100000}, 1.0f);
    for (int i = 0; i < 100000; ++i) broadcast(group, t);
  });
  expect_named_failure(5, 4, [](Group& group) {
    for (int i = 0; i < 100000; ++i) allgather(group, Tensor::full(Shape{1000}, 1.0f));
  });
  expect_named_failure(5, 3, [](Group& group) {
    for (int i = 0; i < 1000000; ++i) barrier(group);
  });
}

TEST(Failure, ARankThatNeverJoinsFailsTheOthersAtTheOperationDeadline) {
  ThreadGroup g(3, GroupOptions{.op_timeout = std::chrono::milliseconds(300)});
  auto errors = g.run([&](int r, Group& group) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      return;
    }
    allreduce(group, Tensor::full(Shape{10}, 1.0f));
  });
  for (int r : {0, 2}) {
    EXPECT_THROW(std::rethrow_exception(errors[static_cast<std::size_t>(r)]), Timeout);
    EXPECT_THAT(what(errors[static_cast<std::size_t>(r)]), HasSubstr("rank 1")) << what(errors[static_cast<std::size_t>(r)]);
  }
}

TEST(Failure, ClosingAGroupFailsLaterCallsOnItsPeers) {
  ThreadGroup g(2);
  g.groups[1].reset();
  Tensor t = Tensor::full(Shape{10}, 1.0f);
  try {
    testing::within(std::chrono::seconds(5), [&] { allreduce(g[0], t); });
    ADD_FAILURE() << "allreduce with a departed peer succeeded";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("allreduce: rank 1 (worker 1 at coll:"));
  }
}

}  // namespace
}  // namespace trib::collectives
