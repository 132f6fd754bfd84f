// Crafted malformed frames sent after a genuine handshake: each closes only its own
// connection, is logged in one line naming the peer, is counted, allocates nothing, and
// the server goes on serving other connections.
#include <gtest/gtest.h>

#include "crafted_frames.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

// Encrypted sessions (the default) and MAC-only ones validate the same way.
class TcpMalformedFrames : public ::testing::TestWithParam<bool> {};

TEST_P(TcpMalformedFrames, EachClosesItsConnectionWithoutAllocatingAndServerSurvives) {
  testing::LogCapture log;
  testing::CountingAllocator allocator;
  NetOptions options = testing::fast_options();
  options.encryption = GetParam();
  options.max_frame_bytes = 1 << 20;
  options.allocator = &allocator;
  auto server_ctx = testing::make_context("ps", 0, options, testing::test_secret(), &log);
  TcpTransport server(server_ctx);
  auto listener = server.listen("", {[](Message m, const PeerIdentity&) { return m; }});
  NetOptions client_options = testing::fast_options();
  client_options.encryption = GetParam();
  auto client_ctx = testing::make_context("worker", 4, client_options);
  TcpTransport client(client_ctx);
  auto honest = client.connect(listener->address());

  std::uint64_t rejected = 0;
  for (const auto& crafted : testing::crafted_frames()) {
    if (crafted.valid() || crafted.name == "bad_truncated_payload") continue;  // see liveness
    SCOPED_TRACE(crafted.name);
    testing::RawClient raw(listener->address(), *client_ctx);
    raw.send_bytes(raw.as_session_frame(crafted.bytes));
    EXPECT_TRUE(raw.closed_by_peer());
    ++rejected;
    EXPECT_TRUE(testing::eventually(
        [&] { return server_ctx->stats().snapshot().malformed_frames == rejected; }));
    EXPECT_TRUE(log.wait_for({"worker 4 at 127.0.0.1", "rejected frame", crafted.reason}));
    EXPECT_EQ(allocator.count(), 0u);
    // The long-lived honest connection is untouched.
    EXPECT_EQ(honest->call(Message{1, crafted.name, {}}).body, crafted.name);
  }
  EXPECT_GE(rejected, 10u);
  for (const std::string& line : log.lines()) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << "log lines must be one line";
  }
  // A valid tensor allocates exactly what it needs, and no more than the limit.
  honest->call(Message{1, "", Tensor::zeros(DType::f32, Shape{1000})});
  EXPECT_EQ(allocator.largest(), 4000u);
}

INSTANTIATE_TEST_SUITE_P(Modes, TcpMalformedFrames, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Encrypted" : "MacOnly";
                         });

}  // namespace
}  // namespace trib::net
