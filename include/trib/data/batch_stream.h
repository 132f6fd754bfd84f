// A stream of whole batches: what the batcher produces and what transforms, prefetching and
// finally the trainer consume. Its end-of-epoch and position semantics are ExampleSource's.
#pragma once

#include <optional>

#include "trib/data/batch.h"
#include "trib/data/data_position.h"

namespace trib::data {

class BatchStream {
 public:
  virtual ~BatchStream() = default;

  // The next batch, or nullopt once at the end of each epoch (see ExampleSource::next).
  virtual std::optional<Batch> next() = 0;
  // The position after the last batch returned, and a way back to it (see ExampleSource).
  virtual DataPosition position() const = 0;
  virtual void seek(const DataPosition& position) = 0;
  // Thread-safe: makes a blocked next() return promptly, with nullopt.
  virtual void interrupt() {}
};

}  // namespace trib::data
