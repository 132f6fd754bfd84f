// A tiny trained run (4 features, 3 classes, from CSV files the fixture writes) and
// `trib serve` on it as a process, with what a test compares against: `trib eval --outputs`.
#pragma once

#include <httplib.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "e2e/trib_process.h"

namespace trib::testing {

inline constexpr int kTestRows = 40;
inline constexpr int kFeatures = 4;
inline constexpr int kClasses = 3;

// A .npy file of f32 as `trib eval --outputs` writes it: the values, C order.
inline std::vector<float> read_npy(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GE(data.size(), 10u) << path;
  if (data.size() < 10) return {};
  const std::size_t header = 10 + (std::uint8_t(data[8]) | std::uint8_t(data[9]) << 8);
  std::vector<float> out((data.size() - header) / 4);
  std::memcpy(out.data(), data.data() + header, out.size() * 4);
  return out;
}

class TinyRun {
 public:
  explicit TinyRun(const std::string& name) : dir_(name) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2, 2);
    for (const auto& [file, n] : {std::pair{"train.csv", 256}, std::pair{"test.csv", kTestRows}}) {
      std::ofstream out(dir_.path() / file);
      out << "a,b,c,d,label\n";
      for (int i = 0; i < n; ++i) {
        float x[kFeatures];
        for (float& v : x) v = std::round(u(rng) * 1000) / 1000;
        const int y = x[0] + x[1] > 0.5f ? 0 : (x[2] > 0 ? 1 : 2);
        out << x[0] << "," << x[1] << "," << x[2] << "," << x[3] << "," << y << "\n";
        if (file == std::string("test.csv")) test_rows_.push_back({x[0], x[1], x[2], x[3]});
      }
    }
    job_ = dir_.file("tiny.yaml", R"(name: tiny
model:
  input: [4]
  classes: 3
  layers:
    - {type: dense, units: 16, activation: relu}
    - {type: dropout, rate: 0.1}
    - {type: dense, units: 3}
data:
  format: csv
  train: {path: )" + (dir_.path() / "train.csv").string() + R"(}
  test: {path: )" + (dir_.path() / "test.csv").string() + R"(}
optimizer: {name: adam, lr: 0.01}
training: {steps: 20, batch: 16, seed: 1, checkpoint_every: 20, eval_every: 20}
threads: {intra: 1, inter: 1}
)");
    run_ = (dir_.path() / "run").string();
  }

  // Trains to `steps` (a first run, or a resumed one going further).
  void train(int steps) {
    std::vector<std::string> args{"train", job_, "--set", "training.steps=" + std::to_string(steps)};
    if (fs::exists(run_)) {
      args.insert(args.end(), {"--resume", run_});
    } else {
      args.insert(args.end(), {"--output", run_});
    }
    TribRun r = run_trib(args, 120s);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // `trib eval`'s logits for the test rows at checkpoint step `step`, row-major.
  std::vector<float> eval_logits(int step) {
    const fs::path out = dir_.path() / ("eval-" + std::to_string(step) + ".npy");
    TribRun r = run_trib({"eval", job_, "--checkpoint", run_ + "/checkpoints/ckpt-" + std::to_string(step), "--outputs",
                          out.string()},
                         60s);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return read_npy(out);
  }

  const std::string& run_dir() const { return run_; }
  const std::vector<std::vector<float>>& test_rows() const { return test_rows_; }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::string job_, run_;
  std::vector<std::vector<float>> test_rows_;
};

// `trib serve RUN --listen 127.0.0.1:0 ...`, up and listening.
class Server {
 public:
  Server(const std::string& run_dir, std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args{"serve", run_dir, "--poll-ms", "50"};
    if (std::find(extra.begin(), extra.end(), "--listen") == extra.end()) args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Trib>("serve", args, std::vector<std::string>{}, env);
    const bool up = wait_until({process_.get()}, [&] { return !process_->find(R"(on http://[^ ]*:(\d+))").empty() ||
                                                              process_->exited(); },
                               30s);
    EXPECT_TRUE(up && !process_->exited()) << process_->output();
    const std::string port = process_->find(R"(on http://[^ ]*:(\d+))");
    port_ = port.empty() ? 0 : std::stoi(port);
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c;
  }
  Trib& process() { return *process_; }
  int port() const { return port_; }

 private:
  std::unique_ptr<Trib> process_;
  int port_ = 0;
};

}  // namespace trib::testing
