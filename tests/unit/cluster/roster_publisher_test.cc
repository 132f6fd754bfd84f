// The coordinator's roster pushes leave from a thread of their own: publish() never touches a
// connection, so a connection released for the last time after a push (its destructor joins
// threads that may wait for the coordinator's lock) is never destroyed under that lock, and a
// burst of membership changes sends only the newest roster.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cluster/roster_publisher.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

using namespace std::chrono_literals;

// A member's connection that records what it is pushed, and runs `on_destroy` when it goes.
class FakeConnection final : public net::Connection {
 public:
  std::function<void(const std::string&)> on_notify;
  std::function<void()> on_destroy;
  std::vector<std::string> pushed;
  std::thread::id notified_on;

  ~FakeConnection() override {
    if (on_destroy) on_destroy();
  }
  std::future<net::Message> request(net::Message, net::RequestOptions) override {
    throw Unavailable("a fake connection takes no requests");
  }
  void notify(net::Message message) override {
    notified_on = std::this_thread::get_id();
    pushed.push_back(message.body);
    if (on_notify) on_notify(message.body);
  }
  const net::PeerIdentity& peer() const override { return peer_; }
  bool is_open() const override { return true; }
  std::string close_reason() const override { return ""; }
  void close() override {}

 private:
  net::PeerIdentity peer_;
};

TEST(RosterPublisher, PushesEachRosterToEveryMemberFromItsOwnThread) {
  auto a = std::make_shared<FakeConnection>();
  auto b = std::make_shared<FakeConnection>();
  RosterPublisher publisher([&] { return std::vector<std::shared_ptr<net::Connection>>{a, b}; }, 7);
  publisher.publish("generation 1");
  publisher.flush();
  EXPECT_EQ(a->pushed, std::vector<std::string>{"generation 1"});
  EXPECT_EQ(b->pushed, std::vector<std::string>{"generation 1"});
  EXPECT_NE(a->notified_on, std::this_thread::get_id());
}

TEST(RosterPublisher, ABurstOfChangesSendsOnlyTheNewestInOrder) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, first_in = false;
  auto member = std::make_shared<FakeConnection>();
  member->on_notify = [&](const std::string& roster) {
    if (roster != "generation 1") return;
    std::unique_lock lock(mu);
    first_in = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });  // a member slow to take its push
  };
  RosterPublisher publisher([&] { return std::vector<std::shared_ptr<net::Connection>>{member}; }, 7);
  publisher.publish("generation 1");
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return first_in; });
  }
  // Published while the first push is still being written: the caller does not wait for it.
  const auto t0 = std::chrono::steady_clock::now();
  for (int g = 2; g <= 5; ++g) publisher.publish("generation " + std::to_string(g));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  publisher.flush();
  EXPECT_EQ(member->pushed, (std::vector<std::string>{"generation 1", "generation 5"}));
}

// The deadlock this class exists for: the caller publishes under a lock that a connection's
// destructor needs (the coordinator's, taken by the close handler of the thread it joins),
// and the push's reference is the connection's last.
TEST(RosterPublisher, AConnectionReleasedByAPushIsNotDestroyedUnderThePublishersLock) {
  std::mutex coordinator_lock;
  std::atomic<bool> destroyed{false};
  std::atomic<bool> pushed{false};
  std::shared_ptr<FakeConnection> ending = std::make_shared<FakeConnection>();
  ending->on_notify = [&](const std::string&) { pushed = true; };
  ending->on_destroy = [&] {
    std::lock_guard lock(coordinator_lock);  // the close handler reporting the loss
    destroyed = true;
  };
  std::mutex held_mu;
  std::vector<std::shared_ptr<net::Connection>> listed{ending};
  ending.reset();  // from now on only the listener's list holds it
  RosterPublisher publisher(
      [&] {
        std::lock_guard lock(held_mu);
        return std::exchange(listed, {});  // the listener reaps it: the push holds the last reference
      },
      7);
  {
    std::lock_guard lock(coordinator_lock);
    publisher.publish("generation 2");
    for (auto until = std::chrono::steady_clock::now() + 10s; !pushed && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(pushed.load());
    EXPECT_FALSE(destroyed.load()) << "destroyed while the caller's lock is held";
  }
  publisher.flush();
  EXPECT_TRUE(destroyed.load());
}

}  // namespace
}  // namespace trib::cluster
