// A parameter server driven by hand: rounds of sync and averaging, and the slowest worker
// of bounded staleness, once a worker has said it took its last step.
#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "test_server.h"

namespace trib::ps {
namespace {

using testing::Request;
using Server = testing::TestServer;

TEST(PsServerDone, ASyncRoundGoesOnWithoutAWorkerThatTookItsLastStep) {
  Server s(Mode::sync);
  s.push(0, 0, 2.0f);
  EXPECT_FALSE(s.pull(0, 1)) << "the round waits for worker 1";
  s.done(1);
  ASSERT_TRUE(s.pull(0, 1));
  EXPECT_FLOAT_EQ(*s.pull(0, 1), -2.0f) << "worker 0's gradient alone, averaged over 1";
  s.push(0, 1, 1.0f);  // later rounds need worker 0 only
  EXPECT_FLOAT_EQ(*s.pull(0, 2), -3.0f);
}

TEST(PsServerDone, AnAveragingRoundGoesOnWithoutIt) {
  Server s(Mode::averaging);
  s.push(1, 1, 4.0f);
  EXPECT_FALSE(s.pull(1, 1));
  s.done(0);
  ASSERT_TRUE(s.pull(1, 1));
  EXPECT_FLOAT_EQ(*s.pull(1, 1), 4.0f);
}

TEST(PsServerDone, ADoneWorkerHoldsNoOneBackUnderBoundedStaleness) {
  Server s(Mode::bounded, testing::dense_w(), 2);
  for (int step = 0; step < 3; ++step) s.push(0, step, 0.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "3 steps ahead of worker 1, bound 2";
  s.done(1);
  EXPECT_TRUE(s.pull(0, 3));
}

TEST(PsServerDone, DoneFromAnUnknownWorkerIsRefused) {
  Server s(Mode::sync);
  EXPECT_THROW(s.done(2), InvalidArgument);
}

// A pull that must wait is woken by the push that allows its step: it returns the values
// of that step, not "not ready".
TEST(PsServerWait, AWaitingPullIsReleasedByThePushThatCompletesTheRound) {
  Server s(Mode::sync);
  std::optional<Tensor> pulled;
  std::thread puller([&] { pulled = s.pull_values(0, 1, 60000); });
  s.push(0, 0, 1.0f);
  s.push(1, 0, 3.0f);
  puller.join();
  ASSERT_TRUE(pulled.has_value());
  EXPECT_FLOAT_EQ(pulled->data<float>()[0], -2.0f) << "the average of both workers' gradients, applied";
}

TEST(PsServerStats, StatsTravelUnderTheSharedKeys) {
  Server s(Mode::async);
  s.push(0, 0, 1.0f);
  PsStats st = s.server.stats();
  EXPECT_EQ(st.applied, 1u);
  EXPECT_EQ(st.requests, 2u) << "init and the push";
  EXPECT_EQ(st.refused, 0u);
}

}  // namespace
}  // namespace trib::ps

namespace trib::ps {
namespace {

// More servers than variables: the placement leaves a server empty. Its save answers "no
// parts" (and no tensor) instead of refusing part 0, so the job's checkpoint goes on.
TEST(PsServerSave, AServerHoldingNoVariableSavesNothingAndSaysSo) {
  const std::vector<VariableInfo> vars = testing::dense_w();  // one variable, two servers
  PsServer empty(PsServerOptions{1, 1, Mode::async, 1, 0, vars, place(vars, 2, PlacementStrategy::greedy, 1 << 20),
                                 make_optimizer({.name = "sgd"})});
  testing::Request init(proto::Type::init);
  empty.handle(init.message(Tensor::zeros(DType::f32, Shape{0})), net::PeerIdentity{"worker", 0, "127.0.0.1:1"});
  testing::Request save(proto::Type::save);
  save.text = R"({"part": 0})";
  net::Message r = empty.handle(save.message(), net::PeerIdentity{"worker", 0, "127.0.0.1:1"});
  EXPECT_FALSE(r.tensor.defined());
  EXPECT_EQ(nlohmann::json::parse(proto::decode(r.body).text).at("parts"), 0);
}

}  // namespace
}  // namespace trib::ps
