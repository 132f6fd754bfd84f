#include "serve/checkpoint_watcher.h"

#include "trib/checkpoint/checkpoint.h"
#include "trib/core/error.h"

namespace trib::serve {

CheckpointWatcher::CheckpointWatcher(const onnx_export::RunModel& run, ModelSlot& slot, const Log& log)
    : run_(run), slot_(slot), log_(log.named("trib.serve")) {}

CheckpointWatcher::~CheckpointWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CheckpointWatcher::poll_once() {
  std::vector<CheckpointRef> refs = list_checkpoints(run_.run_dir / "checkpoints");
  std::shared_ptr<const Snapshot> served = slot_.current();
  // Newest first; past the served step nothing is worth loading.
  for (auto it = refs.rbegin(); it != refs.rend(); ++it) {
    if (served && it->step <= served->step) return false;
    if (it->dir == failed_) {
      if (served) return false;  // reported already; wait for a newer one
      continue;
    }
    try {
      Snapshot next = onnx_export::load_variables(run_, it->dir);
      const std::int64_t from = served ? served->step : -1;
      slot_.install(std::move(next));
      if (from < 0)
        log_.info("serving {} (step {})", it->dir.string(), it->step);
      else
        log_.info("reloaded: serving {} (step {}, was step {})", it->dir.string(), it->step, from);
      return true;
    } catch (const std::exception& e) {
      failed_ = it->dir;
      log_.warn("checkpoint {} not loaded, still serving {}: {}", it->dir.string(),
                served ? fmt::format("step {}", served->step) : "nothing", e.what());
      if (served) return false;
    }
  }
  return false;
}

void CheckpointWatcher::start(std::chrono::milliseconds interval) {
  TRIB_CHECK(!thread_.joinable(), InvalidArgument, "CheckpointWatcher::start called twice");
  thread_ = std::thread([this, interval] { loop(interval); });
}

void CheckpointWatcher::loop(std::chrono::milliseconds interval) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    try {
      poll_once();
    } catch (const std::exception& e) {  // a directory listing that failed: try again later
      log_.warn("watching {}: {}", run_.run_dir.string(), e.what());
    }
    lock.lock();
    cv_.wait_for(lock, interval, [this] { return stop_; });
  }
}

}  // namespace trib::serve
