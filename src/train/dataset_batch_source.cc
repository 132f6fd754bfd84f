#include "trib/train/dataset_batch_source.h"

#include <algorithm>
#include <cstdio>

#include "train/resume_position.h"
#include "trib/data/dataset_source.h"
#include "trib/core/error.h"

namespace trib::train {
namespace {

data::Pipeline build_pipeline(std::shared_ptr<const data::Dataset> dataset, const config::JobConfig& job,
                              int index, int count) {
  data::PipelineBuilder b = data::Pipeline::from(std::move(dataset));
  // Without shuffle the dataset's own order: batch k of an epoch is examples [k*b, (k+1)*b)
  // of this worker's shard.
  if (job.data.shuffle) b.shuffle(job.training.seed);
  // Equal shards: synchronous workers then take the same number of steps per epoch.
  return b.shard(index, count, /*equal_shards=*/true)
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
    : dist_(dist), log_(log), dataset_(dataset), job_(job),
      pipeline_(build_pipeline(dataset, job, dist.worker_index, std::max(dist.workers, dist.worker_index + 1))) {
  shard_index_ = dist.worker_index;
  shard_count_ = std::max(dist.workers, dist.worker_index + 1);
  steps_per_epoch_ = train::steps_per_epoch(dataset->size(), job, shard_count_);
}

bool DatasetBatchSource::peer_read_its_epoch(const data::DataPosition& peer) const {
  int index = 0, count = 0;
  if (!peer.has("shard") || std::sscanf(peer.get("shard").c_str(), "%d/%d", &index, &count) != 2 || count < 1)
    return false;
  return peer.get_int("cursor") >= train::steps_per_epoch(dataset_->size(), job_, count) * job_.training.batch;
}

bool DatasetBatchSource::at_epoch_start() const {
  // Equal shards, the last partial batch dropped: an epoch is steps_per_epoch_ whole batches.
  const std::int64_t cursor = pipeline_.position().get_int("cursor");
  return cursor == 0 || cursor >= steps_per_epoch_ * job_.training.batch;
}

void DatasetBatchSource::follow(const data::DataPosition& peer) {
  data::DataPosition at = pipeline_.position();
  try {
    at = data::position_in_shard(peer, shard_index_, shard_count_);
  } catch (const InvalidArgument&) {
    // Another sharding (a joiner beyond the starting workers): the start of the peer's epoch,
    // or of the next one when the peer has read all of its own.
    at.set_int("epoch", peer.get_int("epoch") + (peer_read_its_epoch(peer) ? 1 : 0));
    at.set_int("cursor", 0);
  }
  pipeline_.seek(at);
  std::fprintf(log_, "worker %d: data goes on at %s (shard %d of %d)\n", dist_.worker_index, at.to_string().c_str(),
               shard_index_, shard_count_);
  std::fflush(log_);
}

void DatasetBatchSource::start(const SourceStart& start) {
  if (std::optional<data::DataPosition> p = resume_data_position(dist_, start.resume, start.checkpoint, log_))
    pipeline_.seek(*p);
}

std::optional<data::Batch> DatasetBatchSource::next() {
  // An empty answer ends an epoch; the next call starts the next one.
  for (int tries = 0; tries < 2; ++tries) {
    if (std::optional<data::Batch> b = pipeline_.next()) return b;
    if (reshard_) apply_reshard();
  }
  throw Error("the training data gave no batch in a whole epoch");
}

void DatasetBatchSource::resume_at(const data::DataPosition& position) {
  if (!position.has("shard")) return pipeline_.seek(position);  // the seek names what is wrong
  int index = 0, count = 0;
  char equal[8] = {};
  const std::string& shard = position.get("shard");  // "i/n" or "i/n equal"
  TRIB_CHECK(std::sscanf(shard.c_str(), "%d/%d %7s", &index, &count, equal) >= 2 && count >= 1 && index >= 0 &&
                 index < count,
             InvalidArgument, "data position: shard '{}' is not 'i/n' with 0 <= i < n", shard);
  if (index != shard_index_ || count != shard_count_) {
    if (!reshard_) reshard_ = std::make_pair(shard_index_, shard_count_);
    use_shard(index, count);
  }
  pipeline_.seek(position);
}

void DatasetBatchSource::use_shard(int index, int count) {
  pipeline_ = build_pipeline(dataset_, job_, index, count);
  shard_index_ = index;
  shard_count_ = count;
  steps_per_epoch_ = train::steps_per_epoch(dataset_->size(), job_, count);
}

void DatasetBatchSource::reshard(int index, int count) {
  TRIB_CHECK(count >= 1 && index >= 0 && index < count, InvalidArgument, "reshard: shard {} of {}", index, count);
  reshard_ = std::make_pair(index, count);
  // Nothing of this epoch read (a group that changed at an epoch boundary): the whole epoch
  // in the new sharding, so that no example is left out or read twice.
  if (at_epoch_start() && (index != shard_index_ || count != shard_count_)) apply_reshard();
}

// Between epochs: the next epoch's permutation in the new sharding, from its start.
void DatasetBatchSource::apply_reshard() {
  const auto [index, count] = *reshard_;
  reshard_.reset();
  const data::DataPosition old = pipeline_.position();
  const std::int64_t epoch = old.get_int("epoch") + (old.get_int("cursor") > 0 ? 1 : 0);
  use_shard(index, count);
  data::DataPosition at = pipeline_.position();
  at.set_int("epoch", epoch);
  at.set_int("cursor", 0);
  pipeline_.seek(at);
  std::fprintf(log_, "worker %d: from epoch %lld on, data shard %d of %d (%lld steps per epoch)\n", dist_.worker_index,
               static_cast<long long>(epoch), index, count, static_cast<long long>(steps_per_epoch_));
  std::fflush(log_);
}

}  // namespace trib::train
