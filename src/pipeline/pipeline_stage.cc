#include "trib/pipeline/pipeline_stage.h"

#include <time.h>

#include <chrono>
#include <cstring>
#include <map>

#include "pipeline/gradient_sum.h"
#include "trib/core/error.h"

namespace trib::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

Tensor slice_rows(const Tensor& t, std::int64_t begin, std::int64_t count) {
  std::vector<std::int64_t> dims = t.shape().dims();
  const std::int64_t row = dims[0] > 0 ? t.numel() / dims[0] : 0;
  dims[0] = count;
  Tensor out = Tensor::empty(t.dtype(), Shape(dims));
  const std::size_t es = dtype_size(t.dtype());
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + static_cast<std::size_t>(begin * row) * es,
              static_cast<std::size_t>(count * row) * es);
  return out;
}

PipelineStage::PipelineStage(PipelineStageOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.model != nullptr && o_.links != nullptr && o_.update != nullptr, InvalidArgument,
             "pipeline stage {} needs a model, links and an update strategy", o_.stage);
  tasks_ = stage_tasks(o_.schedule, o_.stage, o_.stages, o_.micro_batches);
}

std::int64_t PipelineStage::start(VariableStore& vars, const Checkpoint* checkpoint) {
  o_.model->initialize(vars);
  return o_.update->start(vars, checkpoint);
}

StepStats PipelineStage::step(std::int64_t step, std::int64_t total_steps, const Tensor& features, const Tensor& labels,
                              VariableStore& vars) {
  const auto t0 = Clock::now();
  const bool first = o_.stage == 0, last = o_.stage + 1 == o_.stages;
  const int m_count = o_.micro_batches;
  const std::int64_t b = o_.model->input_spec().shape[0];
  if (first)
    TRIB_CHECK(features.defined() && features.shape()[0] == b * m_count, InvalidArgument,
               "pipeline stage 0: a batch of {} examples for {} micro-batches of {}",
               features.defined() ? features.shape()[0] : 0, m_count, b);
  StepStats st;
  std::map<int, Tensor> inputs, micro_labels;  // kept from forward to backward
  std::size_t stash = 0;
  GradientSum acc;
  // Runs `f` and adds its duration to `into`.
  auto timed = [](double& into, auto&& f) {
    const auto c0 = Clock::now();
    f();
    into += since(c0);
  };
  for (const Task& t : tasks_) {
    const auto m = t.micro;
    if (t.pass == Pass::forward) {
      Tensor input, y;
      if (first) {
        input = slice_rows(features, m * b, b).reshape(o_.model->input_spec().shape);
        y = slice_rows(labels, m * b, b);
      } else {
        Envelope e;
        timed(st.wait_s, [&] { e = o_.links->receive(Kind::activation, step, m); });
        input = std::move(e.tensor);
        y = std::move(e.labels);
      }
      if (!last) {
        Tensor out;
        timed(st.compute_s, [&] { out = o_.model->forward(input, vars, static_cast<std::uint64_t>(step)); });
        st.peak_activation_bytes = std::max(st.peak_activation_bytes, stash + input.nbytes() + o_.model->last_peak_bytes());
        timed(st.send_s, [&] { o_.links->send({Kind::activation, step, m, total_steps, y, out}); });
      }
      stash += input.nbytes();
      st.stash_bytes = std::max(st.stash_bytes, stash);
      inputs[m] = std::move(input);
      micro_labels[m] = std::move(y);
      continue;
    }
    Tensor target;
    if (last) target = micro_labels[m];
    else timed(st.wait_s, [&] { target = o_.links->receive(Kind::gradient, step, m).tensor; });
    BackwardResult r;
    timed(st.compute_s, [&] { r = o_.model->backward(inputs[m], target, vars, static_cast<std::uint64_t>(step)); });
    st.peak_activation_bytes = std::max(st.peak_activation_bytes, stash + o_.model->last_peak_bytes());
    if (!first) timed(st.send_s, [&] { o_.links->send({Kind::gradient, step, m, total_steps, Tensor(), r.input_grad}); });
    timed(st.accumulate_s, [&] { acc.add(r.grads); });
    stash -= inputs[m].nbytes();
    inputs.erase(m);
    micro_labels.erase(m);
    st.loss += r.loss / m_count;
    st.correct += r.correct;
    st.examples += b;
  }
  std::vector<update::GradTensor> grads;
  timed(st.accumulate_s, [&] { grads = acc.mean(m_count); });
  const double cpu0 = thread_cpu_s();
  timed(st.update_s, [&] { st.applied = o_.update->apply(step, grads, vars); });
  st.update_cpu_s = thread_cpu_s() - cpu0;
  st.busy_s = st.compute_s + st.accumulate_s + st.update_s;
  st.wall_s = since(t0);
  return st;
}

}  // namespace trib::pipeline
