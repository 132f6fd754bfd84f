// A finite, random-access collection of examples: what a file loader returns. Order, epochs,
// shuffling and sharding are not its business; DatasetSource adds them on top.
#pragma once

#include <cstdint>
#include <span>

#include "trib/data/batch.h"

namespace trib::data {

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::int64_t size() const = 0;
  // The examples at `indices`, in that order, as one batch (features f32 [N, ...], labels i32
  // [N]). Must be safe to call from several threads at once: prefetching calls it from a
  // background thread. Throws InvalidArgument for an index outside [0, size()).
  virtual Batch gather(std::span<const std::int64_t> indices) const = 0;

  // One example, as a batch of one row.
  Batch get(std::int64_t index) const { return gather({&index, 1}); }
};

}  // namespace trib::data
