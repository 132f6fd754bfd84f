#include "trib/data/dataset_source.h"

#include <algorithm>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"
#include "data/permutation.h"

namespace trib::data {
namespace {

using testing::counting_dataset;
using testing::ids;

// The ids one epoch of `source` visits, read `chunk` rows at a time.
std::vector<std::int64_t> one_epoch(DatasetSource& source, std::int64_t chunk = 3) {
  std::vector<std::int64_t> seen;
  while (auto batch = source.next(chunk)) {
    auto part = ids(*batch);
    seen.insert(seen.end(), part.begin(), part.end());
  }
  return seen;
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

TEST(SeededPermutationTest, IsAPermutationFixedBySeedAndStream) {
  auto p = seeded_permutation(1000, 42, 0);
  EXPECT_EQ(sorted(p), iota(1000));
  EXPECT_EQ(p, seeded_permutation(1000, 42, 0));
  EXPECT_NE(p, seeded_permutation(1000, 43, 0));
  EXPECT_NE(p, seeded_permutation(1000, 42, 1));
}

TEST(DatasetSourceTest, UnshuffledVisitsInOrderEveryEpoch) {
  DatasetSource source(counting_dataset(10));
  EXPECT_EQ(one_epoch(source), iota(10));
  EXPECT_EQ(source.epoch(), 1);
  EXPECT_EQ(one_epoch(source), iota(10));
}

TEST(DatasetSourceTest, ShuffledEpochsArePermutationsThatDiffer) {
  DatasetSource a(counting_dataset(100), {.shuffle = true, .seed = 7});
  DatasetSource b(counting_dataset(100), {.shuffle = true, .seed = 7});
  DatasetSource c(counting_dataset(100), {.shuffle = true, .seed = 8});
  auto first = one_epoch(a), second = one_epoch(a);
  EXPECT_EQ(sorted(first), iota(100));
  EXPECT_NE(first, second);              // a new order every epoch
  EXPECT_EQ(first, one_epoch(b, 17));    // same seed, same order, whatever the chunking
  EXPECT_NE(first, one_epoch(c));        // another seed, another order
}

TEST(DatasetSourceTest, ShardsAreDisjointAndCoverEachEpoch) {
  for (bool shuffle : {false, true}) {
    for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
      std::vector<std::int64_t> all;
      for (std::int64_t shard = 0; shard < 3; ++shard) {
        DatasetSource source(counting_dataset(100),
                             {.shuffle = shuffle, .seed = 5, .shard_index = shard, .shard_count = 3});
        if (epoch == 1) one_epoch(source);
        auto part = one_epoch(source);
        EXPECT_EQ(static_cast<std::int64_t>(part.size()), source.examples_per_epoch());
        all.insert(all.end(), part.begin(), part.end());
      }
      EXPECT_EQ(sorted(all), iota(100)) << "shuffle=" << shuffle << " epoch=" << epoch;
    }
  }
}

TEST(DatasetSourceTest, EqualShardsDropTheRemainder) {
  std::set<std::int64_t> all;
  for (std::int64_t shard = 0; shard < 3; ++shard) {
    DatasetSource source(counting_dataset(100),
                         {.shuffle = true, .shard_index = shard, .shard_count = 3, .equal_shards = true});
    EXPECT_EQ(source.examples_per_epoch(), 33);
    for (auto id : one_epoch(source)) EXPECT_TRUE(all.insert(id).second) << "id " << id << " twice";
  }
  EXPECT_EQ(all.size(), 99u);
}

TEST(DatasetSourceTest, SeekResumesMidEpochAndChecksSettings) {
  DatasetSource a(counting_dataset(50), {.shuffle = true, .seed = 3});
  one_epoch(a);
  a.next(20);
  DataPosition saved = a.position();
  EXPECT_EQ(saved.get_int("epoch"), 1);
  EXPECT_EQ(saved.get_int("cursor"), 20);
  auto rest = one_epoch(a);

  DatasetSource b(counting_dataset(50), {.shuffle = true, .seed = 3});
  b.seek(saved);
  EXPECT_EQ(one_epoch(b), rest);

  DatasetSource other_seed(counting_dataset(50), {.shuffle = true, .seed = 4});
  EXPECT_THROW(other_seed.seek(saved), InvalidArgument);
  DatasetSource other_shard(counting_dataset(50), {.shuffle = true, .seed = 3, .shard_count = 2});
  EXPECT_THROW(other_shard.seek(saved), InvalidArgument);
}

// Workers that step together stand at the same place of their own equal shards: shard 0's
// position, moved to shard 1, resumes shard 1 exactly where it stood.
TEST(DatasetSourceTest, APositionMovesToAnotherEqualShard) {
  auto shard = [](std::int64_t i) {
    return DatasetSource(counting_dataset(100),
                         {.shuffle = true, .seed = 5, .shard_index = i, .shard_count = 3, .equal_shards = true});
  };
  DatasetSource zero = shard(0), one = shard(1);
  for (DatasetSource* s : {&zero, &one}) {
    one_epoch(*s);
    s->next(10);
  }
  const DataPosition moved = position_in_shard(zero.position(), 1, 3);
  DatasetSource resumed = shard(1);
  resumed.seek(moved);
  EXPECT_EQ(one_epoch(resumed), one_epoch(one));

  EXPECT_THROW(position_in_shard(zero.position(), 3, 3), InvalidArgument);
  EXPECT_THROW(position_in_shard(zero.position(), 1, 2), InvalidArgument);
  DatasetSource unequal(counting_dataset(100), {.shard_index = 0, .shard_count = 3});
  EXPECT_THROW(position_in_shard(unequal.position(), 1, 3), InvalidArgument);
}

}  // namespace
}  // namespace trib::data
