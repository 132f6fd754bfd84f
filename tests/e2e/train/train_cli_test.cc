// `trib train`, `trib eval` and `trib inspect` as processes, on a subset of Fashion-MNIST.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/trib_process.h"

namespace trib {
namespace {

namespace fs = std::filesystem;

const std::string kMlp = std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml";
// Small and quick: 3 epochs of 2,000 images, tested on 1,000.
const std::string kSmall =
    " --set data.train_subset=2000 --set data.test_subset=1000 --set training.epochs=3"
    " --set training.batch=50 --set threads.intra=1";

fs::path fresh_dir(const std::string& name) { return testing::fresh_path("e2e", name); }

// `trib` with a command line of plain words (these tests need no quoting), run to its end.
testing::TribRun run(const std::string& line) {
  std::istringstream words(line);
  std::vector<std::string> args;
  for (std::string w; words >> w;) args.push_back(w);
  return testing::run_trib(args, std::chrono::seconds(300));
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(TrainCli, TrainsEvaluatesAndWritesTheRunDirectory) {
  fs::path out = fresh_dir("train");
  auto r = run("train " + kMlp + kSmall + " --output " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done: test accuracy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("test_acc"), std::string::npos) << "an evaluation table" << r.output;

  std::string metrics = read(out / "metrics.jsonl");
  EXPECT_EQ(count_lines(metrics), 6) << "train and test rows for each of 3 epochs\n" << metrics;
  for (const char* key : {"\"step\"", "\"epoch\"", "\"split\"", "\"loss\"", "\"accuracy\"", "\"time_s\""})
    EXPECT_NE(metrics.find(key), std::string::npos) << key;
  EXPECT_NE(read(out / "config.yaml").find("train_subset: 2000"), std::string::npos) << "the resolved configuration";

  // The last evaluation: a model that learned something from 2,000 images.
  std::string last = metrics.substr(metrics.rfind("{"));
  double acc = std::stod(last.substr(last.find("\"accuracy\":") + 11));
  EXPECT_GT(acc, 0.70) << last;

  auto inspect = run("inspect " + out.string());
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("dense_1/w"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("[784, 256]"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("slot/dense_1/w/"), std::string::npos) << "optimizer slots" << inspect.output;
  EXPECT_NE(inspect.output.find("checksums verified"), std::string::npos);

  auto eval = run("eval " + kMlp + kSmall + " --checkpoint " + out.string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("test accuracy"), std::string::npos) << eval.output;
  // --set before the job file, as well as after it.
  auto eval_set_first = run("eval" + kSmall + " " + kMlp + " --checkpoint " + out.string());
  ASSERT_EQ(eval_set_first.exit_code, 0) << eval_set_first.output;
  EXPECT_NE(eval_set_first.output.find("test accuracy"), std::string::npos) << eval_set_first.output;
  fs::remove_all(out);
}

TEST(TrainCli, ResumeContinuesFromTheNewestCheckpoint) {
  fs::path out = fresh_dir("resume");
  auto first = run("train " + kMlp + kSmall + " --set training.epochs=1 --output " + out.string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = run("train " + kMlp + kSmall + " --resume " + out.string());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("at step 40"), std::string::npos) << second.output;
  fs::remove_all(out);
}

// Bad input: exit code 2, one line naming the problem, and an existing directory untouched.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fresh_dir("bad");
    fs::create_directories(out_);
    std::ofstream(out_ / "precious.txt") << "keep me";
  }
  void TearDown() override { fs::remove_all(out_); }

  void expect_rejected(const std::string& args, const std::string& needle) {
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in:\n" << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << "one clear line:\n" << r.output;
    EXPECT_EQ(read(out_ / "precious.txt"), "keep me");
    EXPECT_EQ(std::distance(fs::directory_iterator(out_), fs::directory_iterator()), 1)
        << "nothing written into the existing directory";
  }
  fs::path out_;
};

TEST_F(BadInput, MissingDatasetFile) {
  expect_rejected("train " + kMlp + " --set data.train.images=/nonexistent/train.gz --output " + out_.string(),
                  "/nonexistent/train.gz");
}

TEST_F(BadInput, TruncatedDatasetFile) {
  fs::path f = out_ / "truncated.idx";
  {
    std::ifstream in("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(fs::temp_directory_path() / "trib_truncated_labels.gz", std::ios::binary)
        << bytes.substr(0, bytes.size() / 2);
  }
  expect_rejected("train " + kMlp + " --set data.test.labels=" +
                      (fs::temp_directory_path() / "trib_truncated_labels.gz").string() + " --output " + out_.string(),
                  "trib_truncated_labels.gz");
  (void)f;
}

TEST_F(BadInput, WrongIdxMagic) {
  fs::path bad = fs::temp_directory_path() / "trib_wrong_magic.idx";
  std::ofstream(bad, std::ios::binary) << std::string("\x00\x00\x08\x07garbage", 11);
  expect_rejected("train " + kMlp + " --set data.test.labels=" + bad.string() + " --output " + out_.string(),
                  "magic");
}

TEST_F(BadInput, LabelOutOfRange) {
  expect_rejected("train " + kMlp + " --set data.num_classes=5 --output " + out_.string(), "label");
}

TEST_F(BadInput, YamlTypo) {
  expect_rejected("train " + kMlp + " --set training.epohcs=1 --output " + out_.string(),
                  "did you mean 'training.epochs'");
}

TEST_F(BadInput, LayersThatDoNotFit) {
  expect_rejected("train " + kMlp + " --set model.layers.3.units=7 --output " + out_.string(), "[");
}

TEST_F(BadInput, ExistingOutputDirectoryIsNotOverwritten) {
  expect_rejected("train " + kMlp + kSmall + " --output " + out_.string(), "already exists");
}

TEST_F(BadInput, ResumeFromADirectoryWithoutCheckpoints) {
  expect_rejected("train " + kMlp + " --resume " + out_.string(), "no checkpoint");
}

TEST_F(BadInput, UnknownCommandLineOption) {
  auto r = run("train " + kMlp + " --bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace trib
