// Allreduce on N ranks as threads, against a naive sum: integers exactly, floats within a
// tolerance, every rank bit-identical to every other.
#include <gtest/gtest.h>

#include <cmath>

#include "trib/collectives/allreduce.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using testing::ThreadGroup;

// Rank r's element i: varied, exactly representable values, different on every rank.
template <typename T>
T value(int rank, std::int64_t i) {
  return static_cast<T>((i * 7 + rank * 13) % 101 - 50) + static_cast<T>(rank) / T(4);
}

template <typename T>
Tensor input(int rank, std::int64_t n) {
  Tensor t = Tensor::empty(dtype_of<T>(), Shape{n});
  T* p = t.data<T>();
  for (std::int64_t i = 0; i < n; ++i) p[i] = value<T>(rank, i);
  return t;
}

template <typename T>
void check_sum(int n_ranks, std::int64_t n, AllreduceOptions options, GroupOptions base = {}) {
  ThreadGroup g(n_ranks, base);
  std::vector<Tensor> tensors;
  for (int r = 0; r < n_ranks; ++r) tensors.push_back(input<T>(r, n));
  g.run_ok([&](int r, Group& group) { allreduce(group, tensors[static_cast<std::size_t>(r)], options); });
  for (std::int64_t i = 0; i < n; ++i) {
    double expect = 0;
    for (int r = 0; r < n_ranks; ++r) expect += static_cast<double>(value<T>(r, i));
    if (options.average) expect /= n_ranks;
    const T got = tensors[0].data<T>()[i];
    if constexpr (std::is_integral_v<T>) {
      ASSERT_EQ(got, static_cast<T>(expect)) << "element " << i;
    } else {
      ASSERT_NEAR(got, expect, 1e-4 * (1 + std::abs(expect))) << "element " << i;
    }
    for (int r = 1; r < n_ranks; ++r) {
      ASSERT_EQ(std::memcmp(&tensors[static_cast<std::size_t>(r)].data<T>()[i], &got, sizeof(T)), 0)
          << "rank " << r << " differs from rank 0 at element " << i;
    }
  }
}

class AllreduceSizes : public ::testing::TestWithParam<std::tuple<int, std::int64_t>> {};

TEST_P(AllreduceSizes, FloatRingMatchesNaiveSum) {
  auto [ranks, n] = GetParam();
  GroupOptions small_segments;
  small_segments.segment_bytes = 4096;  // many segments even for small tensors
  check_sum<float>(ranks, n, {.algorithm = AllreduceAlgorithm::ring}, small_segments);
}

TEST_P(AllreduceSizes, FloatDirectMatchesNaiveSum) {
  auto [ranks, n] = GetParam();
  GroupOptions small_segments;
  small_segments.segment_bytes = 4096;  // pipelined in many segments
  check_sum<float>(ranks, n, {.algorithm = AllreduceAlgorithm::direct}, small_segments);
}

TEST_P(AllreduceSizes, IntegersAreExact) {
  auto [ranks, n] = GetParam();
  check_sum<std::int32_t>(ranks, n, {});
  check_sum<std::int64_t>(ranks, n, {.algorithm = AllreduceAlgorithm::ring});
}

TEST_P(AllreduceSizes, AverageDividesBySize) {
  auto [ranks, n] = GetParam();
  check_sum<float>(ranks, n, {.average = true});
}

INSTANTIATE_TEST_SUITE_P(RanksAndSizes, AllreduceSizes,
                         ::testing::Combine(::testing::Range(1, 9),
                                            ::testing::Values<std::int64_t>(0, 1, 7, 1009, 65537)));

TEST(Allreduce, AutomaticPicksDirectForSmallAndRingForLarge) {
  ThreadGroup three(3), two(2);
  Tensor small = Tensor::zeros(DType::f32, Shape{16});
  Tensor large = Tensor::zeros(DType::f32, Shape{1 << 20});
  EXPECT_EQ(choose_allreduce_algorithm(three[0], small, {}), AllreduceAlgorithm::direct);
  EXPECT_EQ(choose_allreduce_algorithm(three[0], large, {}), AllreduceAlgorithm::ring);
  EXPECT_EQ(choose_allreduce_algorithm(two[0], large, {}), AllreduceAlgorithm::ring);
  EXPECT_EQ(choose_allreduce_algorithm(two[0], small, {.compression = Compression::bf16}), AllreduceAlgorithm::direct);
}

TEST(Allreduce, ManyOperationsInARowKeepTheirPiecesApart) {
  ThreadGroup g(3, GroupOptions{.segment_bytes = 1024});
  g.run_ok([&](int r, Group& group) {
    for (int k = 0; k < 30; ++k) {
      Tensor t = Tensor::full(Shape{1000 + k * 37}, static_cast<float>(r + k));
      allreduce(group, t, {.algorithm = k % 2 ? AllreduceAlgorithm::ring : AllreduceAlgorithm::direct});
      const float expect = static_cast<float>(3 * k + 0 + 1 + 2);
      ASSERT_EQ(t.data<float>()[0], expect);
      ASSERT_EQ(t.data<float>()[t.numel() - 1], expect);
    }
  });
}

}  // namespace
}  // namespace trib::collectives
