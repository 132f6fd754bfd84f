#include "trib/data/pipeline.h"

#include "trib/core/error.h"
#include "trib/data/batcher.h"
#include "trib/data/prefetcher.h"
#include "trib/data/shuffle_buffer.h"
#include "data/transformed_stream.h"

namespace trib::data {

PipelineBuilder Pipeline::from(std::shared_ptr<const Dataset> dataset) {
  return PipelineBuilder(std::move(dataset));
}

PipelineBuilder Pipeline::from(std::unique_ptr<ExampleSource> source) {
  return PipelineBuilder(std::move(source));
}

PipelineBuilder::PipelineBuilder(std::shared_ptr<const Dataset> dataset) : dataset_(std::move(dataset)) {
  TRIB_CHECK(dataset_ != nullptr, InvalidArgument, "Pipeline::from: dataset is null");
}

PipelineBuilder::PipelineBuilder(std::unique_ptr<ExampleSource> source) : source_(std::move(source)) {
  TRIB_CHECK(source_ != nullptr, InvalidArgument, "Pipeline::from: source is null");
}

PipelineBuilder& PipelineBuilder::shuffle(std::uint64_t seed) {
  source_options_.shuffle = true;
  source_options_.seed = seed;
  dataset_only_settings_ = true;
  return *this;
}

PipelineBuilder& PipelineBuilder::shard(std::int64_t index, std::int64_t count, bool equal_shards) {
  TRIB_CHECK(count >= 1 && index >= 0 && index < count, InvalidArgument,
             "shard {} of {} does not exist: expected 0 <= index < count", index, count);
  source_options_.shard_index = index;
  source_options_.shard_count = count;
  source_options_.equal_shards = equal_shards;
  dataset_only_settings_ = true;
  return *this;
}

PipelineBuilder& PipelineBuilder::shuffle_buffer(std::int64_t capacity, std::uint64_t seed) {
  TRIB_CHECK(capacity >= 1, InvalidArgument, "shuffle buffer capacity {} < 1", capacity);
  buffer_capacity_ = capacity;
  buffer_seed_ = seed;
  return *this;
}

PipelineBuilder& PipelineBuilder::batch(std::int64_t size, bool drop_last) {
  TRIB_CHECK(size >= 1, InvalidArgument, "batch size {} < 1", size);
  batch_size_ = size;
  drop_last_ = drop_last;
  return *this;
}

PipelineBuilder& PipelineBuilder::map(BatchTransform transform) {
  TRIB_CHECK(static_cast<bool>(transform), InvalidArgument, "Pipeline map: the transform is empty");
  transforms_.push_back(std::move(transform));
  return *this;
}

PipelineBuilder& PipelineBuilder::prefetch(int depth) {
  TRIB_CHECK(depth >= 0, InvalidArgument, "prefetch depth {} < 0", depth);
  prefetch_depth_ = depth;
  return *this;
}

Pipeline PipelineBuilder::build() {
  TRIB_CHECK(!built_, InvalidArgument, "PipelineBuilder::build called twice: a builder makes one pipeline");
  TRIB_CHECK(dataset_ != nullptr || !dataset_only_settings_, InvalidArgument,
             "shuffle(seed) and shard() permute and split a finite dataset; for a stream source use "
             "shuffle_buffer(capacity, seed), and shard the stream itself (e.g. by partition)");
  built_ = true;
  std::unique_ptr<ExampleSource> examples =
      dataset_ ? std::make_unique<DatasetSource>(std::move(dataset_), source_options_) : std::move(source_);
  if (buffer_capacity_ > 0)
    examples = std::make_unique<ShuffleBuffer>(std::move(examples), buffer_capacity_, buffer_seed_);
  std::unique_ptr<BatchStream> batches =
      std::make_unique<Batcher>(std::move(examples), batch_size_, drop_last_);
  if (!transforms_.empty())
    batches = std::make_unique<TransformedStream>(std::move(batches), std::move(transforms_));
  if (prefetch_depth_ > 0) batches = std::make_unique<Prefetcher>(std::move(batches), prefetch_depth_);
  return Pipeline(std::move(batches));
}

}  // namespace trib::data
