// 64 MiB allreduces on a few group sizes (threads, in-process transport), against a naive
// sum: exact, since the values are small integers.
#include <gtest/gtest.h>

#include "trib/collectives/allreduce.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using testing::ThreadGroup;

template <typename T>
void check_64mib(int n) {
  const std::int64_t count = (std::int64_t{64} << 20) / static_cast<std::int64_t>(sizeof(T));
  ThreadGroup g(n);
  std::vector<Tensor> tensors;
  for (int r = 0; r < n; ++r) {
    Tensor t = Tensor::empty(dtype_of<T>(), Shape{count});
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < count; ++i) p[i] = static_cast<T>((i + r) % 64);
    tensors.push_back(t);
  }
  g.run_ok([&](int r, Group& group) { allreduce(group, tensors[static_cast<std::size_t>(r)]); },
           std::chrono::seconds(60));
  for (int r = 0; r < n; ++r) {
    const T* p = tensors[static_cast<std::size_t>(r)].data<T>();
    for (std::int64_t i = 0; i < count; ++i) {
      T expect = 0;
      for (int k = 0; k < n; ++k) expect += static_cast<T>((i + k) % 64);
      ASSERT_EQ(p[i], expect) << "rank " << r << " element " << i;
    }
  }
}

TEST(LargeTensors, SixtyFourMiBOnTwoRanks) { check_64mib<float>(2); }
TEST(LargeTensors, SixtyFourMiBOfInt32OnThreeRanks) { check_64mib<std::int32_t>(3); }
TEST(LargeTensors, SixtyFourMiBOnEightRanks) { check_64mib<float>(8); }

}  // namespace
}  // namespace trib::collectives
