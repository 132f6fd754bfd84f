// Where a training loop's batches come from: a data pipeline over files
// (dataset_batch_source.h), a Kafka stream (trib/train_stream), a Python iterator. The loop
// (training_loop.h) asks for batches, and tells the source which of them it trained on.
#pragma once

#include <optional>

#include "trib/checkpoint/checkpoint.h"
#include "trib/data/batch.h"
#include "trib/data/data_position.h"

namespace trib::train {

// Where a run starts, as the loop tells its source.
struct SourceStart {
  bool resume = false;  // the run continues from a checkpoint
  // That checkpoint on the chief; null on the other workers (they learn the position from
  // the chief, through Distribution's store) and in a fresh run.
  const Checkpoint* checkpoint = nullptr;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Once, on every worker, before the run directory is touched: reach the data and take the
  // resume position. Bad input (an unreachable broker, a missing topic) throws here, so a
  // run that cannot start writes nothing.
  virtual void start(const SourceStart& /*start*/) {}

  // The next batch to train on, or nullopt once the source has ended (a stream gone idle, an
  // iterator exhausted); the loop then ends the run. A source over a dataset starts its next
  // epoch by itself and never ends: training.steps (or epochs) ends the run. A batch has
  // training.batch rows, or fewer (a stream's last events: drop_last false is fine).
  virtual std::optional<data::Batch> next() = 0;

  // The update that trained on `batch`, the last one next() gave, is applied. A checkpoint
  // taken now holds that update, so positions saved in it must count exactly the batches
  // seen here (a source that reads ahead tracks its applied position from these calls).
  virtual void applied(const data::Batch& /*batch*/) {}
  // The step of `batch` was skipped (a non-finite gradient): consumed, not trained on.
  virtual void skipped(const data::Batch& /*batch*/) {}

  // Continue from `position` (a relaunched worker's, kept by its parameter servers); a
  // source without positions ignores it.
  virtual void resume_at(const data::DataPosition& /*position*/) {}

  // Go on where a peer worker's data stands (`position`, taken in its shard), in this
  // worker's own shard: a worker joining a running group. A source without positions ignores it.
  virtual void follow(const data::DataPosition& /*position*/) {}

  // From the next epoch on, take shard `index` of `count` (the workers changed: a lost
  // allreduce worker). The current epoch goes on in the shard it started in; at an epoch's
  // start (nothing of it read yet) the new sharding applies at once. A source without shards
  // ignores it.
  virtual void reshard(int /*index*/, int /*count*/) {}
  // Whether the next batch begins an epoch (none of the current one is left unread): where an
  // allreduce group changes its members with nothing lost or read twice. False for a source
  // without epochs.
  virtual bool at_epoch_start() const { return false; }

  // Where a resumed run continues after the last applied batch, saved as the checkpoint's
  // data_position by the chief. nullopt: nothing to save (an iterator that cannot be
  // replayed, or positions that hooks save themselves).
  virtual std::optional<data::DataPosition> position() const { return std::nullopt; }

  // The cursor sent with the update of `batch`, the last one next() gave
  // (UpdateStrategy::set_data_cursor): where this worker's data stands once that update is
  // applied, as resume_at() takes it. A stream's is its applied progress with the batch in it;
  // a dataset's, its position().
  virtual std::optional<data::DataPosition> position_after(const data::Batch& /*batch*/) const { return position(); }
};

}  // namespace trib::train
