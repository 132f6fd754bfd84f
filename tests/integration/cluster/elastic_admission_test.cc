// Admission of workers beyond cluster.workers (cluster.max_workers) over loopback TCP: a
// joiner without an index takes the next free one and starts a new generation; one beyond
// max_workers is refused, naming the limit; a worker that leaves a job that goes on frees
// its index for a later joiner.
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

class ElasticAdmission : public ::testing::Test {
 protected:
  std::shared_ptr<net::Transport> transport(const std::string& role) {
    return std::make_shared<net::TcpTransport>(net::NetContext::create(secret_, {role, 0, ""}));
  }
  void start(int max_workers) {
    coordinator_ = std::make_unique<Coordinator>(
        transport("coordinator"), CoordinatorOptions{.job_yaml = "name: t\n", .run_dir = "/tmp/x", .ps = 1,
                                                     .workers = 2, .max_workers = max_workers,
                                                     .workers_may_be_lost = true});
  }
  std::unique_ptr<Member> join(const std::string& role, int index = -1) {
    return std::make_unique<Member>(transport(role), coordinator_->address(), role, Millis(5000), index);
  }

  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(ElasticAdmission, AJoinerTakesTheNextFreeIndexUpToMaxWorkersInANewGeneration) {
  start(3);
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  auto joiner = join("worker");
  EXPECT_EQ(joiner->membership().index, 2);
  EXPECT_GT(joiner->membership().incarnation, w1->membership().incarnation) << "a new generation";
  EXPECT_EQ(joiner->membership().workers, 2) << "the job's starting workers";
  EXPECT_EQ(joiner->membership().max_workers, 3);
  try {
    join("worker");
    FAIL() << "a fourth worker was admitted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("the job already has its 3 worker role(s) (cluster.max_workers)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(join("worker", 3), InvalidArgument) << "index 3 is beyond max_workers";
}

TEST_F(ElasticAdmission, ALeavingWorkerFreesItsIndexButTheChiefsIsNeverReused) {
  start(3);
  auto w0 = join("worker", 0);
  auto w1 = join("worker", 1);
  auto w2 = join("worker");
  w1->leave();  // SIGTERM, or trib scale: it leaves a job that goes on
  auto again = join("worker");
  EXPECT_EQ(again->membership().index, 1);
  EXPECT_THROW(join("worker"), InvalidArgument) << "0, 1 and 2 are held";
}

// An evicted process that says it leaves after its index was taken again must not free the
// new holder's index.
TEST_F(ElasticAdmission, AnEvictedProcesssLateLeaveDoesNotFreeItsSuccessorsIndex) {
  start(3);
  auto w0 = join("worker", 0);
  auto old = join("worker", 1);
  ASSERT_TRUE(coordinator_->member_lost("worker", 1, "was stopped (SIGSTOP)"));
  auto successor = join("worker", 1);
  try {
    old->leave();
  } catch (const Error&) {
    // Its connection may be gone already: then nothing reached the coordinator.
  }
  EXPECT_EQ(join("worker")->membership().index, 2) << "index 1 is still the successor's";
}

// A worker that leaves is destroyed at once, while the coordinator pushes the roster of its
// own leave (and of others' comings and goings) to it: the push's handler must not outlive
// the Member (it did: a heap corruption in a worker leaving on SIGTERM).
TEST_F(ElasticAdmission, AMemberDestroyedRightAfterLeavingIsNotTouchedByALatePush) {
  start(3);
  auto w0 = join("worker", 0);
  for (int i = 0; i < 30; ++i) {
    auto w = join("worker");
    auto other = join("worker");
    w->leave();
    other->leave();
    w.reset();
    other.reset();
  }
  EXPECT_EQ(join("worker")->membership().index, 1) << "every index that left is free again";
}

TEST_F(ElasticAdmission, WithoutMaxWorkersTheJobAdmitsItsWorkersOnly) {
  start(0);
  auto w0 = join("worker", 0);
  auto w1 = join("worker");
  EXPECT_EQ(w1->membership().max_workers, 2);
  EXPECT_THROW(join("worker"), InvalidArgument);
}

}  // namespace
}  // namespace trib::cluster
