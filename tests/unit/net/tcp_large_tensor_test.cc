#include <gtest/gtest.h>

#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

// What is checked is integrity, not speed: a quarter GiB each way, sealed and opened, takes
// more than the quick tests' 10 s request deadline on a loaded 2-core machine, so the
// deadlines are the production defaults' order instead.
NetOptions unhurried() {
  NetOptions o = testing::fast_options();
  o.peer_timeout = std::chrono::milliseconds(10000);
  o.request_timeout = std::chrono::milliseconds(180000);
  return o;
}

TEST(TcpLargeTensor, Quarter_GiB_RoundTripArrivesIntact) {
  auto server_ctx = testing::make_context("ps", 0, unhurried());
  TcpTransport server(server_ctx);
  auto listener = server.listen("", {[](Message m, const PeerIdentity&) { return m; }});
  auto client_ctx = testing::make_context("worker", 0, unhurried());
  TcpTransport client(client_ctx);
  auto conn = client.connect(listener->address());

  constexpr std::int64_t kElements = (std::int64_t{256} << 20) / 4;
  Tensor sent = Tensor::empty(DType::i32, Shape{kElements / 1024, 1024});
  auto values = sent.span<std::int32_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<std::int32_t>(i * 2654435761u);
  }
  Message reply = conn->call(Message{1, "big", sent});
  ASSERT_EQ(reply.tensor.shape(), sent.shape());
  ASSERT_FALSE(reply.tensor.shares_storage(sent));
  EXPECT_EQ(std::memcmp(reply.tensor.raw_data(), sent.raw_data(), sent.nbytes()), 0);
  EXPECT_GE(server_ctx->stats().snapshot().bytes_received, std::uint64_t{256} << 20);
}

}  // namespace
}  // namespace trib::net
