#include "net/serial_executor.h"

namespace trib::net {

void join_or_detach(std::thread& thread) {
  if (!thread.joinable()) return;
  if (thread.get_id() == std::this_thread::get_id()) {
    thread.detach();
  } else {
    thread.join();
  }
}

SerialExecutor::SerialExecutor()
    : state_(std::make_shared<State>()), worker_([state = state_] { work(state); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    state_->tasks.clear();
  }
  state_->cv.notify_all();
  join_or_detach(worker_);
}

void SerialExecutor::submit(std::function<void()> task) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->stopping) return;
    state_->tasks.push_back(std::move(task));
  }
  state_->cv.notify_one();
}

void SerialExecutor::work(const std::shared_ptr<State>& state) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(state->mu);
      state->cv.wait(lock, [&] { return state->stopping || !state->tasks.empty(); });
      if (state->stopping) return;
      task = std::move(state->tasks.front());
      state->tasks.pop_front();
    }
    task();
  }
}

}  // namespace trib::net
