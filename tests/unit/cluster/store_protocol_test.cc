// The coordinator's request bodies: decoded once, every field typed and every size bounded.
#include <gtest/gtest.h>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"

namespace trib::cluster::proto {
namespace {

std::string error_of(std::uint32_t method, const std::string& body) {
  try {
    decode_request(method, body);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(StoreProtocol, DecodesEachRequest) {
  Request set = decode_request(kStoreSet, R"({"key":"ps/0/address","value":"10.0.0.2:7001"})");
  EXPECT_EQ(set.key, "ps/0/address");
  EXPECT_EQ(set.value, "10.0.0.2:7001");
  EXPECT_EQ(decode_request(kStoreAdd, R"({"key":"next/worker","delta":-2})").delta, -2);
  EXPECT_EQ(decode_request(kJoin, R"({"role":"worker"})").index, -1);
  Request join = decode_request(kJoin, R"({"role":"ps","index":3})");
  EXPECT_EQ(join.role, "ps");
  EXPECT_EQ(join.index, 3);
  EXPECT_EQ(decode_request(kLeave, R"({"role":"worker","index":0})").index, 0);
}

TEST(StoreProtocol, RefusesMalformedBodiesInOneLineNamingTheRequest) {
  EXPECT_NE(error_of(kStoreSet, "{").find("malformed store set request"), std::string::npos);
  EXPECT_NE(error_of(kStoreGet, R"({"key":7})").find("'key' must be a string"), std::string::npos);
  EXPECT_NE(error_of(kStoreAdd, R"({"key":"k","delta":"1"})").find("'delta' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(kStoreSet, R"({"key":"k"})").find("malformed store set request"), std::string::npos);
  EXPECT_NE(error_of(kLeave, R"({"role":"worker"})").find("malformed leave request"), std::string::npos);
  EXPECT_NE(error_of(kJoin, R"({"role":"ps","index":-5})").find("out of range"), std::string::npos);
  EXPECT_NE(error_of(0x999, "{}").find("unknown method 0x999"), std::string::npos);
  EXPECT_NE(error_of(kStoreGet, "[1,2]").find("not a JSON object"), std::string::npos);
  for (const std::string& e : {error_of(kStoreSet, "{"), error_of(kStoreGet, "\"\n\"")}) {
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(StoreProtocol, ARejoinNamesItsIndexIncarnationAndGeneration) {
  Request r = decode_request(kJoin, R"({"role":"worker","index":1,"rejoin":true,"incarnation":4,"generation":9})");
  EXPECT_TRUE(r.rejoin);
  EXPECT_EQ(r.index, 1);
  EXPECT_EQ(r.incarnation, 4);
  EXPECT_EQ(r.generation, 9);
  EXPECT_FALSE(decode_request(kJoin, R"({"role":"worker"})").rejoin);
  EXPECT_NE(error_of(kJoin, R"({"role":"worker","rejoin":true,"incarnation":4,"generation":9})")
                .find("a rejoin names the index it holds"),
            std::string::npos);
  EXPECT_NE(error_of(kJoin, R"({"role":"worker","index":1,"rejoin":true,"generation":9})").find("malformed join"),
            std::string::npos);
  EXPECT_NE(error_of(kJoin, R"({"role":"worker","index":1,"rejoin":"yes"})").find("'rejoin' must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of(kJoin, R"({"role":"worker","index":1,"rejoin":true,"incarnation":-1,"generation":9})")
                .find("must not be negative"),
            std::string::npos);
}

TEST(StoreProtocol, BoundsEverySize) {
  std::string long_key(kMaxKeyBytes + 1, 'k');
  EXPECT_NE(error_of(kStoreGet, R"({"key":")" + long_key + R"("})").find("at most 256"), std::string::npos);
  std::string big_value(kMaxValueBytes + 1, 'v');
  EXPECT_NE(error_of(kStoreSet, R"({"key":"k","value":")" + big_value + R"("})").find("'value' has"),
            std::string::npos);
  std::string huge(kMaxRequestBytes + 1, ' ');
  EXPECT_NE(error_of(kStoreGet, huge).find("the body has"), std::string::npos);
  std::string value(kMaxValueBytes, 'v');
  EXPECT_EQ(decode_request(kStoreSet, R"({"key":"k","value":")" + value + R"("})").value.size(), kMaxValueBytes);
}

}  // namespace
}  // namespace trib::cluster::proto
