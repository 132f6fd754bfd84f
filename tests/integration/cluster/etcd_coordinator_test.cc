// A coordinator whose membership lives in a real 3-member etcd on loopback (cluster.store:
// etcd://...): generations are etcd revisions, and joins, losses and rejoins move them.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "integration/cluster/etcd_test_cluster.h"
#include "trib/cluster/coordinator.h"
#include "trib/cluster/etcd_registry.h"
#include "trib/cluster/make_registry.h"
#include "trib/cluster/member.h"
#include "trib/cluster/membership_keys.h"
#include "trib/core/error.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"

namespace trib::cluster {
namespace {

using testing::EtcdTestCluster;

class EtcdCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdTestCluster::binary())
      GTEST_SKIP() << "etcd is not installed (Debian package etcd-server; scripts/install-deps.sh installs it)";
    etcd_ = std::make_unique<EtcdTestCluster>(3);
  }
  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  std::unique_ptr<Member> join(Coordinator& c, const std::string& role, int index) {
    return std::make_unique<Member>(transport(role), c.address(), role, Millis(10000), index);
  }

  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::unique_ptr<EtcdTestCluster> etcd_;
};

TEST_F(EtcdCoordinatorTest, GenerationsAreEtcdRevisionsAndALostWorkerIndexIsTakenAgain) {
  auto registry = std::make_shared<EtcdRegistry>(etcd_->options("gen"));
  Coordinator c(transport("coordinator"), CoordinatorOptions{.job_yaml = "name: t\n", .run_dir = "/tmp/x", .ps = 1,
                                                             .workers = 2, .workers_may_be_lost = true,
                                                             .registry = registry});
  auto w0 = join(c, "worker", 0);
  auto w1 = join(c, "worker", 1);
  const std::int64_t g1 = w1->membership().incarnation;
  EXPECT_GT(g1, w0->membership().incarnation);
  EXPECT_EQ(registry->roster().members.size(), 2u);
  EXPECT_TRUE(c.member_lost("worker", 1, "was killed by signal 9"));
  const std::int64_t lost_at = std::stoll(c.store().try_get(membership_key::lost("worker", 1)).value());
  EXPECT_GT(lost_at, g1);
  EXPECT_EQ(registry->roster().members.size(), 1u) << "evicted from etcd too";
  w1.reset();
  auto again = join(c, "worker", 1);
  EXPECT_GT(again->membership().incarnation, lost_at);
  EXPECT_EQ(registry->roster().members.count("worker/1"), 1u);
}

TEST_F(EtcdCoordinatorTest, ClusterStoreNamesTheRegistry) {
  EXPECT_NE(dynamic_cast<EtcdRegistry*>(make_registry(etcd_->url(), "named").get()), nullptr);
  EXPECT_EQ(dynamic_cast<EtcdRegistry*>(make_registry("", "named").get()), nullptr);
  EXPECT_THROW(make_registry("zk://h:1", "named"), InvalidArgument);
}

}  // namespace
}  // namespace trib::cluster
