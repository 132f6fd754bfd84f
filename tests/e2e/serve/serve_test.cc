// `trib serve` as a process on a tiny trained run: its JSON and binary predictions equal
// `trib eval`'s forward outputs; a checkpoint written while it serves is picked up; bad
// requests get a 4xx naming the problem and the server goes on; a token is enforced.
#include <nlohmann/json.hpp>

#include "e2e/serve/serve_fixture.h"
#include "serve/binary_codec.h"

namespace trib::testing {
namespace {

using nlohmann::json;

std::string instances_json(const std::vector<std::vector<float>>& rows) {
  return json{{"instances", rows}}.dump();
}

std::vector<float> logits_of(const std::string& body) {
  std::vector<float> out;
  const json doc = json::parse(body);
  for (const json& row : doc.at("logits"))
    for (const json& v : row) out.push_back(v.get<float>());
  return out;
}

// The forward pass runs the same kernels as eval's, at another batch size: equal to float
// rounding, and the same argmax.
void expect_same_logits(const std::vector<float>& served, const std::vector<float>& eval) {
  ASSERT_EQ(served.size(), eval.size());
  for (std::size_t i = 0; i < served.size(); ++i)
    EXPECT_NEAR(served[i], eval[i], 1e-5f * std::max(1.0f, std::fabs(eval[i]))) << "value " << i;
  for (std::size_t r = 0; r < served.size() / kClasses; ++r) {
    auto s = served.begin() + r * kClasses, e = eval.begin() + r * kClasses;
    EXPECT_EQ(std::max_element(s, s + kClasses) - s, std::max_element(e, e + kClasses) - e) << "row " << r;
  }
}

std::string binary_request(const std::vector<std::vector<float>>& rows) {
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return serve::encode_binary(Tensor::from_vector(Shape{std::int64_t(rows.size()), kFeatures}, flat));
}

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new TinyRun("serve");
    run_->train(20);
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  static TinyRun* run_;
};
TinyRun* Serve::run_ = nullptr;

TEST_F(Serve, JsonAndBinaryPredictionsEqualEvalOutputs) {
  const std::vector<float> eval = run_->eval_logits(20);
  Server server(run_->run_dir());
  httplib::Client c = server.client();

  auto res = c.Post("/v1/predict", instances_json(run_->test_rows()), "application/json");
  ASSERT_TRUE(res) << server.process().output();
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body).at("step"), 20);
  expect_same_logits(logits_of(res->body), eval);
  const json probs = json::parse(res->body).at("probabilities");
  ASSERT_EQ(probs.size(), std::size_t(kTestRows));
  float sum = 0;
  for (const json& p : probs[0]) sum += p.get<float>();
  EXPECT_NEAR(sum, 1.0f, 1e-5f);

  res = c.Post("/v1/predict", binary_request(run_->test_rows()), "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Trib-Step"), "20");
  const std::string& b = res->body;
  ASSERT_EQ(b.size(), 8u + 8u + sizeof(float) * kTestRows * kClasses);
  EXPECT_EQ(b.substr(0, 4), "TRBT");
  std::uint32_t dims[2];
  std::memcpy(dims, b.data() + 8, 8);
  EXPECT_EQ(dims[0], std::uint32_t(kTestRows));
  EXPECT_EQ(dims[1], std::uint32_t(kClasses));
  std::vector<float> binary(kTestRows * kClasses);
  std::memcpy(binary.data(), b.data() + 16, binary.size() * 4);
  expect_same_logits(binary, eval);

  // One row at a time (the batch-1 graph) gives the same rows.
  for (int r : {0, 17}) {
    res = c.Post("/v1/predict", instances_json({run_->test_rows()[r]}), "application/json");
    ASSERT_TRUE(res);
    expect_same_logits(logits_of(res->body), std::vector<float>(eval.begin() + r * kClasses,
                                                                eval.begin() + (r + 1) * kClasses));
  }
}

TEST_F(Serve, BadRequestsGetA4xxNamingTheProblemAndTheServerGoesOn) {
  Server server(run_->run_dir(), {"--max-batch", "8", "--max-body-bytes", "4096"});
  httplib::Client c = server.client();
  struct Case {
    std::string body, type;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{\"instances\": [[1, 2, 3]]}", "application/json", 400, "instance 0 has 3 elements: the model takes 4 values"},
      {"{\"instances\": [[1, 2, \"x\", 4]]}", "application/json", 400, "instance 0, value 2 is string: expected a number"},
      {"{\"instances\": [[1, 2, 3, 1e39]]}", "application/json", 400, "instance 0, value 3 is infinite"},
      {"{\"instances\": [[1, 2, 3, NaN]]}", "application/json", 400, "the body is not JSON"},
      {"[1, 2, 3, 4]", "application/json", 400, "expected a JSON object with \"instances\""},
      {"{\"instances\": []}", "application/json", 400, "\"instances\" is empty"},
      {"{\"events\": [{\"a\": 1}]}", "application/json", 400, "\"events\" needs a stream job's model"},
      {instances_json(std::vector<std::vector<float>>(9, {1, 2, 3, 4})), "application/json", 413,
       "9 instances in one request: at most 8 (--max-batch)"},
      {std::string(5000, ' '), "application/json", 413, "the body is over 4096 bytes (--max-body-bytes)"},
      {"1,2,3,4", "text/csv", 415, "Content-Type text/csv: expected application/json or application/octet-stream"},
      {"TRBX", "application/octet-stream", 400, "does not start with the magic \"TRBT\""},
      {binary_request({{1, 2, 3, 4}}).substr(0, 20), "application/octet-stream", 400,
       "binary body holds 4 bytes of values but shape [1, 4] needs 16"},
      {binary_request({{1, 2, 3, std::nanf("")}}), "application/octet-stream", 400, "instance 0, value 3 is NaN"},
  };
  for (const Case& k : cases) {
    auto res = c.Post("/v1/predict", k.body, k.type);
    ASSERT_TRUE(res) << k.message << "\n" << server.process().output();
    EXPECT_EQ(res->status, k.status) << k.message << ": " << res->body;
    const std::string error = json::parse(res->body).at("error");
    EXPECT_NE(error.find(k.message), std::string::npos) << "expected '" << k.message << "' in: " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Binary with the wrong shape: the dimensions say [1, 5].
  std::vector<float> five{1, 2, 3, 4, 5};
  auto res = c.Post("/v1/predict", serve::encode_binary(Tensor::from_vector(Shape{1, 5}, five)),
                    "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("binary shape [1, 5] does not fit the model's input: expected [rows, 4]"), std::string::npos)
      << res->body;
  res = c.Get("/v1/nowhere");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);

  // Still serving.
  res = c.Post("/v1/predict", instances_json({run_->test_rows()[0]}), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_FALSE(server.process().exited());
}

TEST_F(Serve, ANewCheckpointIsServedOnceWrittenAndNotBefore) {
  Server server(run_->run_dir());
  httplib::Client c = server.client();
  auto before = c.Post("/v1/predict", instances_json(run_->test_rows()), "application/json");
  ASSERT_TRUE(before);
  ASSERT_EQ(json::parse(before->body).at("step"), 20);

  run_->train(40);  // the run goes on: ckpt-40 is published while the server runs
  const bool reloaded = wait_until({&server.process()}, [&] {
    auto h = c.Get("/v1/health");
    return h && h->status == 200 && json::parse(h->body).at("step") == 40;
  }, 30s);
  ASSERT_TRUE(reloaded) << server.process().output();
  EXPECT_TRUE(server.process().printed("reloaded: serving")) << server.process().output();

  auto after = c.Post("/v1/predict", instances_json(run_->test_rows()), "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(json::parse(after->body).at("step"), 40);
  expect_same_logits(logits_of(after->body), run_->eval_logits(40));
  EXPECT_NE(logits_of(after->body), logits_of(before->body));  // another model answers
}

TEST(ServeStart, ARunWithoutACheckpointIsServedOnceItWritesOne) {
  TinyRun run("serve_empty");
  run.train(20);
  // The run directory as `trib train` has it before its first checkpoint: no checkpoints yet.
  fs::rename(fs::path(run.run_dir()) / "checkpoints", run.dir().path() / "held");
  Server server(run.run_dir());
  httplib::Client c = server.client();
  auto res = c.Post("/v1/predict", instances_json({run.test_rows()[0]}), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("no checkpoint yet"), std::string::npos) << res->body;
  fs::rename(run.dir().path() / "held", fs::path(run.run_dir()) / "checkpoints");
  ASSERT_TRUE(wait_until({&server.process()}, [&] {
    auto h = c.Get("/v1/health");
    return h && h->status == 200;
  }, 30s)) << server.process().output();
  res = c.Post("/v1/predict", instances_json({run.test_rows()[0]}), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace trib::testing

namespace trib::testing {
namespace {

TEST(ServeStart, WaitsForARunStartingAlongside) {
  TinyRun run("serve_wait");
  Trib serve("serve", {"serve", run.run_dir(), "--listen", "127.0.0.1:0", "--wait", "--poll-ms", "50"});
  ASSERT_TRUE(wait_until({&serve}, [&] { return serve.printed("waiting for"); }, 30s)) << serve.output();
  run.train(20);
  ASSERT_TRUE(wait_until({&serve}, [&] { return !serve.find(R"(on http://[^ ]*:(\d+))").empty(); }, 30s))
      << serve.output();
  httplib::Client c("127.0.0.1", std::stoi(serve.find(R"(on http://[^ ]*:(\d+))")));
  ASSERT_TRUE(wait_until({&serve}, [&] {
    auto h = c.Get("/v1/health");
    return h && h->status == 200;
  }, 30s)) << serve.output();
}

TEST(ServeStart, NotARunDirectoryIsOneLine) {
  TribRun r = run_trib({"serve", "/nonexistent/run", "--listen", "127.0.0.1:0"}, 30s);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/run is not a run directory: it has no config.yaml"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace trib::testing

namespace trib::testing {
namespace {

// A newer checkpoint that does not load (a damaged shard) is reported, and the one served
// stays: never half a model, never a model that failed its checksums.
TEST(ServeReload, ADamagedCheckpointIsNotServed) {
  TinyRun run("serve_damaged");
  run.train(20);
  Server server(run.run_dir());
  const fs::path ckpts = fs::path(run.run_dir()) / "checkpoints";
  fs::copy(ckpts / "ckpt-20", run.dir().path() / "ckpt-30", fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(run.dir().path() / "ckpt-30"))
    if (e.path().extension() == ".safetensors") {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(-3, std::ios::end);
      f.put('\x5a');
    }
  fs::rename(run.dir().path() / "ckpt-30", ckpts / "ckpt-30");  // appears whole, as a publish does
  ASSERT_TRUE(wait_until({&server.process()}, [&] { return server.process().printed("ckpt-30 not loaded, still serving step 20"); },
                         30s))
      << server.process().output();
  httplib::Client c = server.client();
  auto res = c.Post("/v1/predict", "{\"instances\": [[1, 2, 3, 4]]}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Trib-Step"), "20");
}

}  // namespace
}  // namespace trib::testing
