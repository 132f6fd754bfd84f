// The bearer token: required beyond loopback, enforced wherever one is given.
#include "e2e/serve/serve_fixture.h"

namespace trib::testing {
namespace {

class ServeToken : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new TinyRun("serve_token");
    run_->train(20);
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  static TinyRun* run_;
};
TinyRun* ServeToken::run_ = nullptr;

const std::string kBody = "{\"instances\": [[0.5, -1, 0.25, 2]]}";

TEST_F(ServeToken, BeyondLoopbackWithoutATokenDoesNotStart) {
  TribRun r = run_trib({"serve", run_->run_dir(), "--listen", "0.0.0.0:0"}, 30s);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--listen 0.0.0.0:0 is beyond loopback: requests need a bearer token"), std::string::npos)
      << r.output;
}

TEST_F(ServeToken, ATokenFileIsEnforced) {
  const fs::path token_file = run_->dir().path() / "serve.token";
  Server server(run_->run_dir(), {"--listen", "0.0.0.0:0", "--token-file", token_file.string()});
  EXPECT_TRUE(server.process().printed("created a bearer token in")) << server.process().output();
  EXPECT_TRUE(server.process().printed("(bearer token required)")) << server.process().output();
  std::ifstream in(token_file);
  std::string token;
  in >> token;
  ASSERT_GE(token.size(), 32u);
  EXPECT_EQ(fs::status(token_file).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);

  httplib::Client c = server.client();
  auto res = c.Post("/v1/predict", kBody, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("needs \\\"Authorization: Bearer <token>\\\""), std::string::npos) << res->body;
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  for (const std::string& wrong : {std::string("00112233445566778899aabbccddeeff"), std::string("not-hex"), token + "00"}) {
    res = c.Post("/v1/predict", {{"Authorization", "Bearer " + wrong}}, kBody, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << wrong;
  }
  res = c.Get("/v1/model");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);  // every endpoint

  res = c.Post("/v1/predict", {{"Authorization", "Bearer " + token}}, kBody, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(ServeToken, TheEnvironmentVariableGivesTheTokenToo) {
  Server server(run_->run_dir(), {}, {{"TRIB_SERVE_TOKEN", kSecretHex}});
  httplib::Client c = server.client();
  auto res = c.Post("/v1/predict", kBody, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = c.Post("/v1/predict", {{"Authorization", std::string("Bearer ") + kSecretHex}}, kBody, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace trib::testing
