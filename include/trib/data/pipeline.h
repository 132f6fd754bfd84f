// The data pipeline a trainer pulls batches from, and the builder that assembles it:
//
//   Pipeline train = Pipeline::from(dataset).shuffle(seed).shard(rank, world)
//                        .batch(256, /*drop_last=*/true).map(normalize({0.286f}, {0.353f}))
//                        .prefetch(2).build();
//   while (auto batch = train.next()) step(batch->features(), batch->labels());
//
// Whatever order the builder calls come in, the stages are assembled as
//   source -> [shuffle buffer] -> batcher -> [transforms] -> [prefetcher]
// where the source is a DatasetSource (with the shuffle and shard settings) for a dataset, or
// the given ExampleSource for a stream. next() returns nullopt once at the end of each epoch;
// the call after it starts the next epoch. position() / seek() save and restore where the
// pipeline stands for checkpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "trib/data/batch_stream.h"
#include "trib/data/dataset.h"
#include "trib/data/dataset_source.h"
#include "trib/data/example_source.h"
#include "trib/data/transforms.h"

namespace trib::data {

class PipelineBuilder;

class Pipeline {
 public:
  static PipelineBuilder from(std::shared_ptr<const Dataset> dataset);
  static PipelineBuilder from(std::unique_ptr<ExampleSource> source);

  explicit Pipeline(std::unique_ptr<BatchStream> stream) : stream_(std::move(stream)) {}

  std::optional<Batch> next() { return stream_->next(); }
  DataPosition position() const { return stream_->position(); }
  void seek(const DataPosition& position) { stream_->seek(position); }
  // Thread-safe: makes a blocked next() return (for shutting down a job fed by a stream).
  void interrupt() { stream_->interrupt(); }

 private:
  std::unique_ptr<BatchStream> stream_;
};

class PipelineBuilder {
 public:
  explicit PipelineBuilder(std::shared_ptr<const Dataset> dataset);
  explicit PipelineBuilder(std::unique_ptr<ExampleSource> source);

  // Dataset only: a new seeded permutation every epoch (see DatasetSource).
  PipelineBuilder& shuffle(std::uint64_t seed);
  // Dataset only: this worker's disjoint part of every epoch.
  PipelineBuilder& shard(std::int64_t index, std::int64_t count, bool equal_shards = false);
  // Any source: a bounded shuffle buffer (see ShuffleBuffer), the way to shuffle a stream.
  PipelineBuilder& shuffle_buffer(std::int64_t capacity, std::uint64_t seed);
  // Rows per batch; 1 when never called.
  PipelineBuilder& batch(std::int64_t size, bool drop_last = false);
  // Appends a transform applied to every batch.
  PipelineBuilder& map(BatchTransform transform);
  // Batches produced ahead on a background thread; 0 (the default) produces on demand.
  PipelineBuilder& prefetch(int depth);

  // Assembles the pipeline; the builder is spent afterwards. Throws InvalidArgument for
  // settings that do not fit the source (shuffle or shard on a stream).
  Pipeline build();

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::unique_ptr<ExampleSource> source_;
  DatasetSourceOptions source_options_;
  bool dataset_only_settings_ = false;
  std::int64_t buffer_capacity_ = 0;
  std::uint64_t buffer_seed_ = 0;
  std::int64_t batch_size_ = 1;
  bool drop_last_ = false;
  std::vector<BatchTransform> transforms_;
  int prefetch_depth_ = 0;
  bool built_ = false;
};

}  // namespace trib::data
