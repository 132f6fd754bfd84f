// A parameter server told of membership changes: requests from a replaced incarnation of a
// worker are refused on their header alone and counted; a lost worker holds nobody back.
#include <gtest/gtest.h>

#include <string>

#include "ps/stats_json.h"
#include "test_server.h"

namespace trib::ps {
namespace {

using testing::Request;
using Server = testing::TestServer;

net::Message push_of(int worker, std::int64_t step, std::int64_t generation, float value, std::int64_t elements) {
  Request r(proto::Type::push, worker, step);
  r.generation = generation;
  return r.message(Tensor::full(Shape{elements}, value));
}

std::string refusal(Server& s, net::Message m) {
  try {
    s.send(std::move(m));
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(PsServerGeneration, AnEvictedIncarnationIsRefusedCountedAndNothingOfItApplied) {
  Server s(Mode::async);  // worker 0 reads the values, stamped with generation 0 (no roster)
  s.server.worker_joined(1, 3);
  s.send(push_of(1, 0, 3, 1.0f, s.elements));  // worker 1 of generation 3: applied
  EXPECT_EQ(s.server.stats().applied, 1u);
  EXPECT_FLOAT_EQ(*s.pull(0, -1), -1.0f);

  s.server.worker_lost(1, 5);  // it went silent; generation 5 went on without it
  std::string why = refusal(s, push_of(1, 1, 3, 100.0f, s.elements));
  EXPECT_NE(why.find("worker 1 of generation 3, but that worker was replaced"), std::string::npos) << why;
  Request late_pull(proto::Type::pull, 1, -1);
  late_pull.generation = 3;
  EXPECT_NE(refusal(s, late_pull.message()).find("replaced"), std::string::npos);
  EXPECT_EQ(s.server.stats().stale_generation, 2u);
  EXPECT_EQ(s.server.stats().refused, 2u);
  EXPECT_EQ(s.server.stats().applied, 1u) << "nothing the evicted process sent is applied";
  EXPECT_FLOAT_EQ(*s.pull(0, -1), -1.0f);

  // A new member takes index 1 (generation 6): its requests are served, the old ones still not.
  s.server.worker_joined(1, 6);
  s.send(push_of(1, 1, 6, 1.0f, s.elements));
  EXPECT_EQ(s.server.stats().applied, 2u);
  EXPECT_NE(refusal(s, push_of(1, 2, 3, 1.0f, s.elements)).find("replaced"), std::string::npos);
  EXPECT_EQ(s.server.stats().stale_generation, 3u);
  EXPECT_NE(stats_to_json(s.server.stats()).find("\"stale_generation\":3"), std::string::npos);
}

TEST(PsServerGeneration, AStaleRequestIsRefusedBeforeItsBodyIsDecoded) {
  Server s(Mode::async);
  s.server.worker_joined(1, 4);
  s.server.worker_lost(1, 5);
  net::Message m = push_of(1, 0, 4, 1.0f, s.elements);
  // A body the decoder would refuse (a sparse table far longer than the body): the
  // refusal names the stale generation, so the header alone decided.
  m.body[28] = static_cast<char>(0xff);
  m.body[29] = static_cast<char>(0xff);
  std::string why = refusal(s, std::move(m));
  EXPECT_NE(why.find("replaced"), std::string::npos) << why;
  EXPECT_EQ(why.find("sparse"), std::string::npos) << why;
  EXPECT_EQ(s.server.stats().stale_generation, 1u);
}

TEST(PsServerGeneration, AnUnrelatedChangeRefusesNoRequestOfTheCurrentHolders) {
  Server s(Mode::async);
  s.server.worker_joined(0, 1);
  s.server.worker_joined(1, 2);
  // Later generations (a server or a worker of another index joined, left or was lost)
  // leave each index's holder as it was: requests stamped with its incarnation go on.
  s.server.worker_lost(1, 7);
  s.server.worker_joined(1, 8);
  s.server.worker_joined(0, 1);  // the same holder, in a newer roster
  s.send(push_of(0, 0, 1, 1.0f, s.elements));
  s.send(push_of(1, 0, 8, 1.0f, s.elements));
  EXPECT_EQ(s.server.stats().applied, 2u);
  EXPECT_EQ(s.server.stats().stale_generation, 0u);
  // A roster older than one already seen changes nothing.
  s.server.worker_joined(1, 2);
  EXPECT_NE(refusal(s, push_of(1, 1, 2, 1.0f, s.elements)).find("replaced"), std::string::npos);
}

TEST(PsServerGeneration, ALostWorkerHoldsNoSyncRoundBackAndANewHolderRejoinsIt) {
  Server s(Mode::sync);
  s.push(0, 0, 2.0f);
  EXPECT_FALSE(s.pull(0, 1)) << "the round waits for worker 1";
  s.server.worker_lost(1, 3);
  ASSERT_TRUE(s.pull(0, 1)) << "the round closed with the remaining worker";
  EXPECT_FLOAT_EQ(*s.pull(0, 1), -2.0f);
  s.push(0, 1, 1.0f);
  EXPECT_FLOAT_EQ(*s.pull(0, 2), -3.0f) << "the next round expects one worker";
  s.server.worker_joined(1, 4);
  s.push(0, 2, 1.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "with a new worker 1, rounds expect both again";
}

TEST(PsServerGeneration, ALostWorkerHoldsNoBoundedClockBack) {
  Server s(Mode::bounded, testing::dense_w(), 2);
  for (int step = 0; step < 3; ++step) s.push(0, step, 0.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "3 steps ahead of worker 1, bound 2";
  s.server.worker_lost(1, 2);
  EXPECT_TRUE(s.pull(0, 3));
  s.server.worker_joined(1, 3);  // starts at the slowest clock of the others
  EXPECT_TRUE(s.pull(0, 3));
}

}  // namespace
}  // namespace trib::ps
