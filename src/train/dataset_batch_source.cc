#include "trib/train/dataset_batch_source.h"

#include <algorithm>

#include "train/resume_position.h"
#include "trib/core/error.h"

namespace trib::train {
namespace {

data::Pipeline build_pipeline(std::shared_ptr<const data::Dataset> dataset, const config::JobConfig& job,
                              const Distribution& dist) {
  data::PipelineBuilder b = data::Pipeline::from(std::move(dataset));
  // Without shuffle the dataset's own order: batch k of an epoch is examples [k*b, (k+1)*b)
  // of this worker's shard.
  if (job.data.shuffle) b.shuffle(job.training.seed);
  // Equal shards: synchronous workers then take the same number of steps per epoch.
  return b.shard(dist.worker_index, dist.workers, /*equal_shards=*/true)
      .batch(job.training.batch, /*drop_last=*/true)
      .prefetch(job.data.prefetch)
      .build();
}

}  // namespace

std::int64_t steps_per_epoch(std::int64_t examples, const config::JobConfig& job, int workers) {
  const std::int64_t shard_examples = examples / std::max(1, workers);
  const std::int64_t steps = shard_examples / job.training.batch;
  TRIB_CHECK(steps > 0, InvalidArgument,
             "training.batch {} is larger than a worker's share of the training set ({} examples{})",
             job.training.batch, shard_examples, workers > 1 ? fmt::format(" of {}, over {} workers", examples, workers) : "");
  return steps;
}

DatasetBatchSource::DatasetBatchSource(std::shared_ptr<const data::Dataset> dataset, const config::JobConfig& job,
                                       const Distribution& dist, std::FILE* log)
    : dist_(dist), log_(log), pipeline_(build_pipeline(dataset, job, dist)) {
  steps_per_epoch_ = train::steps_per_epoch(dataset->size(), job, dist.workers);
}

void DatasetBatchSource::start(const SourceStart& start) {
  if (std::optional<data::DataPosition> p = resume_data_position(dist_, start.resume, start.checkpoint, log_))
    pipeline_.seek(*p);
}

std::optional<data::Batch> DatasetBatchSource::next() {
  // An empty answer ends an epoch; the next call starts the next one.
  for (int tries = 0; tries < 2; ++tries)
    if (std::optional<data::Batch> b = pipeline_.next()) return b;
  throw Error("the training data gave no batch in a whole epoch");
}

}  // namespace trib::train
