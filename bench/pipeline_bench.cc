// Pipeline parallelism's overhead: K stages of an MLP of equal dense layers, as threads in
// this process (each with its own one-thread engine, variables and optimizer), exchanging
// activations and gradients over the in-process transport (which copies every tensor, as a
// socket would), under GPipe and 1F1B; beside one process training the same model at the
// same batch on one thread:
//   bench=pipeline model=mlp_WxK stages=K micro_batches=M schedule=S images_per_s=N
//         single_images_per_s=N bubble=B ideal_bubble=I peak_activation_mb=P
// bubble: the stages' mean idle share of a step's wall time (1 - busy / wall); ideal_bubble:
// (K - 1) / (M + K - 1). Each stage recomputes its forward pass in its backward one
// (re-materialisation) except the last, whose backward is its only pass: the last stage
// works less than the others, which the ideal formula (equal stages) does not count.
//
//   pipeline_bench [--stages 2] [--micro-batches 8] [--micro-batch 32] [--width 1024] [--steps 8]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "trib/engine/context.h"
#include "trib/net/inproc_transport.h"
#include "trib/nn/dense.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/pipeline_stage.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace trib::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int stages = 2, micro_batches = 8, steps = 8;
  std::int64_t micro_batch = 32, width = 1024;
};

constexpr std::int64_t kClasses = 10;

std::shared_ptr<nn::Sequential> model(const Args& a) {
  auto seq = std::make_shared<nn::Sequential>();
  for (int i = 0; i < a.stages; ++i) seq->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = a.width, .activation = nn::Activation::relu}));
  seq->add(std::make_shared<nn::Dense>(nn::DenseOptions{.units = kClasses}));
  return seq;
}

std::shared_ptr<const Optimizer> sgd() { return make_optimizer(OptimizerConfig{}); }
std::shared_ptr<const Schedule> lr() { return make_schedule(ScheduleConfig{}); }

struct Data {
  Tensor features, labels;
};

Data data(const Args& a) {
  const std::int64_t n = a.micro_batch * a.micro_batches;
  Data d{Tensor::empty(DType::f32, Shape{n, a.width}), Tensor::empty(DType::i32, Shape{n})};
  Rng rng(1);
  for (std::int64_t i = 0; i < n * a.width; ++i) d.features.data<float>()[i] = rng.uniform(-1, 1);
  for (std::int64_t i = 0; i < n; ++i) d.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.below(kClasses));
  return d;
}

double single_images_per_s(const Args& a, const Data& d) {
  EngineContext engine(EngineOptions{1, 1});
  train::ModelSpec spec{model(a), Shape{a.width}, kClasses, 1};
  train::ModelGraph g(spec, a.micro_batch * a.micro_batches, true, engine);
  VariableStore vars;
  train::initialize_parameters(g.parameters(), 1, vars);
  std::vector<std::string> names;
  for (const auto& p : g.trainable_parameters()) names.push_back(p.name);
  update::LocalUpdate up({names, sgd(), lr()});
  auto step = [&](std::int64_t s) {
    auto r = g.run(d.features, d.labels, vars, static_cast<std::uint64_t>(s));
    up.apply(s, r.grads, vars);
  };
  step(1);
  const auto t0 = Clock::now();
  for (int s = 0; s < a.steps; ++s) step(s + 2);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(a.steps * a.micro_batch * a.micro_batches) / secs;
}

struct Result {
  double images_per_s = 0, bubble = 0, peak_mb = 0;
};

Result pipelined(const Args& a, const Data& d, config::PipelineSchedule schedule) {
  auto hub = std::make_shared<net::InProcHub>();
  auto seq = model(a);
  const int k = a.stages;
  Partition part;
  for (int s = 0; s < k; ++s) part.stages.push_back({s, s + 1 + (s + 1 == k ? 1 : 0)});
  std::vector<std::unique_ptr<StageLinks>> links;
  std::vector<std::string> addresses;
  for (int s = 0; s < k; ++s) {
    auto ctx = net::NetContext::create(net::ClusterSecret::from_hex("00112233445566778899aabbccddeeff"),
                                       net::PeerIdentity{"worker", s, ""}, {}, [](std::string_view) {});
    links.push_back(std::make_unique<StageLinks>(StageLinksOptions{std::make_shared<net::InProcTransport>(ctx, hub), s, k}));
    addresses.push_back(links.back()->listen("stage:0"));
  }
  std::vector<double> busy(static_cast<std::size_t>(k)), wall(static_cast<std::size_t>(k));
  std::vector<std::size_t> peak(static_cast<std::size_t>(k));
  double total_s = 0;
  std::vector<std::thread> threads;
  for (int s = 0; s < k; ++s)
    threads.emplace_back([&, s] {
      links[static_cast<std::size_t>(s)]->connect(s + 1 < k ? addresses[static_cast<std::size_t>(s + 1)] : "");
      EngineContext engine(EngineOptions{1, 1});
      StageModel sm({seq, Shape{a.width}, kClasses, 1, part.stages[static_cast<std::size_t>(s)], s + 1 == k, a.micro_batch}, engine);
      PipelineStage stage({&sm, links[static_cast<std::size_t>(s)].get(),
                           std::make_unique<update::LocalUpdate>(update::LocalUpdateOptions{sm.trainable_names(), sgd(), lr()}),
                           schedule, s, k, a.micro_batches});
      VariableStore vars;
      stage.start(vars, nullptr);
      const Tensor f = s == 0 ? d.features : Tensor(), y = s == 0 ? d.labels : Tensor();
      stage.step(1, a.steps + 1, f, y, vars);  // warm-up: allocation, kernel choice
      const auto t0 = Clock::now();
      for (int st = 0; st < a.steps; ++st) {
        StepStats r = stage.step(st + 2, a.steps + 1, f, y, vars);
        busy[static_cast<std::size_t>(s)] += r.busy_s;
        wall[static_cast<std::size_t>(s)] += r.wall_s;
        peak[static_cast<std::size_t>(s)] = std::max(peak[static_cast<std::size_t>(s)], r.peak_activation_bytes);
      }
      if (s == k - 1) total_s = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  for (auto& t : threads) t.join();
  Result r;
  r.images_per_s = static_cast<double>(a.steps * a.micro_batch * a.micro_batches) / total_s;
  for (int s = 0; s < k; ++s) {
    r.bubble += (1 - busy[static_cast<std::size_t>(s)] / wall[static_cast<std::size_t>(s)]) / k;
    r.peak_mb = std::max(r.peak_mb, static_cast<double>(peak[static_cast<std::size_t>(s)]) / (1024.0 * 1024.0));
  }
  return r;
}

int run(const Args& a) {
  const Data d = data(a);
  const double single = single_images_per_s(a, d);
  for (auto schedule : {config::PipelineSchedule::gpipe, config::PipelineSchedule::one_f_one_b}) {
    fmt::print(stderr, "pipeline_bench: {} stages, {} micro-batches of {}, {}\n", a.stages, a.micro_batches,
               a.micro_batch, config::to_string(schedule));
    Result r = pipelined(a, d, schedule);
    fmt::print("bench=pipeline model=mlp_{}x{} stages={} micro_batches={} schedule={} images_per_s={:.0f} "
               "single_images_per_s={:.0f} bubble={:.3f} ideal_bubble={:.3f} peak_activation_mb={:.2f}\n",
               a.width, a.stages, a.stages, a.micro_batches, config::to_string(schedule), r.images_per_s, single,
               r.bubble, ideal_bubble(a.stages, a.micro_batches), r.peak_mb);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace trib::pipeline

int main(int argc, char** argv) {
  trib::pipeline::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long v = std::stol(argv[i + 1]);
    if (k == "--stages") a.stages = static_cast<int>(v);
    else if (k == "--micro-batches") a.micro_batches = static_cast<int>(v);
    else if (k == "--micro-batch") a.micro_batch = v;
    else if (k == "--width") a.width = v;
    else if (k == "--steps") a.steps = static_cast<int>(v);
    else {
      fmt::print(stderr, "pipeline_bench: unknown option {}\n", k);
      return 2;
    }
  }
  try {
    return trib::pipeline::run(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pipeline_bench: {}\n", e.what());
    return 1;
  }
}
