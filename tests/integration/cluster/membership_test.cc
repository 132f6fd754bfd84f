// Joining a coordinator over authenticated loopback TCP: which index each member gets.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "trib/cluster/coordinator.h"
#include "trib/cluster/member.h"
#include "trib/core/error.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {
namespace {

class MembershipTest : public ::testing::Test {
 protected:
  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  std::unique_ptr<Member> join(const std::string& role, int index = -1) {
    return std::make_unique<Member>(transport(role), coordinator_->address(), role, Millis(5000), index);
  }
  // The error a refused join gives, or "" if it was admitted.
  std::string refusal(const std::string& role, int index) {
    try {
      join(role, index);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::unique_ptr<Coordinator> coordinator_ = std::make_unique<Coordinator>(
      transport("coordinator"), CoordinatorOptions{.job_yaml = "name: t\n", .run_dir = "/tmp/x", .ps = 1, .workers = 3});
};

TEST_F(MembershipTest, AMemberGetsTheIndexItAsksForAndOthersTheLowestFree) {
  auto w2 = join("worker", 2);
  auto a = join("worker");
  auto b = join("worker");
  EXPECT_EQ(w2->membership().index, 2);
  EXPECT_EQ(a->membership().index, 0);
  EXPECT_EQ(b->membership().index, 1);
  EXPECT_EQ(join("ps", 0)->membership().index, 0);
}

TEST_F(MembershipTest, ATakenOrOutOfRangeIndexIsRefusedWithTheReason) {
  auto w1 = join("worker", 1);
  std::string taken = refusal("worker", 1);
  EXPECT_NE(taken.find("asked to be worker 1, which has already joined"), std::string::npos) << taken;
  std::string out_of_range = refusal("worker", 3);
  EXPECT_NE(out_of_range.find("the job has 3 (0-2)"), std::string::npos) << out_of_range;
  auto w0 = join("worker");  // refusals took nothing
  EXPECT_EQ(w0->membership().index, 0);
}

}  // namespace
}  // namespace trib::cluster
