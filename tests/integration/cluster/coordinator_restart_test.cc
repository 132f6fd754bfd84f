// The coordinator is not a single point of failure: its members keep going without it,
// reconnect with backoff, and a coordinator restarted on the same journal takes the running
// job back in a later generation (members in-process, over authenticated loopback TCP).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <unistd.h>

#include "trib/cluster/coordinator.h"
#include "trib/cluster/member.h"
#include "trib/cluster/membership_keys.h"
#include "trib/core/error.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class CoordinatorRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trib_coordinator_restart_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  std::unique_ptr<Coordinator> coordinator(const std::string& listen, const std::string& job = "name: t\n",
                                           bool servers_may_be_lost = false, Millis rejoin_grace = Millis(30000)) {
    return std::make_unique<Coordinator>(transport("coordinator"),
                                         CoordinatorOptions{.listen = listen,
                                                            .job_yaml = job,
                                                            .run_dir = dir_.string(),
                                                            .ps = 1,
                                                            .workers = 2,
                                                            .workers_may_be_lost = true,
                                                            .servers_may_be_lost = servers_may_be_lost,
                                                            .journal = (dir_ / "coordinator-journal.json").string(),
                                                            .rejoin_grace = rejoin_grace});
  }
  std::unique_ptr<Member> join(const std::string& address, const std::string& role, int index) {
    auto m = std::make_unique<Member>(transport(role), address, role, Millis(5000), index);
    m->set_reconnect({.give_up = Millis(60000), .first_backoff = Millis(50), .max_backoff = Millis(200),
                      .info = [](const std::string&) {}});
    return m;
  }
  static bool eventually(const std::function<bool()>& done) {
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!done() && Clock::now() < until) std::this_thread::sleep_for(Millis(20));
    return done();
  }

  fs::path dir_;
  net::ClusterSecret secret_ = net::ClusterSecret::generate();
};

TEST_F(CoordinatorRestartTest, MembersReconnectToARestartedCoordinatorThatTakesTheJobBackInALaterGeneration) {
  auto first = coordinator("127.0.0.1:0");
  const std::string address = first->address();
  auto ps = join(address, "ps", 0);
  auto w0 = join(address, "worker", 0);
  auto w1 = join(address, "worker", 1);
  w0->store().set("ps/0/address", "127.0.0.1:1234");
  ASSERT_TRUE(eventually([&] { return w1->generation() == first->roster().generation; }));
  const std::int64_t before = first->roster().generation;
  const std::int64_t w1_incarnation = w1->membership().incarnation;

  first.reset();  // gone without a word, as if killed: the journal stays as it was
  ASSERT_TRUE(eventually([&] { return !w0->connected() && !w1->connected() && !ps->connected(); }));
  // Meanwhile the members keep what they knew, and a store request waits for the coordinator.
  EXPECT_EQ(w1->generation(), before);
  std::thread reader([&] { EXPECT_EQ(w1->store().try_get("ps/0/address").value_or(""), "127.0.0.1:1234"); });

  auto second = coordinator(address);
  EXPECT_TRUE(second->restart().running);
  EXPECT_EQ(second->restart().generation, before);
  EXPECT_EQ(second->restart().awaiting, 3);
  ASSERT_TRUE(eventually([&] { return w0->connected() && w1->connected() && ps->connected(); }));
  reader.join();
  EXPECT_GE(w0->reconnections(), 1);
  // Every member hears a generation newer than any before the restart, and keeps its
  // incarnation: the servers go on accepting what it sends.
  ASSERT_TRUE(eventually([&] { return w0->generation() == second->roster().generation; }));
  EXPECT_GT(w0->generation(), before);
  RosterView r = second->roster();
  EXPECT_EQ(r.members.size(), 3u);
  for (const RosterEntry& e : r.members) {
    if (e.role == "worker" && e.index == 1) {
      EXPECT_EQ(e.incarnation, w1_incarnation);
    }
  }
  EXPECT_EQ(second->store().try_get("ps/0/address").value_or(""), "127.0.0.1:1234");

  // The job finishes with the new coordinator: the workers it took back are the ones it waits for.
  w0->leave();
  w1->leave();
  Outcome o = second->wait(Millis(10000));
  EXPECT_TRUE(o.ok) << o.failure;
  const std::int64_t last = second->roster().generation;
  ps.reset();
  w0.reset();
  w1.reset();
  second.reset();

  // That job is over: a coordinator started on the same run directory begins a new
  // membership, still in a later generation.
  auto third = coordinator("127.0.0.1:0");
  EXPECT_FALSE(third->restart().running);
  EXPECT_GT(third->roster().generation, last);
}

TEST_F(CoordinatorRestartTest, AWorkerLeavingTwiceIsCountedOnce) {
  auto c = coordinator("127.0.0.1:0");
  auto w0 = join(c->address(), "worker", 0);
  auto w1 = join(c->address(), "worker", 1);
  w1->leave();
  w1->leave();  // a leave sent again after its connection broke
  EXPECT_THROW(c->wait(Millis(300)), Timeout) << "worker 0 has not left";
  w0->leave();
  EXPECT_TRUE(c->wait(Millis(10000)).ok);
}

TEST_F(CoordinatorRestartTest, AJournalOfAnotherRunningJobIsRefused) {
  auto c = coordinator("127.0.0.1:0");
  auto w0 = join(c->address(), "worker", 0);
  c.reset();
  try {
    coordinator("127.0.0.1:0", "name: other\n");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("coordinator-journal.json holds a running job with another configuration"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CoordinatorRestartTest, AMemberGivesUpOnlyAfterTheCoordinatorTimeout) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto c = coordinator("127.0.0.1:0");
        auto w0 = std::make_unique<Member>(transport("worker"), c->address(), "worker", Millis(5000), 0);
        w0->set_reconnect({.give_up = Millis(1500), .first_backoff = Millis(100), .max_backoff = Millis(200)});
        c.reset();
        std::this_thread::sleep_for(std::chrono::seconds(20));
      },
      ::testing::ExitedWithCode(3), "worker 0 found no coordinator at 127.0.0.1:[0-9]+ for [0-9] s \\(cluster.coordinator_timeout_s = 1");
}

// A server that a supervisor relaunches (`trib coordinator` jobs of the ps strategy) and that
// does not reconnect to a restarted coordinator in time is lost like any server lost while it
// ran: the job goes on, and its index is free for the relaunched process. Without that policy
// the job ends, naming it.
TEST_F(CoordinatorRestartTest, AServerNotBackAfterTheRestartIsLostAndItsIndexFreedWhenSupervisorsRelaunchServers) {
  for (bool relaunched : {true, false}) {
    SCOPED_TRACE(relaunched ? "servers_may_be_lost" : "servers may not be lost");
    fs::remove(dir_ / "coordinator-journal.json");
    auto first = coordinator("127.0.0.1:0", "name: t\n", relaunched, Millis(500));
    const std::string address = first->address();
    auto ps = join(address, "ps", 0);
    ps->store().set("ps/0/address", "127.0.0.1:1234");  // it served
    auto w0 = join(address, "worker", 0);
    first.reset();
    ps.reset();  // gone with the coordinator: it never reconnects
    auto second = coordinator(address, "name: t\n", relaunched, Millis(500));
    ASSERT_TRUE(eventually([&] { return w0->connected(); }));
    if (!relaunched) {
      Outcome o = second->wait(Millis(10000));
      EXPECT_FALSE(o.ok);
      EXPECT_NE(o.failure.find("ps 0 at"), std::string::npos) << o.failure;
      EXPECT_NE(o.failure.find("did not reconnect within"), std::string::npos) << o.failure;
      continue;
    }
    ASSERT_TRUE(eventually([&] {
      EXPECT_THROW(second->wait(Millis(50)), Timeout) << "the job goes on";
      return second->store().try_get(membership_key::lost("ps", 0)).value_or("") != "";
    }));
    auto back = join(address, "ps", 0);  // the supervisor's relaunch takes index 0 again
    EXPECT_EQ(back->membership().index, 0);
    EXPECT_EQ(second->store().try_get(membership_key::lost("ps", 0)).value_or("x"), "");
    w0->leave();
    auto w1 = join(address, "worker", 1);
    w1->leave();
    EXPECT_TRUE(second->wait(Millis(10000)).ok);
  }
}

// A server lost before it served (it never published its address: a port in use, a bad
// --bind) failed to start, and its relaunch would fail the same way: the job ends, naming it,
// even where supervisors relaunch servers.
TEST_F(CoordinatorRestartTest, AServerLostBeforeItServedEndsTheJobEvenWhenServersAreRelaunched) {
  auto c = coordinator("127.0.0.1:0", "name: t\n", /*servers_may_be_lost=*/true);
  auto w0 = join(c->address(), "worker", 0);
  auto ps = join(c->address(), "ps", 0);
  ps.reset();
  Outcome o = c->wait(Millis(10000));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("ps 0 at"), std::string::npos) << o.failure;
}

}  // namespace
}  // namespace trib::cluster
