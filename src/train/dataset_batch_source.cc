#include "trib/train/dataset_batch_source.h"

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

DatasetBatchSource::DatasetBatchSource(std::shared_ptr<const data::Dataset> dataset, const config::JobConfig& job,
                                       const Distribution& dist, std::FILE* log)
    : dist_(dist), log_(log), pipeline_(build_pipeline(dataset, job, dist)) {
  const std::int64_t shard_examples = dataset->size() / dist.workers;
  steps_per_epoch_ = shard_examples / job.training.batch;
  TRIB_CHECK(steps_per_epoch_ > 0, InvalidArgument,
             "training.batch {} is larger than a worker's share of the training set ({} examples)",
             job.training.batch, shard_examples);
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
