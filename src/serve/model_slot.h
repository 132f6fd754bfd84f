// The checkpoint a server answers with, swapped whole: a request takes the current snapshot
// once and runs on it to the end, while a reload builds the next one completely (loaded,
// every CRC verified, every parameter's shape checked) before installing it. So no request
// ever sees a half-loaded model, and an old snapshot lives until its last request is done.
#pragma once

#include <memory>
#include <mutex>

#include "export/run_model.h"

namespace trib::serve {

using Snapshot = onnx_export::CheckpointVariables;

class ModelSlot {
 public:
  // Null until the first checkpoint is installed.
  std::shared_ptr<const Snapshot> current() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }
  void install(Snapshot next) {
    auto p = std::make_shared<const Snapshot>(std::move(next));
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(p);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> current_;
};

}  // namespace trib::serve
