#include "data/permutation.h"

#include <numeric>
#include <utility>

#include "trib/core/random.h"

namespace trib::data {

std::vector<std::int64_t> seeded_permutation(std::int64_t size, std::uint64_t seed,
                                             std::uint64_t stream) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  Rng rng = Rng(seed).fork(stream);
  for (std::int64_t i = size - 1; i > 0; --i) {
    auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace trib::data
