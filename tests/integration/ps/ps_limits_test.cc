// A parameter server behind a real TCP listener on loopback, capped as `trib ps` caps it:
// requests bigger than anything the job can send are refused before any allocation, and
// malformed ones get an error reply naming the problem. Either way the server serves on.
#include <gtest/gtest.h>

#include "ps/ps_wire.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {
namespace {

net::Message request(proto::Type type, std::int64_t step, Tensor tensor = {}) {
  proto::Body b = proto::make_body(type);
  b.header.step = step;
  proto::set_lr(b.header, 1.0f);
  return {proto::kPsMethod, proto::encode(b), std::move(tensor)};
}

struct TcpServer {
  std::vector<VariableInfo> vars{{"w", Shape{1000}}};
  PsServer server{PsServerOptions{0, 1, Mode::sync, 1, 0, vars, place(vars, 1, PlacementStrategy::greedy, 1 << 20),
                                  make_optimizer({.name = "sgd"})}};
  net::ClusterSecret secret = net::ClusterSecret::generate();
  std::shared_ptr<net::TcpTransport> serving;
  std::unique_ptr<net::Listener> listener;

  TcpServer() {
    net::NetOptions o;
    o.max_frame_bytes = server.max_request_bytes();
    serving = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 0, ""}, o));
    listener = serving->listen("127.0.0.1:0", {[this](net::Message m, const net::PeerIdentity& f) {
                                 return server.handle(std::move(m), f);
                               }});
  }
  std::shared_ptr<net::Connection> connect(std::shared_ptr<net::TcpTransport>& keep) {
    keep = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"worker", 0, ""}));
    return keep->connect(listener->address());
  }
};

TEST(PsLimits, AShortSyncPushGetsAnErrorReplyAndTheConnectionServesOn) {
  TcpServer s;
  std::shared_ptr<net::TcpTransport> t;
  auto c = s.connect(t);
  c->call(request(proto::Type::init, 0, Tensor::zeros(DType::f32, Shape{1000})));
  try {
    c->call(request(proto::Type::push, 0, Tensor::full(Shape{10}, 1.0f)));
    ADD_FAILURE() << "a push of 10 values to a server of 1000 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("holds 10 values"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(c->is_open());
  c->call(request(proto::Type::push, 0, Tensor::full(Shape{1000}, 1.0f)));
  EXPECT_EQ(s.server.stats().applied, 1u);
}

TEST(PsLimits, APushBiggerThanThePlacementIsRefusedBeforeAllocationAndTheServerStaysUp) {
  TcpServer s;
  std::shared_ptr<net::TcpTransport> t1, t2;
  auto c = s.connect(t1);
  c->call(request(proto::Type::init, 0, Tensor::zeros(DType::f32, Shape{1000})));
  // 4 MiB of values for a server whose slices hold 4,000 bytes: over its frame bound.
  const std::int64_t n = 1 << 20;
  ASSERT_GT(static_cast<std::uint64_t>(n) * 4, s.server.max_request_bytes());
  EXPECT_THROW(c->call(request(proto::Type::push, 0, Tensor::full(Shape{n}, 1.0f))), Unavailable);
  auto again = s.connect(t2);
  again->call(request(proto::Type::push, 0, Tensor::full(Shape{1000}, 1.0f)));
  EXPECT_EQ(s.server.stats().applied, 1u);
  EXPECT_EQ(s.server.stats().requests, 2u) << "the oversized frame never reached the server";
}

}  // namespace
}  // namespace trib::ps
