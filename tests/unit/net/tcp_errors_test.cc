// Setup errors name the address involved, in one line.
#include <gtest/gtest.h>
#include <poll.h>

#include "net/tcp_address.h"
#include "net_test_support.h"
#include "trib/net/tcp_transport.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TcpErrors, PortInUseNamesTheAddress) {
  TcpTransport t(testing::make_context("ps", 0));
  auto first = t.listen("127.0.0.1:0", {});
  EXPECT_THROW(t.listen(first->address(), {}), Unavailable);
  EXPECT_EQ(message_of([&] { t.listen(first->address(), {}); }),
            first->address() + " is already in use");
}

TEST(TcpErrors, RefusedConnectionNamesTheAddress) {
  std::string address;
  {
    TcpTransport t(testing::make_context("ps", 0));
    address = t.listen("127.0.0.1:0", {})->address();
  }  // now nothing listens there
  TcpTransport client(testing::make_context("worker", 0));
  EXPECT_THROW(client.connect(address), Unavailable);
  std::string m = message_of([&] { client.connect(address); });
  EXPECT_NE(m.find("cannot connect to " + address), std::string::npos) << m;
}

TEST(TcpErrors, UnresponsivePeerTimesOutTheHandshake) {
  HostPort bound;
  Socket mute = listen_on(parse_host_port("127.0.0.1:0", ""), bound);  // never accepts
  NetOptions options = testing::fast_options();
  options.handshake_timeout = 300ms;
  TcpTransport client(testing::make_context("worker", 0, options));
  auto start = std::chrono::steady_clock::now();
  std::string m = message_of([&] { client.connect(bound.to_string()); });
  EXPECT_EQ(m, "handshake with " + bound.to_string() + " timed out after 300 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
}

TEST(TcpErrors, FloodOfSilentConnectionsIsCappedAndServerRecovers) {
  testing::LogCapture log;
  auto server_ctx = testing::make_context("ps", 0, testing::fast_options(),
                                          testing::test_secret(), &log);
  TcpTransport server(server_ctx);
  auto listener = server.listen("", {[](Message m, const PeerIdentity&) { return m; }});
  {
    std::vector<Socket> flood;
    for (int i = 0; i < 80; ++i) {
      flood.push_back(connect_to(parse_host_port(listener->address(), ""), 1000ms));
    }
    // Past the per-source limit, the oldest silent connections make room for new ones.
    EXPECT_TRUE(log.wait_for({"dropped peer at 127.0.0.1", "sent nothing"}));
    // While the flood still holds its sockets, an honest client gets in at its first try.
    TcpTransport honest(testing::make_context("worker", 1));
    EXPECT_EQ(honest.connect(listener->address())->call(Message{1, "in", {}}).body, "in");
  }  // the flood hangs up without a word
  TcpTransport client(testing::make_context("worker", 0));
  EXPECT_TRUE(testing::eventually([&] {
    try {
      return client.connect(listener->address())->call(Message{1, "up", {}}).body == "up";
    } catch (const Error&) {
      return false;
    }
  }));
}

TEST(TcpErrors, MalformedAddressesAreInvalidArguments) {
  TcpTransport t(testing::make_context("ps", 0));
  EXPECT_THROW(t.listen("no-port-here", {}), InvalidArgument);
  EXPECT_THROW(t.connect("127.0.0.1:99999"), InvalidArgument);
}

}  // namespace
}  // namespace trib::net
