// A parameter server driven by hand, in this process: requests go straight to handle().
#pragma once

#include <optional>

#include "ps_request.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"

namespace trib::ps::testing {

inline std::vector<VariableInfo> dense_w() { return {{"w", Shape{4}}}; }
// A dense vector, then an embedding of 6 rows of 2.
inline std::vector<VariableInfo> dense_and_embedding() { return {{"w", Shape{4}}, {"emb", Shape{6, 2}}}; }

struct TestServer {
  explicit TestServer(Mode mode, std::vector<VariableInfo> vars = dense_w(), int staleness = 1)
      : server(PsServerOptions{0, 2, mode, staleness, 0, vars, place(vars, 1, PlacementStrategy::greedy, 1 << 20),
                               make_optimizer({.name = "sgd"})}) {
    std::int64_t n = 0;
    for (const auto& v : vars) n += v.shape.numel();
    elements = n;
    send(Request(proto::Type::init), Tensor::zeros(DType::f32, Shape{n}));
  }
  net::Message send(const Request& r, Tensor t = {}) { return send(r.message(std::move(t))); }
  net::Message send(net::Message m) {
    return server.handle(std::move(m), net::PeerIdentity{"worker", 0, "127.0.0.1:1"});
  }
  void push(int worker, std::int64_t step, float value) {
    send(Request(proto::Type::push, worker, step), Tensor::full(Shape{elements}, value));
  }
  // The values a pull for `step` returns, or nothing while the mode says wait.
  std::optional<Tensor> pull_values(int worker, std::int64_t step, std::uint32_t wait_ms = 0) {
    Request ask(proto::Type::pull, worker, step);
    ask.wait_ms = wait_ms;
    net::Message r = send(ask);
    proto::Body b = proto::decode(r.body);
    if ((b.header.flags & proto::kFlagReady) == 0) return std::nullopt;
    return r.tensor;
  }
  std::optional<float> pull(int worker, std::int64_t step) {
    auto t = pull_values(worker, step);
    if (!t) return std::nullopt;
    return t->data<float>()[0];
  }
  void done(int worker) { send(Request(proto::Type::done, worker)); }

  PsServer server;
  std::int64_t elements = 0;
};

}  // namespace trib::ps::testing
