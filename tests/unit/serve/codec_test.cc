// The wire forms of `trib serve`: what a request must hold, and the line a refused one gets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "serve/binary_codec.h"
#include "serve/bearer_auth.h"
#include "serve/json_codec.h"
#include "serve/predictor.h"
#include "serve/request_error.h"

namespace trib::serve {
namespace {

// The status and the message of the RequestError `f` throws.
template <typename F>
std::pair<int, std::string> refusal(F f) {
  try {
    f();
  } catch (const RequestError& e) {
    return {e.status(), e.what()};
  }
  return {0, "not refused"};
}

TEST(JsonCodec, InstancesFlatOrNestedToTheInputShape) {
  RequestSpec spec{Shape{1, 2, 2}, 16, nullptr};
  Tensor flat = parse_json_request(R"({"instances": [[1, 2, 3, 4], [5, 6, 7, 8]]})", spec);
  Tensor nested = parse_json_request(R"({"instances": [[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]})", spec);
  ASSERT_EQ(flat.shape(), (Shape{2, 4}));
  ASSERT_EQ(nested.shape(), (Shape{2, 4}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(flat.data<float>()[i], float(i + 1));
    EXPECT_EQ(nested.data<float>()[i], float(i + 1));
  }
  auto [status, message] = refusal([&] { parse_json_request(R"({"instances": [[[[1, 2], [3]]]]})", spec); });
  EXPECT_EQ(status, 400);
  EXPECT_EQ(message, "instance 0 does not fit the input shape [1, 2, 2]: at depth 3 expected an array of 2, got 1 elements");
}

TEST(JsonCodec, EventsFollowTheStreamSchema) {
  config::SchemaDataConfig schema;
  schema.features = {"amount", "foreign"};
  schema.log1p = {"amount"};
  RequestSpec spec{Shape{2}, 16, &schema};
  Tensor t = parse_json_request(R"({"events": [{"amount": -9, "foreign": true, "label": 1}]})", spec);
  EXPECT_FLOAT_EQ(t.data<float>()[0], -std::log1p(9.0f));
  EXPECT_EQ(t.data<float>()[1], 1.0f);
  EXPECT_EQ(refusal([&] { parse_json_request(R"({"events": [{"amount": 3}]})", spec); }).second,
            "event 0 has no field 'foreign'");
  EXPECT_EQ(refusal([&] { parse_json_request(R"({"events": [{"amount": "3", "foreign": 0}]})", spec); }).second,
            "event 0, field 'amount' is string: expected a number");
}

TEST(JsonCodec, ResponseHoldsLogitsProbabilitiesAndPredictions) {
  std::string out = json_response(Tensor::from_vector(Shape{1, 2}, std::vector<float>{0.0f, std::log(3.0f)}), 7);
  EXPECT_NE(out.find("\"step\":7"), std::string::npos) << out;
  EXPECT_NE(out.find("\"probabilities\":[[0.25,0.75]]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"predictions\":[1]"), std::string::npos) << out;
}

TEST(BinaryCodec, RoundTripsAndChecksEveryHeaderField) {
  RequestSpec spec{Shape{3}, 4, nullptr};
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  std::string body = encode_binary(Tensor::from_vector(Shape{2, 3}, v));
  Tensor t = parse_binary_request(body, spec);
  ASSERT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::memcmp(t.data<float>(), v.data(), 24), 0);

  std::string bad_version = body;
  bad_version[4] = 2;
  EXPECT_EQ(refusal([&] { parse_binary_request(bad_version, spec); }).second,
            "binary format version 2: this server reads version 1");
  std::string bad_rank = body;
  bad_rank[6] = 9;
  EXPECT_EQ(refusal([&] { parse_binary_request(bad_rank, spec); }).second,
            "binary rank 9: expected 2 to 8 (the batch dimension first)");
  std::string huge = body;
  const std::uint32_t rows = 0xffffffff;
  std::memcpy(huge.data() + 8, &rows, 4);
  EXPECT_EQ(refusal([&] { parse_binary_request(huge, spec); }),
            (std::pair<int, std::string>{413, "4294967295 rows in one request: at most 4 (--max-batch)"}));
  EXPECT_EQ(refusal([&] { parse_binary_request(body.substr(0, 12), spec); }).second,
            "binary body of 12 bytes is shorter than its 16-byte header");
  std::vector<float> inf{1, 2, INFINITY};
  EXPECT_EQ(refusal([&] { parse_binary_request(encode_binary(Tensor::from_vector(Shape{1, 3}, inf)), spec); }).second,
            "instance 0, value 2 is infinite: expected a finite number");
}

TEST(BearerAuth, LoopbackAndTokens) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.3.2.1"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
  EXPECT_FALSE(is_loopback("::"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
  EXPECT_FALSE(is_loopback("example.org"));

  EXPECT_FALSE(BearerAuth(std::nullopt).refusal("").has_value());
  const std::string hex = "00112233445566778899aabbccddeeff";
  BearerAuth auth(net::ClusterSecret::from_hex(hex));
  EXPECT_FALSE(auth.refusal("Bearer " + hex).has_value());
  EXPECT_TRUE(auth.refusal("").has_value());
  EXPECT_TRUE(auth.refusal("Basic " + hex).has_value());
  EXPECT_TRUE(auth.refusal("Bearer " + hex.substr(0, 30) + "ef").has_value());
  EXPECT_TRUE(auth.refusal("Bearer zz").has_value());
}

TEST(Predictor, BatchesRoundUpToAPowerOfTwo) {
  EXPECT_EQ(Predictor::padded_batch(1), 1);
  EXPECT_EQ(Predictor::padded_batch(3), 4);
  EXPECT_EQ(Predictor::padded_batch(64), 64);
  EXPECT_EQ(Predictor::padded_batch(65), 128);
}

}  // namespace
}  // namespace trib::serve
