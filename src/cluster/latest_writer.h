// Hands the newest of a series of values to `write`, on a thread of its own. Each value is
// whole (a roster, a journal), so one posted while another is being written replaces any not
// written yet: the writer never falls behind, and never blocks the poster on the network (the
// coordinator posts under its lock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace trib::cluster {

class LatestWriter {
 public:
  // `write` runs on the writer's thread; what it throws is its own business (caught there).
  explicit LatestWriter(std::function<void(const std::string&)> write);
  ~LatestWriter();  // stop()
  LatestWriter(const LatestWriter&) = delete;
  LatestWriter& operator=(const LatestWriter&) = delete;

  // Queues `value` (replacing one not written yet). Cheap: callable under any lock.
  void post(std::string value);
  // Waits until everything posted before this call has been written or superseded (or stop()).
  void flush();
  // Stops the thread; a value not written yet is dropped. Idempotent.
  void stop();

 private:
  void run();

  std::function<void(const std::string&)> write_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> pending_;
  std::uint64_t posted_ = 0;   // values given to post()
  std::uint64_t written_ = 0;  // of those, how many are written or superseded
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace trib::cluster
