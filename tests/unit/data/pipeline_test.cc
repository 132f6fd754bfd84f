#include "trib/data/pipeline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"
#include "trib/data/idx.h"

namespace trib::data {
namespace {

using testing::counting_dataset;
using testing::CountingStream;
using testing::ids;
using Events = std::vector<std::vector<std::int64_t>>;

// The next `n` results of `pipeline`, an end of epoch written as an empty batch.
Events pull(Pipeline& pipeline, int n) {
  Events events;
  for (int i = 0; i < n; ++i) {
    auto batch = pipeline.next();
    events.push_back(batch ? ids(*batch) : std::vector<std::int64_t>{});
  }
  return events;
}

Pipeline shuffled(std::uint64_t seed, int prefetch = 2) {
  return Pipeline::from(counting_dataset(100)).shuffle(seed).batch(8, true).prefetch(prefetch).build();
}

TEST(PipelineTest, SameSeedSameBatchesOtherSeedOtherOrder) {
  Pipeline a = shuffled(42), b = shuffled(42, 0), c = shuffled(43);
  Events first = pull(a, 30);  // 12 batches and an end per epoch
  EXPECT_EQ(first, pull(b, 30));
  EXPECT_NE(first, pull(c, 30));
  EXPECT_TRUE(first[12].empty());
  EXPECT_EQ(first[0].size(), 8u);
}

TEST(PipelineTest, ShardedWorkersSeeDisjointParts) {
  std::vector<std::int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    Pipeline p = Pipeline::from(counting_dataset(103)).shuffle(9).shard(rank, 4).batch(10).build();
    while (auto batch = p.next()) {
      auto part = ids(*batch);
      all.insert(all.end(), part.begin(), part.end());
    }
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.size(), 103u);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

TEST(PipelineTest, ResumeFromSavedPositionRepeatsTheUninterruptedRun) {
  Pipeline original = Pipeline::from(counting_dataset(100)).shuffle(5).shard(1, 2).batch(8).prefetch(3).build();
  pull(original, 9);  // into the second epoch
  const std::string checkpoint = original.position().serialize();
  Events rest = pull(original, 20);

  Pipeline resumed = Pipeline::from(counting_dataset(100)).shuffle(5).shard(1, 2).batch(8).prefetch(3).build();
  resumed.seek(DataPosition::parse(checkpoint));
  EXPECT_EQ(pull(resumed, 20), rest);
}

TEST(PipelineTest, StreamWithShuffleBufferResumesExactly) {
  auto build = [] {
    return Pipeline::from(std::make_unique<CountingStream>())
        .shuffle_buffer(100, 3)
        .batch(16)
        .map(scale(2.0f))
        .prefetch(2)
        .build();
  };
  Pipeline original = build();
  Events head = pull(original, 7);
  EXPECT_EQ(head[0].size(), 16u);
  EXPECT_TRUE(std::all_of(head[0].begin(), head[0].end(), [](auto id) { return id % 2 == 0 && id < 200; }));
  DataPosition saved = original.position();
  Events rest = pull(original, 20);

  Pipeline resumed = build();
  resumed.seek(saved);
  EXPECT_EQ(pull(resumed, 20), rest);
}

TEST(PipelineTest, DatasetOnlySettingsOnAStreamAreRejected) {
  EXPECT_THROW(Pipeline::from(std::make_unique<CountingStream>()).shuffle(1).build(), InvalidArgument);
  EXPECT_THROW(Pipeline::from(counting_dataset(4)).shard(2, 2), InvalidArgument);
}

TEST(PipelineTest, FashionMnistEpochInBatchesOf256) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "package dataset-fashion-mnist not installed";
  auto train = std::make_shared<InMemoryDataset>(load_idx_pair(
      dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", {.num_classes = 10, .flatten = true}));
  Pipeline pipeline = Pipeline::from(train).shuffle(1).batch(256, true).prefetch(2).build();

  const auto start = std::chrono::steady_clock::now();
  int batches = 0;
  while (auto batch = pipeline.next()) {
    ++batches;
    ASSERT_EQ(batch->features().spec_string(), "f32[256, 784]");
    ASSERT_EQ(batch->labels().spec_string(), "i32[256]");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("Fashion-MNIST epoch of %d batches of 256x784 f32 in %.3f s (%.1f us per batch)\n", batches,
              seconds, 1e6 * seconds / batches);
  EXPECT_EQ(batches, 60000 / 256);
}

}  // namespace
}  // namespace trib::data
