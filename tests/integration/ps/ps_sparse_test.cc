// Embedding gradients through parameter servers: a worker's rows (with repeated ids) go to
// the servers holding each row range, and one async worker ends where local training ends.
#include <gtest/gtest.h>

#include "trib/net/inproc_transport.h"
#include "trib/net/net_context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/ps/ps_server.h"
#include "trib/ps/strategy_ps.h"

namespace trib::ps {
namespace {

std::vector<VariableInfo> variables() { return {{"w", Shape{3}}, {"emb", Shape{6, 2}}}; }

std::vector<update::GradTensor> gradients(int step) {
  const float s = static_cast<float>(step + 1);
  std::vector<update::GradTensor> g;
  g.push_back({Tensor::from_vector(Shape{3}, std::vector<float>{0.1f * s, -0.2f, 0.3f}), Tensor()});
  // Ids 4, 1, 4, 5: row 4 twice, rows on both servers (rows 0-2 on one, 3-5 on the other).
  g.push_back({Tensor::from_vector(Shape{4, 2}, std::vector<float>{1, 2, 3, 4, 5 * s, 6, 7, 8}),
               Tensor::from_vector(Shape{4}, std::vector<std::int64_t>{4, 1, 4, 5})});
  return g;
}

VariableStore initial() {
  VariableStore v;
  v.set("w", Tensor::from_vector(Shape{3}, std::vector<float>{1, 2, 3}));
  std::vector<float> emb(12);
  for (int i = 0; i < 12; ++i) emb[i] = 0.5f * static_cast<float>(i);
  v.set("emb", Tensor::from_vector(Shape{6, 2}, emb));
  return v;
}

void expect_same(const VariableStore& a, const VariableStore& b) {
  for (const char* name : {"w", "emb"}) {
    const Tensor& x = a.get(name);
    const Tensor& y = b.get(name);
    ASSERT_EQ(x.numel(), y.numel());
    for (std::int64_t i = 0; i < x.numel(); ++i)
      EXPECT_FLOAT_EQ(x.data<float>()[i], y.data<float>()[i]) << name << "[" << i << "]";
  }
}

TEST(PsSparse, OneAsyncWorkerWithEmbeddingRowsMatchesLocalTraining) {
  for (const char* optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    const OptimizerConfig oc{.name = optimizer};
    std::shared_ptr<const Optimizer> opt = make_optimizer(oc);
    std::shared_ptr<const Schedule> schedule = make_schedule(ScheduleConfig{.base_lr = 0.1f});
    const Placement placement = place(variables(), 2, PlacementStrategy::partitioned, 16);
    ASSERT_EQ(placement.slices.size(), 3u) << "emb is split by rows over both servers";

    auto hub = std::make_shared<net::InProcHub>();
    auto secret = net::ClusterSecret::generate();
    std::vector<std::unique_ptr<PsServer>> servers;
    std::vector<std::shared_ptr<net::Transport>> transports;
    std::vector<std::unique_ptr<net::Listener>> listeners;
    for (int i = 0; i < 2; ++i) {
      servers.push_back(std::make_unique<PsServer>(PsServerOptions{i, 1, Mode::async, 1, 0, variables(), placement, opt}));
      PsServer* s = servers.back().get();
      transports.push_back(std::make_shared<net::InProcTransport>(net::NetContext::create(secret, {"ps", i, ""}), hub));
      listeners.push_back(transports.back()->listen(
          "ps" + std::to_string(i) + ":1", {[s](net::Message m, const net::PeerIdentity& f) { return s->handle(std::move(m), f); }}));
    }
    auto worker = std::make_shared<net::InProcTransport>(net::NetContext::create(secret, {"worker", 0, ""}), hub);
    PsUpdateOptions po;
    po.variables = variables();
    po.placement = placement;
    po.servers = {worker->connect("ps0:1"), worker->connect("ps1:1")};
    po.optimizer = opt;
    po.schedule = schedule;
    PsUpdate ps(po);
    update::LocalUpdate local(update::LocalUpdateOptions{{"w", "emb"}, opt, schedule});

    VariableStore on_servers = initial(), here = initial();
    ps.start(on_servers, nullptr);
    for (int step = 0; step < 3; ++step) {
      auto g1 = gradients(step), g2 = gradients(step);
      ASSERT_TRUE(ps.apply(step, g1, on_servers));
      ASSERT_TRUE(local.apply(step, g2, here));
    }
    expect_same(on_servers, here);
    EXPECT_EQ(servers[0]->stats().refused + servers[1]->stats().refused, 0u);
    ps.finish();
  }
}

}  // namespace
}  // namespace trib::ps
