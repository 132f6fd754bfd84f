// A stream of examples pulled a few rows at a time. It is what the batcher reads, and the one
// interface every origin of data implements: a finite dataset walked epoch by epoch
// (DatasetSource), a per-worker shard of one, a shuffle buffer over another source, or an
// unbounded stream such as a Kafka topic. The trainer never sees which.
#pragma once

#include <cstdint>
#include <optional>

#include "trib/data/batch.h"
#include "trib/data/data_position.h"

namespace trib::data {

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;

  // Between 1 and max_rows examples as one batch, or nullopt at the end of a pass. A finite
  // source ends each epoch with one nullopt and starts the next epoch on the following call;
  // an unbounded source may block for data and returns nullopt only once closed or
  // interrupted. Callers pass max_rows >= 1.
  virtual std::optional<Batch> next(std::int64_t max_rows) = 0;

  // The position after the last example returned; seek() to it on a source built the same
  // way makes next() continue exactly from there. seek() throws InvalidArgument when the
  // position was saved by a differently configured source (another seed or shard).
  virtual DataPosition position() const = 0;
  virtual void seek(const DataPosition& position) = 0;

  // May be called from another thread to make a blocked next() return promptly; the source
  // may stay interrupted afterwards. Sources that never block need not override it.
  virtual void interrupt() {}
};

}  // namespace trib::data
