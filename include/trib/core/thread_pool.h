// A fixed set of worker threads draining one task queue. The engine's inter-op pool runs
// independent graph nodes on it; other subsystems use it for background work.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trib {

class ThreadPool {
 public:
  // threads <= 0 means one per hardware core.
  explicit ThreadPool(int threads);
  ~ThreadPool();  // finishes queued tasks, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task);
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Number of cores this process may use (affinity-aware).
int hardware_threads();

}  // namespace trib
