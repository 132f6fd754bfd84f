// The batch source of a parameter-server job with `data.assignment: dynamic`: instead of a
// fixed shard, the worker reads chunks of each epoch that parameter server 0 hands out
// (src/ps/chunk_dispenser.h), asking for the next when one is read. A lost, leaving or joining
// worker then changes who reads what, and no batch is read twice or left out relative to the
// applied pushes: the data cursor sent with each push says how far into its chunk the worker
// is, and what a departed worker left unread goes to the next worker that asks.
//
// Epoch e is the training split in the order of seeded_permutation(size, training.seed, e)
// (file order with data.shuffle false), cut into batches of training.batch (the last partial
// batch dropped); chunk k is batches [k*C, (k+1)*C) of it. The run ends when the job's
// batches are all read.
#pragma once

#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trib/config/job_config.h"
#include "trib/data/dataset.h"
#include "trib/train/batch_source.h"

namespace trib::train {

struct ChunkedSourceOptions {
  std::int64_t batch = 64;
  bool shuffle = true;
  std::uint64_t seed = 1;
  std::int64_t chunk_batches = 8;
  std::int64_t total_batches = 0;  // the whole job's, over all workers
  // Sends a claim (JSON) to parameter server 0 and returns its answer (JSON).
  std::function<std::string(const std::string&)> claim;
  std::chrono::milliseconds wait_poll{100};  // between claims while others may return chunks
};

class ChunkedBatchSource final : public BatchSource {
 public:
  ChunkedBatchSource(std::shared_ptr<const data::Dataset> dataset, ChunkedSourceOptions options);

  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }

  std::optional<data::Batch> next() override;
  // "chunk=E:K:NEXT:END": the chunk of the last batch given and how far into it (batches).
  std::optional<data::DataPosition> position() const override;
  // The servers hand back a relaunched worker's unread chunk themselves: nothing to seek.
  void resume_at(const data::DataPosition&) override {}

 private:
  struct Held {
    std::int64_t epoch = 0, index = 0, next = 0, end = 0;
  };
  enum class Claimed { granted, wait, exhausted };
  Claimed claim();
  const std::vector<std::int64_t>& order_of(std::int64_t epoch);

  std::shared_ptr<const data::Dataset> dataset_;
  ChunkedSourceOptions o_;
  std::int64_t batches_per_epoch_ = 0;
  std::deque<Held> chunks_;  // granted, the one being read first
  std::optional<Held> last_;  // the chunk of the last batch given, past that batch
  std::int64_t order_epoch_ = -1;
  std::vector<std::int64_t> order_;
};

// Batches of training.batch in the training split's `examples` (the last partial one dropped);
// InvalidArgument when there is not one.
std::int64_t whole_batches(std::int64_t examples, const config::JobConfig& job);

}  // namespace trib::train
