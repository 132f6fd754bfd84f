// A Python iterator of (x, y) numpy batches as the training loop's data source. The loop runs
// without the GIL; next() takes it to pull a batch, checks and copies it (arrays.h), and lets
// it go. The iterator's end ends the run; an exception it raises ends the run too and reaches
// the caller unchanged. Batches may have fewer rows than the batch size (a last, short one),
// never more. The source has no positions: a run over an iterator cannot be resumed.
#pragma once

#include <cstdint>
#include <optional>

#include "bindings.h"
#include "interrupt_stop.h"
#include "trib/core/shape.h"
#include "trib/train/batch_source.h"

namespace trib::python {

class IteratorSource final : public train::BatchSource {
 public:
  // Holds a reference to `iterator`: construct and destroy it with the GIL held.
  // A KeyboardInterrupt raised in the iterator goes to `stop` and ends the source; any other
  // exception propagates.
  IteratorSource(py::iterator iterator, Shape example, std::int64_t classes, std::int64_t batch,
                 InterruptStop* stop);

  std::optional<data::Batch> next() override;

 private:
  py::iterator it_;
  Shape example_;
  std::int64_t classes_, batch_;
  InterruptStop* stop_;
  std::int64_t pulled_ = 0;  // batches taken so far, for error messages
};

}  // namespace trib::python
