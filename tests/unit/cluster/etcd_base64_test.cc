// The codec for etcd's JSON gateway, and prefix ranges.
#include <gtest/gtest.h>

#include "cluster/etcd_base64.h"
#include "trib/core/error.h"

namespace trib::cluster::etcd {
namespace {

TEST(EtcdBase64, RoundTripsAnyBytes) {
  for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                        std::string("/trib/j/kv/n"), std::string("a\0b\xff\x80", 5)})
    EXPECT_EQ(base64_decode(base64_encode(s), "test"), s);
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_decode("YmFy", "test"), "bar");
}

TEST(EtcdBase64, BadTextFailsNamingWhatItCameWith) {
  try {
    base64_decode("!!!!", "get '/trib/j/kv/x' from 127.0.0.1:2379");
    FAIL() << "'!!!!' decoded";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find("get '/trib/j/kv/x' from 127.0.0.1:2379"), std::string::npos) << e.what();
  }
  EXPECT_THROW(base64_decode("abc", "x"), Corruption);  // not a whole group
}

TEST(EtcdBase64, PrefixEndIsTheFirstKeyPastThePrefix) {
  EXPECT_EQ(prefix_end("/trib/j/"), "/trib/j0");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff", 1)), std::string(1, '\0'));
}

}  // namespace
}  // namespace trib::cluster::etcd
