// Parsing `cluster.store: etcd://...` into endpoints, and the one-line errors for bad URLs.
#include <gtest/gtest.h>

#include <string>

#include "trib/cluster/etcd_url.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

std::string error_of(const std::string& url) {
  try {
    parse_etcd_url(url);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(EtcdUrl, ParsesEveryEndpointInOrder) {
  auto eps = parse_etcd_url("etcd://h1:2379,10.0.0.2:2380,[::1]:2381");
  ASSERT_EQ(eps.size(), 3u);
  EXPECT_EQ(eps[0].host, "h1");
  EXPECT_EQ(eps[0].port, 2379);
  EXPECT_EQ(eps[1].to_string(), "10.0.0.2:2380");
  EXPECT_EQ(eps[2].host, "::1");
  EXPECT_EQ(eps[2].to_string(), "[::1]:2381");
  EXPECT_EQ(eps[2].base_url(), "http://[::1]:2381");
  EXPECT_EQ(parse_etcd_url("etcd://localhost:2379").size(), 1u);
}

TEST(EtcdUrl, BadUrlsNameTheEntryAndWhatWasExpected) {
  EXPECT_NE(error_of("http://h1:2379").find("expected etcd://host:port"), std::string::npos);
  EXPECT_NE(error_of("etcd://").find("endpoint 1 '' is not host:port: it is empty"), std::string::npos)
      << error_of("etcd://");
  EXPECT_NE(error_of("etcd://h1:2379,").find("endpoint 2 ''"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:2379,,h2:2379").find("stray comma"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1").find("endpoint 1 'h1' is not host:port: it has no ':PORT'"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:0").find("from 1 to 65535"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:65536").find("from 1 to 65535"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:23x9").find("from 1 to 65535"), std::string::npos);
  EXPECT_NE(error_of("etcd://:2379").find("the host is missing"), std::string::npos);
  EXPECT_NE(error_of("etcd://::1:2379").find("in brackets"), std::string::npos);
  EXPECT_NE(error_of("etcd://h 1:2379").find("'h 1' is not a host name"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:2379/jobs").find("without a path"), std::string::npos);
  EXPECT_NE(error_of("etcd://h1:2379,H1:2379").find("'H1:2379' is listed twice"), std::string::npos);
  // Every message names the URL it is about.
  EXPECT_NE(error_of("etcd://h1:99999").find("etcd URL 'etcd://h1:99999'"), std::string::npos);
}

TEST(EtcdUrl, StoreValuesAreEmptyOrEtcd) {
  EXPECT_NO_THROW(validate_store_url(""));
  EXPECT_NO_THROW(validate_store_url("etcd://127.0.0.1:2379"));
  EXPECT_TRUE(is_etcd_url("etcd://a:1"));
  EXPECT_FALSE(is_etcd_url(""));
  try {
    validate_store_url("consul://h:8500");
    FAIL() << "consul:// accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("store 'consul://h:8500' is not supported"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_store_url("etcd://h1"), InvalidArgument);
}

}  // namespace
}  // namespace trib::cluster
