#include "trib/net/cluster_secret.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "trib/core/error.h"

namespace trib::net {
namespace {

TEST(ClusterSecret, GeneratedSecretsAreRandomAndRoundTripThroughHex) {
  ClusterSecret a = ClusterSecret::generate();
  ClusterSecret b = ClusterSecret::generate();
  EXPECT_EQ(a.bytes().size(), 32u);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(ClusterSecret::from_hex(a.to_hex()) == a);
}

TEST(ClusterSecret, LoadsFromFileWithSurroundingWhitespace) {
  auto path = std::filesystem::temp_directory_path() / "trib_net_secret_test.hex";
  ClusterSecret s = ClusterSecret::generate();
  std::ofstream(path) << "  " << s.to_hex() << "\n";
  EXPECT_TRUE(ClusterSecret::from_file(path) == s);
  std::filesystem::remove(path);
}

TEST(ClusterSecret, LoadsFromTheNamedEnvironmentVariable) {
  ClusterSecret s = ClusterSecret::generate();
  ::setenv("TRIB_NET_TEST_SECRET", s.to_hex().c_str(), 1);
  EXPECT_TRUE(ClusterSecret::from_env("TRIB_NET_TEST_SECRET") == s);
  ::unsetenv("TRIB_NET_TEST_SECRET");
  EXPECT_THROW(ClusterSecret::from_env("TRIB_NET_TEST_SECRET"), NotFound);
}

TEST(ClusterSecret, BadInputGetsAMessageNamingTheSource) {
  try {
    ClusterSecret::from_file("/nonexistent/secret");
    FAIL();
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/secret"), std::string::npos);
  }
  EXPECT_THROW(ClusterSecret::from_hex("abc"), InvalidArgument);            // odd length
  EXPECT_THROW(ClusterSecret::from_hex("zz" + std::string(30, '0')), InvalidArgument);
  EXPECT_THROW(ClusterSecret::from_hex("0011"), InvalidArgument);           // too short
}

}  // namespace
}  // namespace trib::net
