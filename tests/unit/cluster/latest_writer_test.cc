// LatestWriter: values are written on its own thread, newest first-come; a burst posted while
// one is being written leaves only its newest to write; flush() waits for what came before it;
// a writer that throws does not stop the next value.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cluster/latest_writer.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

TEST(LatestWriter, ABurstWhileWritingLeavesOnlyItsNewestAndFlushWaitsForIt) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, writing = false;
  std::vector<std::string> written;
  std::thread::id writer_thread;
  LatestWriter w([&](const std::string& v) {
    std::unique_lock lock(mu);
    writer_thread = std::this_thread::get_id();
    writing = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    written.push_back(v);
  });
  w.post("a");
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return writing; });  // "a" is being written
  }
  w.post("b");
  w.post("c");
  w.post("d");
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  w.flush();
  std::lock_guard lock(mu);
  EXPECT_EQ(written, (std::vector<std::string>{"a", "d"}));
  EXPECT_NE(writer_thread, std::this_thread::get_id());
}

TEST(LatestWriter, AFailedWriteDoesNotStopTheNextAndStopDropsWhatIsPending) {
  std::vector<std::string> written;
  LatestWriter w([&](const std::string& v) {
    if (v == "bad") throw Unavailable("no member answered");
    written.push_back(v);
  });
  w.post("bad");
  w.flush();
  w.post("good");
  w.flush();
  EXPECT_EQ(written, (std::vector<std::string>{"good"}));
  w.stop();
  w.post("late");
  w.flush();  // returns at once once stopped
  w.stop();   // idempotent
  EXPECT_EQ(written, (std::vector<std::string>{"good"}));
}

}  // namespace
}  // namespace trib::cluster
