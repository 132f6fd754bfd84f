// One worker thread running tasks in order. Connections run request handlers here, so the
// receive thread never blocks on a handler or on sending its reply: two peers replying to
// each other's large requests cannot deadlock, and heartbeats keep being read while a
// handler works. A task may destroy the executor's owner: the worker then finishes alone.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace trib::net {

class SerialExecutor {
 public:
  SerialExecutor();
  ~SerialExecutor();  // drops queued tasks, waits for the running one (unless called by it)
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void submit(std::function<void()> task);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> tasks;
    bool stopping = false;
  };
  static void work(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;  // shared with the worker, which may outlive this object
  std::thread worker_;
};

// Joins `thread`, or detaches it when called from that very thread (an owner destroyed by
// its own thread's last reference).
void join_or_detach(std::thread& thread);

}  // namespace trib::net
