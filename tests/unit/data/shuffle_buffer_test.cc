#include "trib/data/shuffle_buffer.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/data/dataset_source.h"

namespace trib::data {
namespace {

using testing::CountingStream;
using testing::ids;

// The next `n` ids of `source`, requested `chunk` at a time.
std::vector<std::int64_t> take(ExampleSource& source, std::size_t n, std::int64_t chunk = 5) {
  std::vector<std::int64_t> out;
  while (out.size() < n) {
    auto batch = source.next(std::min<std::int64_t>(chunk, static_cast<std::int64_t>(n - out.size())));
    if (!batch) break;
    auto part = ids(*batch);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

TEST(ShuffleBufferTest, SameSeedSameOrderOtherSeedOtherOrder) {
  ShuffleBuffer a(std::make_unique<CountingStream>(), 64, 11);
  ShuffleBuffer b(std::make_unique<CountingStream>(), 64, 11);
  ShuffleBuffer c(std::make_unique<CountingStream>(), 64, 12);
  auto first = take(a, 300);
  EXPECT_EQ(first, take(b, 300, 7));
  EXPECT_NE(first, take(c, 300));
}

TEST(ShuffleBufferTest, PermutesWithinEachWindow) {
  ShuffleBuffer buffer(std::make_unique<CountingStream>(), 64, 1);
  auto got = take(buffer, 128);
  for (std::size_t w = 0; w < 2; ++w) {
    std::vector<std::int64_t> window(got.begin() + 64 * w, got.begin() + 64 * (w + 1));
    EXPECT_FALSE(std::is_sorted(window.begin(), window.end()));
    std::sort(window.begin(), window.end());
    std::vector<std::int64_t> expected(64);
    std::iota(expected.begin(), expected.end(), static_cast<std::int64_t>(64 * w));
    EXPECT_EQ(window, expected);
  }
}

TEST(ShuffleBufferTest, PassesOnTheEndOfAFiniteSourceAfterDraining) {
  ShuffleBuffer buffer(std::make_unique<DatasetSource>(testing::counting_dataset(10)), 4, 1);
  auto epoch = take(buffer, 10);  // windows of 4, 4 and 2
  std::sort(epoch.begin(), epoch.end());
  EXPECT_EQ(epoch, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_FALSE(buffer.next(5).has_value());  // the end, passed on after the short window
  EXPECT_EQ(take(buffer, 100).size(), 10u);  // the next epoch, up to its end
}

TEST(ShuffleBufferTest, ResumesMidWindowFromAPosition) {
  ShuffleBuffer a(std::make_unique<CountingStream>(), 50, 9);
  take(a, 73);
  DataPosition saved = DataPosition::parse(a.position().serialize());
  EXPECT_EQ(saved.get_int("stream.offset"), 50);  // where the current window began
  auto rest = take(a, 200);

  ShuffleBuffer b(std::make_unique<CountingStream>(), 50, 9);
  b.seek(saved);
  EXPECT_EQ(take(b, 200), rest);
}

}  // namespace
}  // namespace trib::data
