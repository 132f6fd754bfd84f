#include "ps/fan_out.h"

#include "trib/core/error.h"

namespace trib::ps {

FanOut::FanOut(std::size_t width) : errors_(width) {
  for (std::size_t i = 1; i < width; ++i) threads_.emplace_back([this, i] { work(i); });
}

FanOut::~FanOut() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FanOut::work(std::size_t index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t)>* task = nullptr;
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stopping_ || round_ != seen; });
      if (stopping_) return;
      seen = round_;
      if (index >= tasks_) continue;
      task = task_;
    }
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mu_);
    errors_[index] = error;
    if (--pending_ == 0) finished_.notify_all();
  }
}

void FanOut::run(std::size_t n, const std::function<void(std::size_t)>& task) {
  TRIB_CHECK(n <= errors_.size(), InvalidArgument, "FanOut: {} tasks for a width of {}", n, errors_.size());
  if (n == 0) return;
  {
    std::lock_guard lock(mu_);
    task_ = &task;
    tasks_ = n;
    pending_ = n - 1;
    for (auto& e : errors_) e = nullptr;
    ++round_;
  }
  if (n > 1) start_.notify_all();
  try {
    task(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  std::unique_lock lock(mu_);
  finished_.wait(lock, [&] { return pending_ == 0; });
  task_ = nullptr;
  for (std::size_t i = 0; i < n; ++i)
    if (errors_[i]) std::rethrow_exception(errors_[i]);
}

}  // namespace trib::ps
