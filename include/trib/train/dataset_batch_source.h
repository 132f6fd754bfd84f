// The batch source of a file job: the training split through the data pipeline, as the job's
// data section says (shuffled per epoch with training.seed unless data.shuffle is false, this
// worker's equal shard, batches of training.batch, prefetched). It walks epoch after epoch;
// the loop ends the run.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "trib/config/job_config.h"
#include "trib/data/dataset.h"
#include "trib/data/pipeline.h"
#include "trib/train/batch_source.h"
#include "trib/train/distribution.h"

namespace trib::train {

// Batches per epoch of one worker's equal shard of `examples` training examples; throws
// InvalidArgument when the shard holds less than training.batch. A launcher calls it before
// starting any process, the source again in each worker.
std::int64_t steps_per_epoch(std::int64_t examples, const config::JobConfig& job, int workers);

class DatasetBatchSource final : public BatchSource {
 public:
  // `dist` must outlive the source (the chief hands the resume position to the others
  // through its store). Throws InvalidArgument when a worker's shard holds less than a batch.
  // A worker beyond dist.workers (an allreduce joiner) starts over worker_index + 1 shards,
  // until the group it joins reshards it.
  DatasetBatchSource(std::shared_ptr<const data::Dataset> dataset, const config::JobConfig& job,
                     const Distribution& dist, std::FILE* log = stdout);

  // Batches per epoch of this worker's shard (the last partial batch is dropped).
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }

  // Seeks to the chief's saved position, moved to this worker's shard (resume_position.h).
  void start(const SourceStart& start) override;
  std::optional<data::Batch> next() override;
  // A position taken in another sharding than the pipeline's now (before a reshard this source
  // applied at an epoch's end since) goes back to that sharding; the newer one applies again
  // from the next epoch unless reshard() says otherwise.
  void resume_at(const data::DataPosition& position) override;
  std::optional<data::DataPosition> position() const override { return pipeline_.position(); }
  // At the end of this epoch the pipeline is rebuilt over shard `index` of `count`; at once
  // when at_epoch_start().
  void reshard(int index, int count) override;
  bool at_epoch_start() const override;
  // The peer's epoch and cursor in this worker's shard when both are equal shards of the same
  // count (the lost worker's shard, taken up where the others stand); else the start of the
  // peer's epoch in this worker's shard.
  void follow(const data::DataPosition& position) override;

 private:
  void apply_reshard();
  // Whether `peer` (a position in its own equal shard) stands past its epoch's last batch.
  bool peer_read_its_epoch(const data::DataPosition& peer) const;
  void use_shard(int index, int count);

  const Distribution& dist_;
  std::FILE* log_;
  std::shared_ptr<const data::Dataset> dataset_;
  config::JobConfig job_;
  std::optional<std::pair<int, int>> reshard_;  // (index, count) from the next epoch
  int shard_index_ = 0, shard_count_ = 1;       // of the pipeline now
  std::int64_t steps_per_epoch_ = 0;
  data::Pipeline pipeline_;
};

}  // namespace trib::train
