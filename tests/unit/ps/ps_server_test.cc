// A parameter server driven by hand: rounds of sync and averaging, and the slowest worker
// of bounded staleness, once a worker has said it took its last step.
#include "trib/ps/ps_server.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ps/ps_protocol.h"
#include "trib/optim/optimizer_config.h"

namespace trib::ps {
namespace {

using json = nlohmann::json;

struct Server {
  explicit Server(Mode mode, int staleness = 1)
      : server(PsServerOptions{0, 2, mode, staleness, 0, {{"w", Shape{4}}},
                               place({{"w", Shape{4}}}, 1, PlacementStrategy::greedy, 1 << 20),
                               make_optimizer({.name = "sgd"})}) {
    call(proto::kInit, 0, json{{"step", 0}}, Tensor::zeros(DType::f32, Shape{4}));
  }
  net::Message call(std::uint32_t method, int worker, const json& body, Tensor t = {}) {
    return server.handle(net::Message{method, body.dump(), std::move(t)}, net::PeerIdentity{"worker", worker, ""});
  }
  void push(int worker, std::int64_t step, float value) {
    call(proto::kPush, worker, {{"worker", worker}, {"step", step}, {"lr", 1.0}}, Tensor::full(Shape{4}, value));
  }
  // The values a pull for `step` returns, or nothing while the mode says wait.
  std::optional<float> pull(int worker, std::int64_t step) {
    net::Message r = call(proto::kPull, worker, {{"worker", worker}, {"step", step}});
    if (!json::parse(r.body).value("ready", false)) return std::nullopt;
    return r.tensor.data<float>()[0];
  }
  void done(int worker) { call(proto::kDone, worker, {{"worker", worker}}); }
  PsServer server;
};

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
  Server s(Mode::bounded, 2);
  for (int step = 0; step < 3; ++step) s.push(0, step, 0.0f);
  EXPECT_FALSE(s.pull(0, 3)) << "3 steps ahead of worker 1, bound 2";
  s.done(1);
  EXPECT_TRUE(s.pull(0, 3));
}

TEST(PsServerDone, DoneFromAnUnknownWorkerIsRefused) {
  Server s(Mode::sync);
  EXPECT_THROW(s.done(2), InvalidArgument);
}

}  // namespace
}  // namespace trib::ps
