// Hot reload: watches <run>/checkpoints of a run that may still be training and installs each
// newer complete checkpoint into a ModelSlot. A checkpoint is complete once its manifest is
// published (checkpoint.h), so one being written is never looked at; one that fails to load
// (removed by keep_last meanwhile, or damaged) is reported once and the served model stays
// what it was, until a newer one loads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "serve/model_slot.h"
#include "trib/core/log.h"

namespace trib::serve {

class CheckpointWatcher {
 public:
  // Does not start polling; start() does.
  CheckpointWatcher(const onnx_export::RunModel& run, ModelSlot& slot, const Log& log);
  ~CheckpointWatcher();  // stops the thread
  CheckpointWatcher(const CheckpointWatcher&) = delete;
  CheckpointWatcher& operator=(const CheckpointWatcher&) = delete;

  // Looks once: installs the newest checkpoint if it is newer than the one served (or the
  // newest one that loads, when none is served yet). Returns whether it installed one.
  bool poll_once();
  // Polls every `interval` on a thread of its own.
  void start(std::chrono::milliseconds interval);

 private:
  void loop(std::chrono::milliseconds interval);

  const onnx_export::RunModel& run_;
  ModelSlot& slot_;
  Log log_;
  std::filesystem::path failed_;  // the last checkpoint that failed to load: reported once
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trib::serve
