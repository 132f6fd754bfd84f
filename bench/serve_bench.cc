// Prediction latency of `trib serve` over HTTP on loopback, and the forward pass alone:
//   bench=serve model=fraud batch=1 wire=json p50_ms=N p99_ms=N requests_per_s=N forward_only_images_per_s=N
// Target: p99 < 5 ms at batch 1 for the fraud model (examples/stream_fraud.yaml).
//
// The server is serve::PredictionServer, as `trib serve` runs it, in this process on
// 127.0.0.1 with a run directory this program writes (the example job's config.yaml and one
// checkpoint of initial values: latency does not depend on what the weights are). One client
// sends requests one after another over a kept-alive connection (cpp-httplib's client): a
// request's latency is from sending to having the whole response. wire=json sends
// {"instances": [...]}; wire=binary the TRBT form. forward_only_images_per_s is the
// Predictor's forward pass alone at that batch, no HTTP, no parsing.
//
//   serve_bench [--models fraud,mlp] [--batches 1,64] [--requests 2000] [--wires json,binary]
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/binary_codec.h"
#include "serve/prediction_server.h"
#include "serve/predictor.h"
#include "trib/checkpoint/checkpoint.h"
#include "trib/train/model_graph.h"

namespace {

using namespace trib;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> models{"fraud", "mlp"};
  std::vector<int> batches{1, 64};
  std::vector<std::string> wires{"json", "binary"};
  int requests = 2000;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--models") {
      o.models = split(v);
    } else if (k == "--batches") {
      o.batches.clear();
      for (const std::string& b : split(v)) o.batches.push_back(std::stoi(b));
    } else if (k == "--wires") {
      o.wires = split(v);
    } else if (k == "--requests") {
      o.requests = std::stoi(v);
    } else {
      std::fprintf(stderr, "serve_bench: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

// A run directory: the example job as config.yaml and a checkpoint of initial values.
fs::path make_run(const std::string& model, const fs::path& root) {
  const std::string job = model == "fraud" ? "stream_fraud.yaml" : "fashion_mlp.yaml";
  const fs::path run = root / model;
  fs::create_directories(run);
  fs::copy_file(fs::path(TRIB_SOURCE_DIR) / "examples" / job, run / "config.yaml", fs::copy_options::overwrite_existing);
  onnx_export::RunModel m = onnx_export::load_run_model(run);
  VariableStore vars;
  train::initialize_parameters(m.parameters, 1, vars);
  TensorMap tensors;
  for (const nn::Parameter& p : m.parameters) tensors[p.name] = vars.get(p.name);
  CheckpointWriter w(run / "checkpoints", 1);
  w.add_shard("model", tensors);
  w.publish();
  return run;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

double forward_only(const onnx_export::RunModel& run, const Tensor& features) {
  serve::Predictor predictor(run, EngineOptions{1, 1});
  const std::shared_ptr<const VariableStore> held = onnx_export::load_newest_variables(run)->vars;
  const VariableStore& vars = *held;
  for (int i = 0; i < 20; ++i) predictor.logits(features, vars);
  int n = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < 1.0) {
    predictor.logits(features, vars);
    ++n;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return n * features.shape()[0] / elapsed;
}

void bench_model(const std::string& model, const Options& o, const fs::path& root) {
  const fs::path run_dir = make_run(model, root);
  onnx_export::RunModel run = onnx_export::load_run_model(run_dir);
  serve::ServeOptions so;
  so.listen = {"127.0.0.1", 0};
  so.poll = std::chrono::milliseconds(60000);  // nothing to reload here
  serve::PredictionServer server(onnx_export::load_run_model(run_dir), so, Log("serve_bench", LogLevel::warn));
  const std::uint16_t port = server.bind();
  std::thread serving([&] { server.run(); });

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int batch : o.batches) {
    const std::int64_t width = run.input.numel();
    std::vector<float> values(static_cast<std::size_t>(batch * width));
    for (float& v : values) v = u(rng);
    Tensor features = Tensor::from_vector(Shape{batch, width}, values);
    const double forward = forward_only(run, features);
    for (const std::string& wire : o.wires) {
      std::string body, type;
      if (wire == "binary") {
        body = serve::encode_binary(features), type = "application/octet-stream";
      } else {
        nlohmann::json rows = nlohmann::json::array();
        for (int r = 0; r < batch; ++r) rows.push_back(std::vector<float>(values.begin() + r * width, values.begin() + (r + 1) * width));
        body = nlohmann::json{{"instances", rows}}.dump(), type = "application/json";
      }
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // headers and body go in two writes: no Nagle wait between them
      const int warmup = std::max(20, o.requests / 10);
      std::vector<double> ms;
      ms.reserve(static_cast<std::size_t>(o.requests));
      for (int i = 0; i < warmup + o.requests; ++i) {
        const auto t0 = Clock::now();
        auto res = client.Post("/v1/predict", body, type);
        if (!res || res->status != 200) {
          std::fprintf(stderr, "serve_bench: request failed: %s\n", res ? res->body.c_str() : "no response");
          std::exit(1);
        }
        if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      const double measured = std::accumulate(ms.begin(), ms.end(), 0.0) / 1000.0;
      std::printf("bench=serve model=%s batch=%d wire=%s p50_ms=%.3f p99_ms=%.3f requests_per_s=%.0f "
                  "forward_only_images_per_s=%.0f\n",
                  model.c_str(), batch, wire.c_str(), percentile(ms, 0.50), percentile(ms, 0.99),
                  static_cast<double>(ms.size()) / measured, forward);
      std::fflush(stdout);
    }
  }
  server.stop();
  serving.join();
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  const fs::path root = fs::temp_directory_path() / fmt::format("trib_serve_bench_{}", ::getpid());
  fs::remove_all(root);
  for (const std::string& m : o.models) {
    std::fprintf(stderr, "serve_bench: model %s\n", m.c_str());
    bench_model(m, o, root);
  }
  fs::remove_all(root);
  return 0;
}
