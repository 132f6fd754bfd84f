#include "trib/data/batcher.h"

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/data/dataset_source.h"

namespace trib::data {
namespace {

using testing::counting_dataset;
using testing::drain_epoch;
using Batches = std::vector<std::vector<std::int64_t>>;

TEST(BatcherTest, KeepsTheShortLastBatchByDefault) {
  Batcher batcher(std::make_unique<DatasetSource>(counting_dataset(10)), 4, /*drop_last=*/false);
  EXPECT_EQ(drain_epoch(batcher), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(drain_epoch(batcher), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(BatcherTest, DropLastDropsTheShortBatchOnly) {
  Batcher batcher(std::make_unique<DatasetSource>(counting_dataset(10)), 4, /*drop_last=*/true);
  EXPECT_EQ(drain_epoch(batcher), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(drain_epoch(batcher), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  Batcher exact(std::make_unique<DatasetSource>(counting_dataset(8)), 4, /*drop_last=*/true);
  EXPECT_EQ(drain_epoch(exact).size(), 2u);
}

TEST(BatcherTest, AssemblesBatchesFromUnevenChunks) {
  Batcher batcher(std::make_unique<testing::CountingStream>(), 5, false);
  for (std::int64_t b = 0; b < 4; ++b) {
    auto batch = batcher.next();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(testing::ids(*batch), (std::vector<std::int64_t>{5 * b, 5 * b + 1, 5 * b + 2, 5 * b + 3, 5 * b + 4}));
  }
}

TEST(BatcherTest, PositionAfterAShortBatchStillOwesTheEnd) {
  Batcher a(std::make_unique<DatasetSource>(counting_dataset(10)), 4, false);
  for (int i = 0; i < 3; ++i) a.next();  // ... {8, 9}
  Batcher b(std::make_unique<DatasetSource>(counting_dataset(10)), 4, false);
  b.seek(a.position());
  EXPECT_FALSE(b.next().has_value());
  EXPECT_EQ(testing::ids(*b.next()), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace trib::data
