// Broadcast, allgather and barrier on N ranks as threads.
#include <gtest/gtest.h>

#include <atomic>

#include "collectives/named_tensors.h"
#include "trib/collectives/allgather.h"
#include "trib/collectives/barrier.h"
#include "trib/collectives/broadcast.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using testing::ThreadGroup;

class OpsOnRanks : public ::testing::TestWithParam<int> {};

TEST_P(OpsOnRanks, BroadcastCopiesTheRootsTensorToEveryRank) {
  const int n = GetParam();
  ThreadGroup g(n, GroupOptions{.segment_bytes = 1024});
  for (int root : {0, n - 1}) {
    for (std::int64_t size : {0, 1, 1009, 65537}) {
      std::vector<Tensor> t;
      for (int r = 0; r < n; ++r) t.push_back(Tensor::full(Shape{size}, static_cast<float>(r == root ? 7 : -1)));
      for (std::int64_t i = 0; i < size; ++i) t[static_cast<std::size_t>(root)].data<float>()[i] = static_cast<float>(i);
      g.run_ok([&](int r, Group& group) { broadcast(group, t[static_cast<std::size_t>(r)], {.root = root}); });
      for (int r = 0; r < n; ++r) {
        for (std::int64_t i = 0; i < size; ++i) {
          ASSERT_EQ(t[static_cast<std::size_t>(r)].data<float>()[i], static_cast<float>(i)) << "rank " << r;
        }
      }
    }
  }
}

TEST_P(OpsOnRanks, AllgatherConcatenatesInRankOrder) {
  const int n = GetParam();
  ThreadGroup g(n, GroupOptions{.segment_bytes = 256});
  std::vector<Tensor> out(static_cast<std::size_t>(n));
  g.run_ok([&](int r, Group& group) {
    Tensor mine = Tensor::empty(DType::i64, Shape{100, 3});
    for (std::int64_t i = 0; i < mine.numel(); ++i) mine.data<std::int64_t>()[i] = r * 1000 + i;
    out[static_cast<std::size_t>(r)] = allgather(group, mine);
  });
  for (int r = 0; r < n; ++r) {
    const Tensor& o = out[static_cast<std::size_t>(r)];
    ASSERT_EQ(o.shape(), (Shape{100 * n, 3}));
    for (int from = 0; from < n; ++from) {
      for (std::int64_t i = 0; i < 300; ++i) ASSERT_EQ(o.data<std::int64_t>()[from * 300 + i], from * 1000 + i);
    }
  }
}

TEST_P(OpsOnRanks, AllgatherWithDifferentRowCounts) {
  const int n = GetParam();
  ThreadGroup g(n, GroupOptions{.segment_bytes = 64});
  std::vector<Tensor> out(static_cast<std::size_t>(n));
  g.run_ok([&](int r, Group& group) {
    Tensor mine = Tensor::full(Shape{r * 5, 2}, static_cast<float>(r));  // rank 0 sends no rows
    out[static_cast<std::size_t>(r)] = allgather(group, mine, {.same_shape = false});
  });
  const std::int64_t rows = 5 * n * (n - 1) / 2;
  for (int r = 0; r < n; ++r) {
    const Tensor& o = out[static_cast<std::size_t>(r)];
    ASSERT_EQ(o.shape(), (Shape{rows, 2}));
    std::int64_t at = 0;
    for (int from = 0; from < n; ++from) {
      for (std::int64_t i = 0; i < from * 10; ++i) ASSERT_EQ(o.data<float>()[at++], static_cast<float>(from));
    }
  }
}

// Bytes of any length up to the limit, in rank order; the slot grows alike on every rank when
// one rank's bytes do not fit (5000 bytes: 8192), and a length over the limit fails naming it.
TEST_P(OpsOnRanks, AllgatherBytesGrowsItsSlotAlikeOnEveryRank) {
  const int n = GetParam();
  ThreadGroup g(n, GroupOptions{.segment_bytes = 256});
  auto bytes_of = [](int r) { return std::string(static_cast<std::size_t>(r == 1 ? 5000 : r * 7), char('a' + r)); };
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(n)), again(static_cast<std::size_t>(n));
  std::vector<std::size_t> slots(static_cast<std::size_t>(n));
  g.run_ok([&](int r, Group& group) {
    std::size_t slot = 1024;
    out[static_cast<std::size_t>(r)] = allgather_bytes(group, bytes_of(r), 1 << 20, slot);
    again[static_cast<std::size_t>(r)] = allgather_bytes(group, std::to_string(r), 1 << 20, slot);
    slots[static_cast<std::size_t>(r)] = slot;
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(out[static_cast<std::size_t>(r)].size(), static_cast<std::size_t>(n));
    for (int from = 0; from < n; ++from) {
      EXPECT_EQ(out[static_cast<std::size_t>(r)][static_cast<std::size_t>(from)], bytes_of(from));
      EXPECT_EQ(again[static_cast<std::size_t>(r)][static_cast<std::size_t>(from)], std::to_string(from));
    }
    EXPECT_EQ(slots[static_cast<std::size_t>(r)], n > 1 ? 8192u : 1024u);
  }
  std::size_t slot = 16;
  ThreadGroup one(1);
  one.run_ok([&](int, Group& group) { EXPECT_THROW(allgather_bytes(group, std::string(100, 'x'), 64, slot), InvalidArgument); });
}

TEST_P(OpsOnRanks, AllgatherOfScalars) {
  const int n = GetParam();
  ThreadGroup g(n);
  std::vector<Tensor> out(static_cast<std::size_t>(n));
  g.run_ok([&](int r, Group& group) { out[static_cast<std::size_t>(r)] = allgather(group, Tensor::scalar(float(r))); });
  ASSERT_EQ(out[0].shape(), (Shape{n}));
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[0].data<float>()[r], static_cast<float>(r));
}

TEST_P(OpsOnRanks, NoRankLeavesTheBarrierBeforeAllHaveEntered) {
  const int n = GetParam();
  ThreadGroup g(n);
  std::atomic<int> entered{0};
  std::atomic<bool> early{false};
  g.run_ok([&](int r, Group& group) {
    for (int round = 0; round < 5; ++round) {
      // Late arrivals: a rank that left early would see fewer than n entries.
      std::this_thread::sleep_for(std::chrono::milliseconds(r == round % n ? 20 : 0));
      entered++;
      barrier(group);
      if (entered.load() < n * (round + 1)) early = true;
      barrier(group);
    }
  });
  EXPECT_FALSE(early.load());
}

INSTANTIATE_TEST_SUITE_P(Ranks, OpsOnRanks, ::testing::Values(1, 2, 3, 5, 8));

}  // namespace
}  // namespace trib::collectives
