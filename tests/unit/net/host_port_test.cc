// The one host:port parser and formatter (trib/net/host_port.h) that config, app and net use.
#include "trib/net/host_port.h"

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::net {
namespace {

std::string error_of(std::string_view text, HostPortRules rules = {}) {
  try {
    parse_host_port(text, "", rules);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(HostPort, ParsesAndFormatsEveryFormBackToItself) {
  for (const char* text : {"10.0.0.2:7001", "[::1]:7001", "[fe80::1%eth0]:80", "head-0.trib:7000", "h_1:0"}) {
    EXPECT_EQ(parse_host_port(text).to_string(), text);
  }
  EXPECT_EQ(parse_host_port("[::1]:5").host, "::1");
  EXPECT_EQ(format_host_port("::", 9), "[::]:9");
  EXPECT_EQ(parse_host_port(":5000", "127.0.0.1"), (HostPort{"127.0.0.1", 5000}));
  EXPECT_EQ(parse_host_port("", "127.0.0.1"), (HostPort{"127.0.0.1", 0}));
}

TEST(HostPort, RefusesMalformedTextInOneLineNamingIt) {
  EXPECT_EQ(error_of("head"), "address 'head' is not host:port: it has no ':PORT'");
  EXPECT_NE(error_of("fd00::1:7001").find("write an IPv6 host in brackets"), std::string::npos);
  EXPECT_NE(error_of("h:x").find("the port must be a number from 0 to 65535"), std::string::npos);
  EXPECT_NE(error_of("h:65536").find("from 0 to 65535"), std::string::npos);
  EXPECT_NE(error_of("h w:1").find("'h w' is not a host name or address"), std::string::npos);
  EXPECT_NE(error_of("h\n[x]:1").find("is not a host name"), std::string::npos);
  EXPECT_NE(error_of("[]:1").find("no IPv6 address"), std::string::npos);
}

TEST(HostPort, DialableAddressesNeedAHostAndAPort) {
  HostPortRules dial{true, true, "--join"};
  EXPECT_EQ(error_of(":7000", dial), "--join ':7000' is not host:port: the host is missing");
  EXPECT_NE(error_of("h:0", dial).find("from 1 to 65535"), std::string::npos);
  EXPECT_NE(error_of("", dial).find("no ':PORT'"), std::string::npos);
  EXPECT_EQ(parse_host_port("h:1", "", dial).port, 1);
}

}  // namespace
}  // namespace trib::net
