// Runs one task per parameter server at once and waits for all of them. A connection sends
// a request's bytes on the calling thread, so pushing a step's gradients to several servers
// from one thread would send them one after another; here each server's push, its reply and
// its pull run on their own thread (the caller takes server 0). The threads live as long as
// the strategy: no thread is started per step.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trib::ps {

class FanOut {
 public:
  // `width` tasks at most per run(): width - 1 threads.
  explicit FanOut(std::size_t width);
  ~FanOut();
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;

  // task(0) .. task(n - 1), concurrently; returns when all have finished, rethrowing the
  // first exception (by task index) if any threw. n <= width. Not reentrant.
  void run(std::size_t n, const std::function<void(std::size_t)>& task);

 private:
  void work(std::size_t index);

  std::mutex mu_;
  std::condition_variable start_, finished_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t tasks_ = 0;
  std::size_t pending_ = 0;
  std::uint64_t round_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;  // thread i runs task i + 1
};

}  // namespace trib::ps
