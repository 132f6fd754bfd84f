// Walks a finite dataset epoch after epoch, optionally in a seeded random order and
// optionally only one worker's shard of it. This is how a Dataset becomes an ExampleSource.
//
// Epoch e visits the examples in seeded_permutation(size, seed, e), which depends on
// (seed, e) alone. Every worker therefore computes the same permutation without talking to
// the others, and shard i of n takes its elements i, i+n, i+2n, ...: the shards of an epoch
// are disjoint and together cover the dataset. The position is (epoch, cursor within this
// shard's part of the epoch) plus the settings it was saved under; the generator needs no
// saved state because it is re-derived from (seed, epoch).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trib/data/dataset.h"
#include "trib/data/example_source.h"

namespace trib::data {

struct DatasetSourceOptions {
  bool shuffle = false;  // false: every epoch visits 0, 1, 2, ...
  std::uint64_t seed = 0;
  std::int64_t shard_index = 0;
  std::int64_t shard_count = 1;
  // Drop each epoch's size % shard_count leftover examples so that every shard has the same
  // number of examples (and synchronous workers the same number of steps). With shuffling a
  // different few are left out each epoch.
  bool equal_shards = false;
};

class DatasetSource final : public ExampleSource {
 public:
  explicit DatasetSource(std::shared_ptr<const Dataset> dataset, DatasetSourceOptions options = {});

  std::optional<Batch> next(std::int64_t max_rows) override;
  DataPosition position() const override;
  void seek(const DataPosition& position) override;

  std::int64_t epoch() const { return epoch_; }
  // Examples this shard visits per epoch.
  std::int64_t examples_per_epoch() const { return shard_size_; }

 private:
  void begin_epoch(std::int64_t epoch);

  std::shared_ptr<const Dataset> dataset_;
  DatasetSourceOptions options_;
  std::int64_t shard_size_;
  std::int64_t epoch_ = 0;
  std::int64_t cursor_ = 0;           // examples of this epoch already returned
  std::vector<std::int64_t> order_;   // this shard's dataset indices for the current epoch
};

// The same place in equal shard `index` of `count` that `position` (taken in another equal
// shard of the same sharding) names: equal shards have the same length, so workers that step
// together stand at the same epoch and cursor, and only the shard differs. InvalidArgument if
// `position` was not taken in an equal shard of `count`.
DataPosition position_in_shard(const DataPosition& position, std::int64_t index, std::int64_t count);

// Elements index, index + count, ... of `order`; with equal_shards only the first
// order.size() / count of them.
std::vector<std::int64_t> shard_of(std::span<const std::int64_t> order, std::int64_t index,
                                   std::int64_t count, bool equal_shards);

}  // namespace trib::data
