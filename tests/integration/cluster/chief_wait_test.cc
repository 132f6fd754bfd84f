// The coordinator's wait for a lost chief (CoordinatorOptions::chief_wait), as under `trib
// coordinator`: members over authenticated loopback TCP in this process. A lost worker 0 is
// waited for (the job is not over while it is away, even once the others have left) and a new
// worker 0 takes its index back, told that it takes the run back; past the bound, after an
// error the chief reported, or past its returns, the job ends with the resume line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trib/cluster/coordinator.h"
#include "trib/cluster/member.h"
#include "trib/cluster/membership_keys.h"
#include "trib/core/error.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {
namespace {

class ChiefWaitTest : public ::testing::Test {
 protected:
  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  void start(Millis chief_wait, int chief_returns = 3, bool chief_may_be_lost = true, const std::string& listen = "127.0.0.1:0",
             const std::string& journal = "") {
    coordinator_ = std::make_unique<Coordinator>(
        transport("coordinator"),
        CoordinatorOptions{.listen = listen, .job_yaml = "name: t\n", .run_dir = "/runs/t", .ps = 0, .workers = 2,
                           .workers_may_be_lost = true, .chief_may_be_lost = chief_may_be_lost,
                           .chief_wait = chief_wait, .chief_returns = chief_returns,
                           .chief_not_relaunched = " in a stream job (its Kafka positions are the chief's to commit)",
                           .journal = journal,
                           .info = [this](const std::string& line) {
                             std::lock_guard lock(mu_);
                             lines_.push_back(line);
                           }});
  }
  std::unique_ptr<Member> join(const std::string& role, int index) {
    return std::make_unique<Member>(transport(role), coordinator_->address(), role, Millis(5000), index);
  }
  // Waits (bounded) until worker 0 is listed as lost in the roster.
  bool chief_lost() {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      if (!coordinator_->store().try_get(membership_key::lost("worker", 0)).value_or("").empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Worker 0 and 1 join; worker 0 (after `before`, if given) goes away without leaving; the
  // job's failure, which it must end with.
  std::string failure_after_losing_the_chief(const std::function<void(Member&)>& before = {}) {
    auto w0 = join("worker", 0);
    auto w1 = join("worker", 1);
    if (before) before(*w0);
    w0.reset();
    Outcome o = coordinator_->wait(Millis(20000));
    EXPECT_FALSE(o.ok);
    return o.failure;
  }
  std::string relaunched() { return coordinator_->store().try_get(membership_key::kChiefRelaunched).value_or(""); }
  bool printed(const std::string& text) {
    std::lock_guard lock(mu_);
    for (const std::string& l : lines_)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
  std::string all_lines() {
    std::lock_guard lock(mu_);
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    return out;
  }

  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::mutex mu_;  // the coordinator reports from its connections' threads
  std::vector<std::string> lines_;
  std::unique_ptr<Coordinator> coordinator_;  // goes first: it reports into lines_
};

TEST_F(ChiefWaitTest, ALostChiefIsWaitedForAndANewWorker0TakesTheRunBack) {
  start(Millis(60000));
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  EXPECT_EQ(relaunched(), "");
  w0.reset();  // killed: its connection closes
  ASSERT_TRUE(chief_lost());
  EXPECT_EQ(relaunched(), "1") << "the next worker 0 takes the run back";
  EXPECT_TRUE(printed("the job waits up to 60 s (cluster.join_timeout_s) for worker 0, the chief, to come back: its "
                      "node's supervisor starts it again with the same command (trib worker --index 0 ...)"))
      << all_lines();
  // The others finishing does not end the job: the chief has the run's end to write.
  w1->leave();
  EXPECT_THROW(coordinator_->wait(Millis(600)), Timeout);

  auto again = join("worker", 0);
  EXPECT_EQ(again->membership().index, 0);
  EXPECT_EQ(again->membership().run_dir, "/runs/t");
  EXPECT_EQ(coordinator_->store().try_get(membership_key::lost("worker", 0)).value_or(""), "");
  EXPECT_TRUE(printed("coordinator: worker 0 (the chief) came back from")) << all_lines();
  again->leave();
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_TRUE(o.ok) << o.failure;
}

TEST_F(ChiefWaitTest, NobodyComingBackWithinTheBoundEndsTheJobWithTheResumeLine) {
  start(Millis(1000));
  const std::string failure = failure_after_losing_the_chief();
  EXPECT_NE(failure.find("it is the chief, and it did not come back within 1 s (cluster.join_timeout_s), so the job "
                         "ends: resume it from its newest checkpoint with --resume /runs/t"),
            std::string::npos)
      << failure;
  // A worker 0 started now is told why it is refused.
  EXPECT_THROW(join("worker", 0), InvalidArgument);
}

TEST_F(ChiefWaitTest, AChiefThatFailedWithAnErrorEndsTheJobAtOnce) {
  start(Millis(60000));
  const std::string failure = failure_after_losing_the_chief(
      [](Member& chief) { chief.store().set(membership_key::kChiefFailed, "data file /d/train.gz: not found"); });
  EXPECT_NE(failure.find("it is the chief, which failed with an error (data file /d/train.gz: not found) that a "
                         "restart would repeat, so the job ends: resume it"),
            std::string::npos)
      << failure;
}

TEST_F(ChiefWaitTest, AChiefLostMoreTimesThanMaxRestartsEndsTheJob) {
  start(Millis(60000), /*chief_returns=*/1);
  auto w1 = join("worker", 1);
  auto w0 = join("worker", 0);
  w0.reset();
  ASSERT_TRUE(chief_lost());
  w0 = join("worker", 0);  // back once
  EXPECT_EQ(relaunched(), "1");
  w0.reset();  // and lost again
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("it is the chief, lost 2 times, more than cluster.max_restarts (1) allows, so the job ends"),
            std::string::npos)
      << o.failure;
}

TEST_F(ChiefWaitTest, AChiefThatMayNotBeLostEndsTheJobSayingWhy) {
  start(Millis(60000), 3, /*chief_may_be_lost=*/false);
  const std::string failure = failure_after_losing_the_chief();
  EXPECT_NE(failure.find("it is the chief, which is not relaunched in place in a stream job (its Kafka positions "
                         "are the chief's to commit), so the job ends: resume it from its newest checkpoint with "
                         "--resume /runs/t"),
            std::string::npos)
      << failure;
  EXPECT_EQ(relaunched(), "");
}

// A coordinator restarted from its journal while the chief is away waits for it again: the other
// worker reconnecting and finishing does not end the job; a new worker 0 does.
TEST_F(ChiefWaitTest, ACoordinatorRestartedWhileTheChiefIsAwayWaitsForItAgain) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("trib_chief_wait_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string journal = (dir / "coordinator-journal.json").string();
  start(Millis(60000), 3, true, "127.0.0.1:0", journal);
  const std::string address = coordinator_->address();
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  w1->set_reconnect({.give_up = Millis(60000), .first_backoff = Millis(50), .max_backoff = Millis(200),
                     .info = [](const std::string&) {}});
  w0.reset();
  ASSERT_TRUE(chief_lost());
  coordinator_.reset();  // gone without a word: the journal stays as it was
  start(Millis(60000), 3, true, address, journal);
  EXPECT_TRUE(coordinator_->restart().running);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!w1->connected() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(Millis(20));
  ASSERT_TRUE(w1->connected());
  w1->leave();
  EXPECT_THROW(coordinator_->wait(Millis(600)), Timeout);  // the chief has the run's end to write

  auto again = join("worker", 0);
  EXPECT_EQ(relaunched(), "1") << "the journal kept it: the new worker 0 takes the run back";
  again->leave();
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_TRUE(o.ok) << o.failure;
  coordinator_.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trib::cluster
