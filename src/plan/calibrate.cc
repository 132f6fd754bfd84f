#include "plan/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "trib/core/random.h"
#include "trib/engine/context.h"
#include "trib/optim/schedule.h"
#include "trib/optim/sgd.h"
#include "trib/strategy/make_strategy.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace trib::plan {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Measured {
  double step_s = 0;
  std::vector<GradientTiming> gradients;
};

// One step's compute for `batch` on one thread: median of 5 chunks after 3 warm-up steps; and
// when each gradient was ready, as a fraction of its step (the median over the timed steps).
Measured measure_step(const config::JobConfig& job, std::int64_t batch, double seconds) {
  EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 1});
  train::ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
  train::ModelGraph graph(spec, batch, /*training=*/true, engine);
  VariableStore vars;
  train::initialize_parameters(graph.parameters(), spec.seed, vars);
  std::vector<std::string> names;
  for (const nn::Parameter& p : graph.trainable_parameters()) names.push_back(p.name);
  update::LocalUpdate update(
      update::LocalUpdateOptions{names, std::make_shared<Sgd>(), std::make_shared<ConstantSchedule>(0.001f)});
  update.start(vars, nullptr);
  std::vector<std::int64_t> dims{batch};
  for (std::int64_t d : job.model.input) dims.push_back(d);
  Rng rng(1);
  Tensor x = Tensor::empty(DType::f32, Shape(dims));
  for (float& v : x.span<float>()) v = rng.normal();
  Tensor y = Tensor::empty(DType::i32, Shape{batch});
  for (std::int32_t& v : y.span<std::int32_t>()) v = static_cast<std::int32_t>(rng.below(job.model.classes));
  std::int64_t step = 0;
  const std::size_t count = names.size();
  std::vector<std::vector<double>> ready(count);  // per gradient, per timed step
  bool timed = false;
  auto one_step = [&] {
    const auto began = Clock::now();
    std::vector<double> at(count, 0);
    train::StepResult r = graph.run(x, y, vars, static_cast<std::uint64_t>(step),
                                    [&](std::size_t i, const update::GradTensor&) {
                                      if (i < count) at[i] = seconds_since(began);
                                    });
    update.apply(step++, r.grads, vars);
    const double took = std::max(seconds_since(began), 1e-9);
    if (timed)
      for (std::size_t i = 0; i < count; ++i) ready[i].push_back((at[i] > 0 ? at[i] : took) / took);
  };
  for (int i = 0; i < 3; ++i) one_step();
  auto t = Clock::now();
  one_step();
  constexpr int kChunks = 5;
  const auto per_chunk = std::max<std::int64_t>(1, std::llround(seconds / kChunks / std::max(seconds_since(t), 1e-6)));
  std::vector<double> chunk;
  timed = true;
  for (int c = 0; c < kChunks; ++c) {
    t = Clock::now();
    for (std::int64_t i = 0; i < per_chunk; ++i) one_step();
    chunk.push_back(seconds_since(t) / static_cast<double>(per_chunk));
  }
  update.finish();
  std::sort(chunk.begin(), chunk.end());
  Measured m;
  m.step_s = chunk[kChunks / 2];
  const std::vector<nn::Parameter> params = graph.trainable_parameters();
  for (std::size_t i = 0; i < count; ++i) {
    std::sort(ready[i].begin(), ready[i].end());
    m.gradients.push_back({4 * params[i].shape.numel(), ready[i].empty() ? 1.0 : ready[i][ready[i].size() / 2]});
  }
  return m;
}

}  // namespace

JobCosts job_shape(const config::JobConfig& job, const std::vector<int>& server_counts) {
  JobCosts costs;
  std::vector<ps::VariableInfo> vars = strategy::trainable_variables(job);
  for (const ps::VariableInfo& v : vars) costs.parameter_bytes += v.bytes();
  for (int k : server_counts) {
    config::JobConfig with = job;
    with.cluster.ps = k;
    costs.server_imbalance[k] = strategy::make_placement(with, vars).max_mean_ratio();
  }
  const double bucket = std::max(1.0, job.strategy.bucket_mb * (1 << 20));
  costs.allreduce_buckets = std::max(1, static_cast<int>(std::ceil(static_cast<double>(costs.parameter_bytes) / bucket)));
  costs.bucket_bytes = static_cast<std::int64_t>(bucket);
  return costs;
}

JobCosts calibrate(const config::JobConfig& job, const CalibrationOptions& options) {
  JobCosts costs = job_shape(job, options.server_counts);
  for (std::int64_t batch : options.batches) {
    Measured m = measure_step(job, batch, options.seconds_per_batch);
    costs.step_s_one_core[batch] = m.step_s;
    costs.gradients[batch] = std::move(m.gradients);
  }
  return costs;
}

void measure_gradient_timing(const config::JobConfig& job, JobCosts& costs, double seconds) {
  for (const auto& [batch, step_s] : costs.step_s_one_core)
    costs.gradients[batch] = measure_step(job, batch, seconds).gradients;
}

}  // namespace trib::plan
