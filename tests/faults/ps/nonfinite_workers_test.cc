// NaN on one worker in PS mode, workers as threads of this process over the in-process
// transport (RELIABILITY.md row 12): in sync mode every worker skips the step (nothing is
// applied, the step does not advance); in async mode the push is dropped and counted; both
// stop with a clear message after max_consecutive_skips in a row.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <limits>

#include "trib/net/inproc_transport.h"
#include "trib/net/net_context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/ps/strategy_ps.h"

namespace trib::ps {
namespace {

std::vector<VariableInfo> vars() { return {{"w", Shape{4}}}; }

struct Cluster {
  Cluster(Mode mode, int workers) : mode(mode), workers(workers) {
    Placement p = place(vars(), 1, PlacementStrategy::greedy, 1 << 20);
    server = std::make_unique<PsServer>(
        PsServerOptions{0, workers, mode, 2, 0, vars(), p, make_optimizer({.name = "sgd"})});
    PsServer* s = server.get();
    listener = transport("ps", 0)->listen("ps0:1", {[s](net::Message m, const net::PeerIdentity& f) {
      return s->handle(std::move(m), f);
    }});
    placement = p;
  }
  std::shared_ptr<net::Transport> transport(const std::string& role, int index) {
    auto t = std::make_shared<net::InProcTransport>(net::NetContext::create(secret, {role, index, ""}), hub);
    transports.push_back(t);
    return t;
  }
  std::unique_ptr<PsUpdate> worker(int index, int max_skips) {
    PsUpdateOptions o;
    o.worker_index = index;
    o.workers = workers;
    o.mode = mode;
    o.variables = vars();
    o.placement = placement;
    o.servers = {transport("worker", index)->connect("ps0:1")};
    o.optimizer = make_optimizer({.name = "sgd"});
    o.schedule = make_schedule({.name = "constant", .base_lr = 1.0f});
    o.max_consecutive_skips = max_skips;
    return std::make_unique<PsUpdate>(o);
  }

  Mode mode;
  int workers;
  std::shared_ptr<net::InProcHub> hub = std::make_shared<net::InProcHub>();
  net::ClusterSecret secret = net::ClusterSecret::generate();
  std::vector<std::shared_ptr<net::Transport>> transports;
  std::unique_ptr<PsServer> server;
  std::unique_ptr<net::Listener> listener;
  Placement placement;
};

std::vector<update::GradTensor> grads(float value) { return {{Tensor::full(Shape{4}, value), {}}}; }

VariableStore fresh() {
  VariableStore v;
  v.set("w", Tensor::zeros(DType::f32, Shape{4}));
  return v;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(PsNonFiniteWorkers, SyncSkipsTheStepOnEveryWorker) {
  Cluster c(Mode::sync, 2);
  auto w0 = c.worker(0, 10), w1 = c.worker(1, 10);
  VariableStore v0 = fresh(), v1 = fresh();
  ASSERT_EQ(w0->start(v0, nullptr), 0);
  ASSERT_EQ(w1->start(v1, nullptr), 0);
  // Step 0: worker 1's gradient is NaN. Both workers are told the step was skipped.
  auto first = grads(1.0f);
  auto a = std::async(std::launch::async, [&] { return w0->apply(0, first, v0); });
  auto nan = grads(kNaN);
  EXPECT_FALSE(w1->apply(0, nan, v1)) << "the worker with the NaN skips";
  EXPECT_FALSE(a.get()) << "and so does the other: the step is skipped everywhere";
  EXPECT_FLOAT_EQ(v0.get("w").data<float>()[0], 0.0f) << "nothing applied";
  EXPECT_EQ(c.server->stats().skipped_rounds, 1u);
  // Step 0 again, finite: applied on both.
  auto g0 = grads(1.0f), g1 = grads(3.0f);
  auto b = std::async(std::launch::async, [&] { return w0->apply(0, g0, v0); });
  EXPECT_TRUE(w1->apply(0, g1, v1));
  EXPECT_TRUE(b.get());
  EXPECT_FLOAT_EQ(v0.get("w").data<float>()[0], -2.0f);
  EXPECT_FLOAT_EQ(v1.get("w").data<float>()[0], -2.0f);
}

TEST(PsNonFiniteWorkers, SyncStopsEveryWorkerAfterMSkipsInARow) {
  Cluster c(Mode::sync, 2);
  auto w0 = c.worker(0, 3), w1 = c.worker(1, 3);
  VariableStore v0 = fresh(), v1 = fresh();
  w0->start(v0, nullptr);
  w1->start(v1, nullptr);
  auto healthy = std::async(std::launch::async, [&] {
    for (int i = 0; i < 3; ++i) {
      auto g = grads(1.0f);
      if (w0->apply(0, g, v0)) return std::string("applied");
    }
    return std::string("no error");
  });
  std::string message;
  try {
    for (int i = 0; i < 3; ++i) {
      auto g = grads(kNaN);
      w1->apply(0, g, v1);
    }
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("3 steps in a row were skipped for NaN or Inf gradients"), std::string::npos) << message;
  EXPECT_NE(message.find("worker 1"), std::string::npos) << message;
  EXPECT_THROW(healthy.get(), Error) << "the other worker stops too: every round was skipped";
}

TEST(PsNonFiniteWorkers, AsyncDropsThePushCountsItAndStopsAfterMInARow) {
  Cluster c(Mode::async, 2);
  auto w0 = c.worker(0, 3), w1 = c.worker(1, 3);
  VariableStore v0 = fresh(), v1 = fresh();
  w0->start(v0, nullptr);
  w1->start(v1, nullptr);
  auto nan = grads(kNaN);
  EXPECT_FALSE(w1->apply(0, nan, v1));
  auto g = grads(1.0f);
  EXPECT_TRUE(w0->apply(0, g, v0)) << "the other worker goes on: nothing waits in async mode";
  EXPECT_FLOAT_EQ(v0.get("w").data<float>()[0], -1.0f);
  EXPECT_EQ(c.server->stats().dropped_nonfinite, 1u);
  auto fine = grads(1.0f);
  EXPECT_TRUE(w1->apply(0, fine, v1)) << "a finite step resets the count";
  EXPECT_FALSE(w1->apply(1, nan, v1));
  EXPECT_FALSE(w1->apply(1, nan, v1));
  try {
    w1->apply(1, nan, v1);
    ADD_FAILURE() << "no error after 3 non-finite steps in a row";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 steps in a row"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.server->stats().dropped_nonfinite, 4u);
}

}  // namespace
}  // namespace trib::ps
