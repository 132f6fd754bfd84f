// A parameter server driven by hand where every worker has its own connection address, so
// that a connection closing (a lost worker) and a new one (a relaunched worker) can be told
// apart.
#pragma once

#include <optional>

#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"
#include "unit/ps/ps_request.h"

namespace trib::ps::testing {

struct RosterServer {
  RosterServer(Mode mode, int workers, int backup = 0, int staleness = 1)
      : server(PsServerOptions{0, workers, mode, staleness, backup, vars(), place(vars(), 1, PlacementStrategy::greedy, 1 << 20),
                               make_optimizer({.name = "sgd"})}),
        address(workers) {
    for (int w = 0; w < workers; ++w) address[w] = "10.0.0." + std::to_string(w) + ":1";
    Request init(proto::Type::init);
    server.handle(init.message(Tensor::zeros(DType::f32, Shape{4})), peer(0));
    // Every worker starts with a plain read, on its own connection, as PsUpdate::start does.
    for (int w = 0; w < workers; ++w) pull(w, -1);
  }
  static std::vector<VariableInfo> vars() { return {{"w", Shape{4}}}; }
  net::PeerIdentity peer(int w) const { return net::PeerIdentity{"worker", w, address[w]}; }

  net::Message send(int w, const Request& r, Tensor t = {}) { return server.handle(r.message(std::move(t)), peer(w)); }
  void push(int w, std::int64_t step, float value) {
    send(w, Request(proto::Type::push, w, step), Tensor::full(Shape{4}, value));
  }
  void push_nonfinite(int w, std::int64_t step) {
    Request r(proto::Type::push, w, step);
    net::Message m = r.message();
    proto::Body b = proto::decode(m.body);
    b.header.flags = proto::kFlagNonFinite;
    m.body = proto::encode(b);
    server.handle(std::move(m), peer(w));
  }
  struct Pulled {
    float value = 0;
    std::int64_t step = 0;
    bool skipped = false;
  };
  // A pull for `step` (-1: a plain read), or nothing while the mode says wait.
  std::optional<Pulled> pull(int w, std::int64_t step) {
    net::Message r = send(w, Request(proto::Type::pull, w, step));
    proto::Body b = proto::decode(r.body);
    if ((b.header.flags & proto::kFlagReady) == 0) return std::nullopt;
    return Pulled{r.tensor.data<float>()[0], b.header.step, (b.header.flags & proto::kFlagSkipped) != 0};
  }
  // The worker's connection closes (kill -9); then it comes back on a new one.
  void lose(int w) { server.connection_closed(peer(w)); }
  void relaunch(int w) { address[w] = "10.0.1." + std::to_string(w) + ":2"; }

  PsServer server;
  std::vector<std::string> address;
};

}  // namespace trib::ps::testing
