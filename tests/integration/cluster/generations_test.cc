// Membership generations over authenticated loopback TCP: every join, leave and loss starts
// a new generation, which the coordinator publishes in its store and pushes to its members.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "trib/cluster/coordinator.h"
#include "trib/cluster/member.h"
#include "trib/cluster/membership_keys.h"
#include "trib/core/error.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {
namespace {

class GenerationsTest : public ::testing::Test {
 protected:
  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  void start(bool workers_may_be_lost) {
    coordinator_ = std::make_unique<Coordinator>(
        transport("coordinator"), CoordinatorOptions{.job_yaml = "name: t\n", .run_dir = "/tmp/x", .ps = 1, .workers = 3,
                                                     .workers_may_be_lost = workers_may_be_lost});
  }
  std::unique_ptr<Member> join(const std::string& role, int index = -1) {
    return std::make_unique<Member>(transport(role), coordinator_->address(), role, Millis(5000), index);
  }
  std::int64_t published_generation() {
    return std::stoll(coordinator_->store().try_get(membership_key::kGeneration).value());
  }
  // Waits (bounded) until `member` has heard of generation `g` or newer.
  static RosterView heard(Member& member, std::int64_t g) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    RosterView r = member.roster();
    while (r.generation < g && std::chrono::steady_clock::now() < until) r = member.wait_for_change(r.generation, Millis(500));
    return r;
  }
  static bool has(const RosterView& r, const std::string& role, int index) {
    for (const RosterEntry& e : r.members)
      if (e.role == role && e.index == index) return true;
    return false;
  }

  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(GenerationsTest, EveryJoinLeaveAndLossStartsANewGenerationThatMembersHear) {
  start(/*workers_may_be_lost=*/true);
  auto w0 = join("worker", 0);
  const std::int64_t g_w0 = w0->membership().incarnation;
  EXPECT_GT(g_w0, 0);
  EXPECT_EQ(published_generation(), g_w0);

  auto ps = join("ps", 0);
  EXPECT_GT(ps->membership().incarnation, g_w0);
  auto w1 = join("worker", 1);
  const std::int64_t g_w1 = w1->membership().incarnation;
  EXPECT_GT(g_w1, ps->membership().incarnation);
  RosterView seen = heard(*w0, g_w1);
  EXPECT_EQ(seen.generation, g_w1);
  EXPECT_TRUE(has(seen, "worker", 1));
  EXPECT_EQ(w0->generation(), g_w1);

  // Worker 1's process goes away without leaving: it is lost, and the job goes on.
  w1.reset();
  seen = heard(*w0, g_w1 + 1);
  EXPECT_EQ(seen.generation, g_w1 + 1);
  EXPECT_FALSE(has(seen, "worker", 1));
  ASSERT_EQ(seen.lost.size(), 1u);
  EXPECT_EQ(seen.lost[0].index, 1);
  EXPECT_EQ(seen.lost[0].incarnation, g_w1);
  EXPECT_EQ(coordinator_->store().try_get(membership_key::lost("worker", 1)).value(), std::to_string(g_w1 + 1));
  EXPECT_EQ(heard(*ps, g_w1 + 1).generation, g_w1 + 1);  // servers hear it too

  // Its index is free: a new member takes it, as a newer incarnation, and the loss is cleared.
  auto again = join("worker", 1);
  EXPECT_EQ(again->membership().index, 1);
  EXPECT_EQ(again->membership().incarnation, g_w1 + 2);
  EXPECT_EQ(coordinator_->store().try_get(membership_key::lost("worker", 1)).value(), "");
  seen = heard(*w0, g_w1 + 2);
  EXPECT_TRUE(has(seen, "worker", 1));
  EXPECT_TRUE(seen.lost.empty());

  // A clean leave is a change too.
  again->leave();
  EXPECT_EQ(heard(*w0, g_w1 + 3).generation, g_w1 + 3);
  EXPECT_EQ(published_generation(), g_w1 + 3);
}

TEST_F(GenerationsTest, ALostServerOrChiefStillEndsTheJobNamingIt) {
  start(/*workers_may_be_lost=*/true);
  auto w0 = join("worker", 0);
  auto ps = join("ps", 0);
  ps.reset();
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("ps 0 at"), std::string::npos) << o.failure;
  EXPECT_NE(o.failure.find("was lost"), std::string::npos) << o.failure;
}

TEST_F(GenerationsTest, WithoutThePolicyALostWorkerEndsTheJob) {
  start(/*workers_may_be_lost=*/false);
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  w1.reset();
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("worker 1 at"), std::string::npos) << o.failure;
  // The index stays taken: the job is over.
  EXPECT_THROW(join("worker", 1), InvalidArgument);
}

TEST_F(GenerationsTest, AJobGoesOnWithoutALostWorkerAndFinishesWhenTheOthersLeave) {
  start(/*workers_may_be_lost=*/true);
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  auto w2 = join("worker", 2);
  const std::int64_t g = w2->membership().incarnation;
  w2.reset();
  EXPECT_EQ(heard(*w0, g + 1).generation, g + 1);
  w0->leave();
  w1->leave();
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_TRUE(o.ok) << o.failure;
}

// A launcher that sees a process end reports it: the same eviction as a lost connection.
TEST_F(GenerationsTest, ALauncherReportedLossEvictsAsALostConnectionDoes) {
  start(/*workers_may_be_lost=*/true);
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  const std::int64_t g = w1->membership().incarnation;
  EXPECT_TRUE(coordinator_->member_lost("worker", 1, "was killed by signal 9"));
  EXPECT_EQ(published_generation(), g + 1);
  RosterView r = coordinator_->roster();
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_EQ(r.lost[0].reason, "was killed by signal 9");
  w1.reset();  // its connection closing after that changes nothing more
  EXPECT_TRUE(coordinator_->member_lost("worker", 1, "was killed by signal 9")) << "already evicted";
  EXPECT_EQ(join("worker", 1)->membership().incarnation, g + 2);

  EXPECT_FALSE(coordinator_->member_lost("worker", 0, "was killed by signal 9"));
  Outcome o = coordinator_->wait(Millis(10000));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("worker 0 at"), std::string::npos) << o.failure;
  EXPECT_NE(o.failure.find("was killed by signal 9"), std::string::npos) << o.failure;
}

}  // namespace
}  // namespace trib::cluster
