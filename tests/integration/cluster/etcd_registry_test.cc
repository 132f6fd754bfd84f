// EtcdRegistry against a real 3-member etcd on loopback: generations, watches, leases that
// lapse when their member freezes (SIGSTOP of a real process), eviction, and a lost member.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <future>
#include <thread>

#include "integration/cluster/etcd_test_cluster.h"
#include "trib/cluster/etcd_registry.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::EtcdTestCluster;

EtcdOptions rotated(EtcdOptions o, int by) {
  std::rotate(o.endpoints.begin(), o.endpoints.begin() + by, o.endpoints.end());
  return o;
}

// Waits (bounded) until `pred` holds of the roster; returns the last roster read.
template <typename Pred>
Roster wait_until(Registry& reg, Pred pred, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  Roster r = reg.roster();
  while (!pred(r) && Clock::now() < until) r = reg.wait_for_change(r.generation, until);
  return r;
}

class EtcdRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdTestCluster::binary())
      GTEST_SKIP() << "etcd is not installed (Debian package etcd-server; scripts/install-deps.sh installs it)";
    etcd_ = std::make_unique<EtcdTestCluster>(3);
  }
  std::unique_ptr<EtcdTestCluster> etcd_;
};

TEST_F(EtcdRegistryTest, EveryChangeStartsAGenerationThatEveryoneReadsAlike) {
  EtcdRegistry a(etcd_->options("j"));
  EtcdRegistry b(rotated(etcd_->options("j"), 1));
  EXPECT_EQ(a.roster().generation, 0);
  auto w0 = a.enter("worker/0", "h:1", 5000ms);
  Roster g1 = b.roster();
  EXPECT_GT(g1.generation, 0);
  EXPECT_EQ(g1.members, (std::map<std::string, std::string>{{"worker/0", "h:1"}}));
  EXPECT_EQ(a.roster().generation, g1.generation) << "readers through different members disagree";
  EXPECT_EQ(a.roster().generation, g1.generation) << "a read with no change moved the generation";
  auto w1 = b.enter("worker/1", "h:2", 5000ms);
  Roster g2 = a.roster();
  EXPECT_GT(g2.generation, g1.generation);
  EXPECT_EQ(g2.members.size(), 2u);
  w1.reset();  // leaves: the lease is revoked and the key goes at once
  Roster g3 = b.roster();
  EXPECT_GT(g3.generation, g2.generation);
  EXPECT_EQ(g3.members, g1.members);
  EtcdRegistry other_job(etcd_->options("k"));
  EXPECT_TRUE(other_job.roster().members.empty()) << "jobs share the cluster but not their rosters";
}

TEST_F(EtcdRegistryTest, ANameTakenIsRefused) {
  EtcdRegistry a(etcd_->options("j"));
  auto p = a.enter("ps/0", "x", 5000ms);
  try {
    EtcdRegistry(rotated(etcd_->options("j"), 2)).enter("ps/0", "y", 5000ms);
    FAIL() << "a second ps/0 entered";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("member 'ps/0' is already registered"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.roster().members.at("ps/0"), "x");
}

TEST_F(EtcdRegistryTest, ARegistrationOutlivesItsRegistry) {
  auto reg = std::make_unique<EtcdRegistry>(etcd_->options("j"));
  auto w = reg->enter("worker/0", "x", 2000ms);
  reg.reset();
  std::this_thread::sleep_for(2500ms);  // longer than the TTL: renewals go on without the registry
  EXPECT_TRUE(w->alive());
  EtcdRegistry other(rotated(etcd_->options("j"), 1));
  EXPECT_EQ(other.roster().members.count("worker/0"), 1u);
  w.reset();
  EXPECT_EQ(other.roster().members.count("worker/0"), 0u);
}

TEST_F(EtcdRegistryTest, AWatcherHearsOfAJoinThroughAnotherMember) {
  EtcdRegistry a(etcd_->options("j"));
  EtcdRegistry b(rotated(etcd_->options("j"), 2));
  auto w0 = a.enter("worker/0", "x", 5000ms);
  std::int64_t seen = a.roster().generation;
  auto heard = std::async(std::launch::async, [&] { return a.wait_for_change(seen, Clock::now() + 20s); });
  std::this_thread::sleep_for(200ms);
  auto w1 = b.enter("worker/1", "y", 5000ms);
  Roster r = heard.get();
  EXPECT_GT(r.generation, seen);
  EXPECT_EQ(r.members.count("worker/1"), 1u);
}

TEST_F(EtcdRegistryTest, AnEvictedMemberIsDroppedAndToldSo) {
  EtcdRegistry a(etcd_->options("j"));
  EtcdRegistry coordinator(rotated(etcd_->options("j"), 1));
  auto w = a.enter("worker/3", "x", 2000ms);
  std::int64_t before = coordinator.roster().generation;
  coordinator.evict("worker/3");
  Roster after = coordinator.roster();
  EXPECT_FALSE(after.members.contains("worker/3"));
  EXPECT_GT(after.generation, before);
  // Its next renewal (every third of the TTL) finds its lease gone.
  auto until = Clock::now() + 10s;
  while (w->alive() && Clock::now() < until) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w->alive());
  coordinator.evict("worker/3");  // gone already: nothing changes
  EXPECT_EQ(coordinator.roster().generation, after.generation);
  auto again = a.enter("worker/3", "x2", 2000ms);  // it comes back as a new member
  EXPECT_EQ(coordinator.roster().members.at("worker/3"), "x2");
}

// A member in its own process: enters, says so on `out`, and then, each time it reads a
// byte on `in`, answers whether its registration is still alive ('A') or dropped ('D').
[[noreturn]] void run_member(const EtcdOptions& options, int in, int out) {
  try {
    EtcdRegistry reg(options);
    auto me = reg.enter("worker/9", "child", 2000ms);
    char c = 'R';
    if (::write(out, &c, 1) != 1) ::_exit(2);
    while (::read(in, &c, 1) == 1) {
      // Give a renewal the chance to run (a third of the TTL) before answering.
      auto until = Clock::now() + 3s;
      while (me->alive() && Clock::now() < until) std::this_thread::sleep_for(50ms);
      c = me->alive() ? 'A' : 'D';
      if (::write(out, &c, 1) != 1) ::_exit(2);
    }
    ::_exit(0);
  } catch (...) {
    ::_exit(1);
  }
}

// Reads one byte from fd within `timeout`; '\0' if none came.
char read_byte(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1 && ::read(fd, &c, 1) == 1) return c;
  return '\0';
}

TEST_F(EtcdRegistryTest, AFrozenMemberVanishesWithinItsTtlAndLearnsItOnWaking) {
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  EtcdOptions options = etcd_->options("j");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    run_member(options, to_child[0], from_child[1]);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{child};

  ASSERT_EQ(read_byte(from_child[0], 20s), 'R') << "the member process did not enter";
  EtcdRegistry watcher(rotated(etcd_->options("j"), 1));
  Roster entered = watcher.roster();
  ASSERT_EQ(entered.members.count("worker/9"), 1u);

  ASSERT_EQ(::kill(child, SIGSTOP), 0);  // frozen: it renews nothing, and tells no one
  Roster gone = wait_until(watcher, [](const Roster& r) { return !r.members.contains("worker/9"); }, 15s);
  EXPECT_FALSE(gone.members.contains("worker/9")) << "a frozen member outlived its 2 s lease by 15 s";
  EXPECT_GT(gone.generation, entered.generation);

  ASSERT_EQ(::kill(child, SIGCONT), 0);
  char ask = '?';
  ASSERT_EQ(::write(to_child[1], &ask, 1), 1);
  EXPECT_EQ(read_byte(from_child[0], 20s), 'D') << "the woken member still believes it is in";
  EXPECT_FALSE(watcher.roster().members.contains("worker/9")) << "the woken member came back by itself";
  ::close(to_child[1]);
  ::close(from_child[0]);
}

TEST_F(EtcdRegistryTest, LosingTheLeaderLosesNoMemberAndNoGeneration) {
  int victim = etcd_->leader();
  ASSERT_GE(victim, 0) << "no member reports being the leader";
  EtcdRegistry a(rotated(etcd_->options("j"), victim));
  EtcdRegistry b(rotated(etcd_->options("j"), (victim + 1) % 3));
  auto w0 = a.enter("worker/0", "x", 2000ms);
  std::int64_t before = b.roster().generation;
  auto heard = std::async(std::launch::async, [&] { return a.wait_for_change(before, Clock::now() + 30s); });
  etcd_->kill(victim);
  // Longer than the TTL: the renewals must have moved to the members left.
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(w0->alive());
  Roster r = a.roster();
  EXPECT_EQ(r.generation, before) << "losing an etcd member changed the job's membership";
  EXPECT_EQ(r.members.count("worker/0"), 1u);
  // Changes go on, and the watch parked on the dead member hears them.
  auto w1 = b.enter("worker/1", "y", 2000ms);
  Roster seen = heard.get();
  EXPECT_GT(seen.generation, before);
  EXPECT_EQ(seen.members.count("worker/1"), 1u);
}

TEST_F(EtcdRegistryTest, AFrozenLeaderCostsNoMemberItsLease) {
  // Frozen, not dead: connections to it open and then hear nothing, so each renewal's try
  // at it must give up in time for the next member within the TTL, even where requests
  // may otherwise wait longer than the TTL for one member.
  int victim = etcd_->leader();
  ASSERT_GE(victim, 0) << "no member reports being the leader";
  EtcdOptions o = rotated(etcd_->options("j"), victim);
  o.first_attempt_timeout = o.attempt_timeout = 3s;
  EtcdRegistry a(o);
  auto w0 = a.enter("worker/0", "x", 2000ms);
  std::int64_t before = a.roster().generation;
  etcd_->signal(victim, SIGSTOP);
  struct Wake {
    EtcdTestCluster& etcd;
    int member;
    ~Wake() { etcd.signal(member, SIGCONT); }
  } wake{*etcd_, victim};
  std::this_thread::sleep_for(6s);  // three TTLs
  EXPECT_TRUE(w0->alive());
  Roster r = a.roster();
  EXPECT_EQ(r.members.count("worker/0"), 1u);
  EXPECT_EQ(r.generation, before) << "a frozen etcd member changed the job's membership";
  auto w1 = a.enter("worker/1", "y", 2000ms);
  EXPECT_GT(a.roster().generation, before);
}

}  // namespace
}  // namespace trib::cluster

namespace trib::cluster {
namespace {

// What must outlive the coordinator's machine (its journal) is kept beside the membership:
// another process's registry of the same job reads it, also after the raft leader is lost, and
// writing it starts no generation (it is not under the keys the registry watches).
TEST_F(EtcdRegistryTest, AKeptValueOutlivesItsWriterAndALostLeaderAndStartsNoGeneration) {
  EtcdRegistry a(etcd_->options("j"));
  EXPECT_TRUE(a.durable());
  EXPECT_FALSE(a.kept("coordinator/journal"));
  auto w0 = a.enter("worker/0", "h:1", 5000ms);
  const std::int64_t g = a.roster().generation;
  a.keep("coordinator/journal", std::string("{\"v\":1}\n\x01", 9));
  a.keep("coordinator/journal", "{\"v\":2}");  // rewritten whole
  EXPECT_EQ(a.roster().generation, g);
  etcd_->kill(etcd_->leader());
  EtcdRegistry b(rotated(etcd_->options("j"), 1));
  EXPECT_EQ(b.kept("coordinator/journal").value_or(""), "{\"v\":2}");
  EtcdRegistry other_job(etcd_->options("k"));
  EXPECT_FALSE(other_job.kept("coordinator/journal")) << "jobs sharing an etcd keep apart";
}

}  // namespace
}  // namespace trib::cluster
