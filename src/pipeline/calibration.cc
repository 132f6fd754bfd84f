// The planner's calibration pass: each layer alone, as a one-layer stage at the micro-batch
// size, timed over a few runs of its backward graph (which recomputes its forward), with its
// variables' and optimizer state's sizes taken from one real update.
#include <chrono>
#include <functional>

#include "trib/engine/context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/planner.h"
#include "trib/pipeline/stage_model.h"
#include "trib/update/local_update.h"

namespace trib::pipeline {

namespace {

constexpr int kTimedRuns = 3;

Tensor filled(const TensorSpec& spec, float value) {
  if (spec.dtype == DType::i32) return Tensor::zeros(DType::i32, spec.shape);
  return Tensor::full(spec.shape, value);
}

}  // namespace

std::vector<LayerCost> calibrate(const config::JobConfig& job) {
  EngineContext engine(EngineOptions{job.threads.intra, job.threads.inter});
  auto model = config::build_model(job.model);
  const std::int64_t micro = job.training.batch / job.strategy.micro_batches;
  const int layers = static_cast<int>(model->layers().size());
  std::vector<LayerCost> out;
  for (int i = 0; i < layers; ++i) {
    const bool last = i + 1 == layers;
    StageModel sm({model, Shape(job.model.input), job.model.classes, job.training.seed, {i, i + 1}, last, micro}, engine);
    VariableStore vars;
    sm.initialize(vars);
    LayerCost c;
    c.name = model->layers()[static_cast<std::size_t>(i)]->name();
    c.parameter_bytes = sm.parameter_bytes();
    c.input_bytes = static_cast<std::int64_t>(sm.input_spec().shape.numel() * 4);
    c.output_bytes = static_cast<std::int64_t>(sm.output_spec().shape.numel() * 4);
    const Tensor input = filled(sm.input_spec(), 0.1f);
    const Tensor target = last ? Tensor::zeros(DType::i32, Shape{micro}) : filled(sm.output_spec(), 0.01f);
    update::LocalUpdate update({sm.trainable_names(), make_optimizer(job.optimizer), make_schedule(job.schedule)});
    BackwardResult warm = sm.backward(input, target, vars, 1);  // first run: allocation, kernel choice
    update.apply(1, warm.grads, vars);
    for (const auto& [name, t] : update.state()) c.optimizer_bytes += static_cast<std::int64_t>(t.nbytes());
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kTimedRuns; ++r) {
      if (!last) sm.forward(input, vars, 2);
      sm.backward(input, target, vars, 2);
    }
    c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kTimedRuns;
    c.work_bytes = static_cast<std::int64_t>(sm.last_peak_bytes());
    out.push_back(c);
  }
  return out;
}

}  // namespace trib::pipeline
