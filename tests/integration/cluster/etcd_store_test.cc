// EtcdStore against a real 3-member etcd cluster on loopback (Debian's etcd-server): the
// store's operations across members, and what happens when a member is killed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <future>
#include <set>
#include <thread>

#include "cluster/etcd_base64.h"
#include "integration/cluster/etcd_fault_proxy.h"
#include "integration/cluster/etcd_test_cluster.h"
#include "trib/cluster/etcd_store.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

using namespace std::chrono_literals;
using testing::EtcdTestCluster;

// The same cluster listed from another member first, so two stores talk to different ones.
EtcdOptions rotated(EtcdOptions o, int by) {
  std::rotate(o.endpoints.begin(), o.endpoints.begin() + by, o.endpoints.end());
  return o;
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdTestCluster::binary())
      GTEST_SKIP() << "etcd is not installed (Debian package etcd-server; scripts/install-deps.sh installs it)";
    etcd_ = std::make_unique<EtcdTestCluster>(3);
  }
  std::unique_ptr<EtcdTestCluster> etcd_;
};

TEST_F(EtcdStoreTest, SetGetAddAndScanAcrossMembers) {
  EtcdStore a(etcd_->options("job1"));
  EtcdStore b(rotated(etcd_->options("job1"), 2));
  EtcdStore other_job(etcd_->options("job2"));
  EXPECT_FALSE(a.try_get("addr/ps/0"));
  a.set("addr/ps/0", "10.0.0.1:7000");
  EXPECT_EQ(b.get("addr/ps/0", 5000ms), "10.0.0.1:7000");
  EXPECT_FALSE(other_job.try_get("addr/ps/0")) << "jobs share the cluster but not their keys";
  std::string binary("a\0b\xff", 4);
  b.set("addr/blob", binary);
  EXPECT_EQ(a.try_get("addr/blob"), binary);
  EXPECT_EQ(a.add("n", 1), 1);
  EXPECT_EQ(b.add("n", 5), 6);
  EXPECT_EQ(a.add("n", -2), 4);
  EXPECT_EQ(a.try_get("n"), "4");
  auto scan = b.scan("addr/");
  EXPECT_EQ(scan.size(), 2u);
  EXPECT_EQ(scan["addr/ps/0"], "10.0.0.1:7000");  // full keys, as MemoryStore::scan gives
  a.erase("addr/blob");
  EXPECT_FALSE(b.try_get("addr/blob"));
  a.wait({"addr/ps/0", "n"}, 1000ms);
}

TEST_F(EtcdStoreTest, ConcurrentAddsThroughDifferentMembersEachGetADistinctValue) {
  // Three stores, each reaching another member first; one of them shared by two threads.
  constexpr int kThreads = 4, kAdds = 20;
  std::vector<std::unique_ptr<EtcdStore>> stores;
  for (int s = 0; s < 3; ++s) stores.push_back(std::make_unique<EtcdStore>(rotated(etcd_->options("j"), s)));
  std::vector<std::future<std::vector<std::int64_t>>> results;
  for (int t = 0; t < kThreads; ++t)
    results.push_back(std::async(std::launch::async, [&, t] {
      std::vector<std::int64_t> got;
      for (int i = 0; i < kAdds; ++i) got.push_back(stores[t % 3]->add("counter", 1));
      return got;
    }));
  std::set<std::int64_t> all;
  for (auto& r : results)
    for (std::int64_t v : r.get()) all.insert(v);
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kAdds)) << "two adds returned the same value";
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);
  EXPECT_EQ(stores[0]->try_get("counter"), std::to_string(kThreads * kAdds));
}

TEST_F(EtcdStoreTest, AWaitingGetWakesOnAWriteThroughAnotherMember) {
  EtcdStore waiter(etcd_->options("j"));
  EtcdStore writer(rotated(etcd_->options("j"), 1));
  std::atomic<bool> written{false};
  auto got = std::async(std::launch::async, [&] {
    std::string v = waiter.get("late", 20000ms);
    return std::make_pair(v, written.load());
  });
  // The waiter is parked in a watch (or about to be): the write must reach it either way.
  std::this_thread::sleep_for(300ms);
  writer.set("unrelated", "x");
  written = true;
  writer.set("late", "here");
  auto [value, after_write] = got.get();
  EXPECT_EQ(value, "here");
  EXPECT_TRUE(after_write);
}

TEST_F(EtcdStoreTest, KillingTheLeaderLosesNothing) {
  // The leader is the worst member to lose (an election follows), and both stores reach it
  // first: every request in flight or parked on it must move to the others.
  int victim = etcd_->leader();
  ASSERT_GE(victim, 0) << "no member reports being the leader";
  EtcdStore a(rotated(etcd_->options("j"), victim));
  EtcdStore b(rotated(etcd_->options("j"), victim));
  a.set("before", "1");
  EXPECT_EQ(a.add("n", 1), 1);
  auto waiting = std::async(std::launch::async, [&] { return b.get("after", 30000ms); });
  std::this_thread::sleep_for(200ms);
  etcd_->kill(victim);
  ASSERT_FALSE(etcd_->running(victim));
  // Writes, reads, adds and the parked watch all go on through the two members left.
  a.set("after", "2");
  EXPECT_EQ(waiting.get(), "2");
  EXPECT_EQ(b.try_get("before"), "1");
  EXPECT_EQ(b.add("n", 1), 2);
  EXPECT_EQ(a.add("n", 1), 3);
  EtcdStore late(rotated(etcd_->options("j"), victim));  // a newcomer listing the dead member first
  EXPECT_EQ(late.get("after", 5000ms), "2");
  EXPECT_EQ(late.add("n", 1), 4);
}

TEST_F(EtcdStoreTest, AWatchOnAMemberThatFreezesStillHearsAWriteThroughAnother) {
  // A frozen member keeps the watch's connection open and sends nothing, not even an error:
  // only the watch's rounds (watch_round) get the waiter off it. Liveness bound: 10x a round.
  EtcdStore waiter(etcd_->options("j"));  // member 0 first
  EtcdStore writer(rotated(etcd_->options("j"), 1));
  waiter.set("x", "1");
  auto got = std::async(std::launch::async, [&] { return waiter.get("late", 60000ms); });
  std::this_thread::sleep_for(300ms);  // parked in a watch on member 0
  etcd_->signal(0, SIGSTOP);
  struct Wake {
    EtcdTestCluster& etcd;
    ~Wake() { etcd.signal(0, SIGCONT); }
  } wake{*etcd_};
  writer.set("late", "here");
  ASSERT_EQ(got.wait_for(30s), std::future_status::ready) << "the waiter stayed on the frozen member";
  EXPECT_EQ(got.get(), "here");
}

TEST_F(EtcdStoreTest, AnAddWhoseReplyIsLostIsAppliedOnce) {
  // The first member is reached through a proxy that loses the reply to one transaction
  // after etcd applied it: the store retries on the next member, and must not add twice.
  testing::EtcdFaultProxy dropper(etcd_->client_port(0));
  EtcdOptions o = etcd_->options("j");
  o.endpoints[0] = parse_etcd_url("etcd://" + dropper.address())[0];
  EtcdStore s(o);
  EXPECT_EQ(s.add("n", 5), 5);
  dropper.drop_replies_to("/v3/kv/txn", 1);
  EXPECT_EQ(s.add("n", 1), 6);
  EXPECT_EQ(dropper.dropped(), 1) << "no reply was lost, so this tested nothing";
  EXPECT_EQ(EtcdStore(etcd_->options("j")).try_get("n"), "6") << "the add was applied twice";
  EXPECT_EQ(s.add("n", 1), 7);
}

TEST_F(EtcdStoreTest, AWaitForSeveralKeysSeesAKeyWrittenWhileItReadTheOthers) {
  // Store::wait reads a (missing), then b; a is written while the read of b is held at the
  // proxy. The wait must watch from just after its read of a: from after its read of b, it
  // would miss a's write and sit in its watch until its deadline (watch rounds here are longer
  // than the deadline), to find a only then. So the check is that it wakes well
  // before its deadline: a liveness bound, hundreds of times what the wake takes.
  testing::EtcdFaultProxy proxy(etcd_->client_port(0));
  EtcdOptions o = etcd_->options("j");
  o.endpoints = {parse_etcd_url("etcd://" + proxy.address())[0]};
  o.watch_round = 120s;
  EtcdStore waiter(o);
  EtcdStore writer(rotated(etcd_->options("j"), 1));
  writer.set("b", "2");
  proxy.hold_requests_containing(etcd::base64_encode("/trib/j/kv/b"));
  auto waited = std::async(std::launch::async, [&] { waiter.wait({"a", "b"}, 60000ms); });
  auto until = std::chrono::steady_clock::now() + 20s;
  while (proxy.held() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(proxy.held(), 1) << "the waiter never read b";
  writer.set("a", "1");
  proxy.release();
  ASSERT_EQ(waited.wait_for(30s), std::future_status::ready)
      << "the wait missed a's write, made between its reads, and sat in its watch";
  EXPECT_NO_THROW(waited.get());
}

TEST_F(EtcdStoreTest, AddRefusesANonInteger) {
  EtcdStore s(etcd_->options("j"));
  s.set("name", "abc");
  try {
    s.add("name", 1);
    FAIL() << "add to a non-integer succeeded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("key '/trib/j/kv/name' holds 'abc', not an integer"), std::string::npos)
        << e.what();
  }
}

TEST_F(EtcdStoreTest, AReplyOverTheLimitIsRefusedNamingTheEndpointAndKey) {
  EtcdStore writer(etcd_->options("j"));
  writer.set("big", std::string(4000, 'x'));
  EtcdOptions small = etcd_->options("j");
  small.max_response_bytes = 1000;
  EtcdStore reader(small);
  try {
    reader.try_get("big");
    FAIL() << "a 4000-byte value came through a 1000-byte limit";
  } catch (const Corruption& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:"), std::string::npos) << what;
    EXPECT_NE(what.find("'/trib/j/kv/big'"), std::string::npos) << what;
    EXPECT_NE(what.find("1000-byte limit"), std::string::npos) << what;
  }
}

TEST_F(EtcdStoreTest, AnEndpointThatIsNotTheClientPortIsRefusedByName) {
  // etcd's peer port speaks HTTP too, but not the v3 API: a likely slip in a URL.
  std::string peer = "127.0.0.1:" + std::to_string(etcd_->peer_port(0));
  EtcdStore s(etcd_options("etcd://" + peer, "j"));
  try {
    s.set("k", "v");
    FAIL() << "a put to etcd's peer port succeeded";
  } catch (const NotFound& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("etcd http://" + peer + "/v3/kv/put: put '/trib/j/kv/k': HTTP 404"), std::string::npos)
        << what;
    EXPECT_NE(what.find("is this etcd's v3 JSON gateway?"), std::string::npos) << what;
  }
}

TEST(EtcdStoreUnavailable, WhenNoMemberAnswersTheErrorNamesEveryEndpointAndTheKey) {
  // Privileged ports nothing listens on: no etcd needed to find none answering.
  std::string url = "etcd://127.0.0.1:1,127.0.0.1:2";
  EtcdOptions o = etcd_options(url, "j");
  o.operation_timeout = 800ms;
  o.attempt_timeout = 200ms;
  EtcdStore s(o);
  try {
    s.set("k", "v");
    FAIL() << "set succeeded with no etcd member up";
  } catch (const Unavailable& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("put '/trib/j/kv/k'"), std::string::npos) << what;
    EXPECT_NE(what.find("no member answered"), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1:1: "), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1:2: "), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace trib::cluster
