// The planner's calibration pass: each layer alone, as a one-layer stage at the micro-batch
// size, its forward pass, its backward pass (which recomputes the forward) and the sum of
// its gradients each timed, with its variables' and optimizer state's sizes taken from one
// real update.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>

#include "pipeline/gradient_sum.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/planner.h"
#include "trib/pipeline/stage_model.h"
#include "trib/update/local_update.h"

namespace trib::pipeline {

namespace {

// Each pass's time is the fastest of these runs: other work on the machine only ever adds to
// a run, and the planner compares the layers' own costs.
constexpr int kTimedRuns = 5;

// On an engine of one thread every pass runs on the calling thread, and its CPU time is the
// pass's cost whatever else the machine runs (wall time would count its waits for a core:
// a planner calibrating on a loaded machine then cut by the load, not by the layers). With
// more threads the pass's cost is its wall time.
bool single_threaded(const EngineContext& engine) {
  return engine.intra_op_threads() == 1 && engine.inter_op_threads() == 1;
}

double now_ms(bool thread_cpu) {
  if (!thread_cpu) return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

Tensor filled(const TensorSpec& spec, float value) {
  if (spec.dtype == DType::i32) return Tensor::zeros(DType::i32, spec.shape);
  return Tensor::full(spec.shape, value);
}

// The fastest of kTimedRuns runs of `f`, in ms of the thread's CPU time or of wall time.
double fastest_ms(bool thread_cpu, const std::function<void()>& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < kTimedRuns; ++r) {
    const double t0 = now_ms(thread_cpu);
    f();
    best = std::min(best, now_ms(thread_cpu) - t0);
  }
  return best;
}

}  // namespace

std::vector<LayerCost> calibrate(const LayerCalibration& w, const EngineContext& engine) {
  const int layers = static_cast<int>(w.model->layers().size());
  const std::int64_t micro = w.micro_batch;
  const bool cpu = single_threaded(engine);
  std::vector<LayerCost> out;
  for (int i = 0; i < layers; ++i) {
    const bool last = i + 1 == layers;
    StageModel sm({w.model, w.input, w.classes, w.seed, {i, i + 1}, last, micro}, engine);
    VariableStore vars;
    sm.initialize(vars);
    LayerCost c;
    c.name = w.model->layers()[static_cast<std::size_t>(i)]->name();
    c.parameter_bytes = sm.parameter_bytes();
    c.input_bytes = static_cast<std::int64_t>(sm.input_spec().shape.numel() * 4);
    c.output_bytes = static_cast<std::int64_t>(sm.output_spec().shape.numel() * 4);
    const Tensor input = filled(sm.input_spec(), 0.1f);
    const Tensor target = last ? Tensor::zeros(DType::i32, Shape{micro}) : filled(sm.output_spec(), 0.01f);
    update::LocalUpdate update({sm.trainable_names(), w.optimizer, w.schedule});
    BackwardResult warm = sm.backward(input, target, vars, 1);  // first run: allocation, kernel choice
    update.apply(1, warm.grads, vars);
    for (const auto& [name, t] : update.state()) c.optimizer_bytes += static_cast<std::int64_t>(t.nbytes());
    if (!last) {
      sm.forward(input, vars, 2);  // its first run: allocation, kernel choice
      c.forward_ms = fastest_ms(cpu, [&] { sm.forward(input, vars, 2); });
    }
    BackwardResult r;
    const double backward_ms = fastest_ms(cpu, [&] { r = sm.backward(input, target, vars, 2); });
    c.work_bytes = static_cast<std::int64_t>(sm.last_peak_bytes());
    // The sum a stage runs per micro-batch: onto a sum that already holds one gradient.
    GradientSum sum;
    std::vector<update::GradTensor> first = sm.backward(input, target, vars, 2).grads;
    sum.add(first);
    const double sum_ms = fastest_ms(cpu, [&] {
      std::vector<update::GradTensor> g = r.grads;
      sum.add(g);
    });
    c.ms = c.forward_ms + backward_ms + sum_ms;
    out.push_back(c);
  }
  return out;
}

double calibrate_stage(const LayerCalibration& w, const EngineContext& engine, StageRange range) {
  const bool last = range.end == static_cast<int>(w.model->layers().size());
  StageModel sm({w.model, w.input, w.classes, w.seed, range, last, w.micro_batch}, engine);
  VariableStore vars;
  sm.initialize(vars);
  const Tensor input = filled(sm.input_spec(), 0.1f);
  const Tensor target = last ? Tensor::zeros(DType::i32, Shape{w.micro_batch}) : filled(sm.output_spec(), 0.01f);
  GradientSum sum;
  // First run: allocation, kernel choice; its gradient is the sum the timed runs add onto.
  if (!last) sm.forward(input, vars, 1);
  std::vector<update::GradTensor> first = sm.backward(input, target, vars, 1).grads;
  sum.add(first);
  return fastest_ms(single_threaded(engine), [&] {
    if (!last) sm.forward(input, vars, 2);
    std::vector<update::GradTensor> g = sm.backward(input, target, vars, 2).grads;
    sum.add(g);
  });
}

LayerCalibration layer_calibration(const config::JobConfig& job) {
  return LayerCalibration{config::build_model(job.model), Shape(job.model.input), job.model.classes,
                          job.training.seed, job.training.batch / job.strategy.micro_batches,
                          make_optimizer(job.optimizer), make_schedule(job.schedule)};
}

std::vector<LayerCost> calibrate(const config::JobConfig& job) {
  EngineContext engine(EngineOptions{job.threads.intra, job.threads.inter});
  return calibrate(layer_calibration(job), engine);
}

}  // namespace trib::pipeline
