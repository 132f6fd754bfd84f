#include "trib/pipeline/pipeline_stage.h"

#include <chrono>
#include <cstring>
#include <map>

#include "trib/core/error.h"

namespace trib::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sums micro-batch gradients; sparse ones (embedding rows) by concatenating rows and indices.
struct Accumulator {
  std::vector<update::GradTensor> sum;
  std::vector<std::vector<update::GradTensor>> sparse_parts;

  void add(std::vector<update::GradTensor>& grads) {
    if (sum.empty()) {
      sum.resize(grads.size());
      sparse_parts.resize(grads.size());
    }
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].sparse()) {
        sparse_parts[i].push_back({grads[i].values.clone(), grads[i].indices.clone()});
        continue;
      }
      if (!sum[i].values.defined()) {
        // The first micro-batch's gradient becomes the sum: a copy only when something else
        // still holds its memory (a 1024 x 1024 layer's is 4 MB, a memory-bound pass per step).
        const bool ours = grads[i].values.storage().use_count() == 1;
        sum[i].values = ours ? std::move(grads[i].values) : grads[i].values.clone();
        continue;
      }
      float* acc = sum[i].values.data<float>();
      const float* g = grads[i].values.data<float>();
      for (std::int64_t k = 0; k < sum[i].values.numel(); ++k) acc[k] += g[k];
    }
  }

  std::vector<update::GradTensor> mean(int count) {
    const float f = 1.0f / static_cast<float>(count);
    for (std::size_t i = 0; i < sum.size(); ++i) {
      if (!sparse_parts[i].empty()) sum[i] = concat(sparse_parts[i]);
      float* v = sum[i].values.data<float>();
      for (std::int64_t k = 0; k < sum[i].values.numel(); ++k) v[k] *= f;
    }
    return std::move(sum);
  }

  static update::GradTensor concat(const std::vector<update::GradTensor>& parts) {
    std::int64_t rows = 0;
    for (const auto& p : parts) rows += p.values.shape()[0];
    std::vector<std::int64_t> dims = parts[0].values.shape().dims();
    dims[0] = rows;
    update::GradTensor out{Tensor::empty(DType::f32, Shape(dims)),
                           Tensor::empty(parts[0].indices.dtype(), Shape{rows})};
    std::size_t vo = 0, io = 0;
    for (const auto& p : parts) {
      std::memcpy(static_cast<char*>(out.values.raw_data()) + vo, p.values.raw_data(), p.values.nbytes());
      std::memcpy(static_cast<char*>(out.indices.raw_data()) + io, p.indices.raw_data(), p.indices.nbytes());
      vo += p.values.nbytes();
      io += p.indices.nbytes();
    }
    return out;
  }
};

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
  Accumulator acc;
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
  timed(st.update_s, [&] { st.applied = o_.update->apply(step, grads, vars); });
  st.busy_s = st.compute_s + st.accumulate_s + st.update_s;
  st.wall_s = since(t0);
  return st;
}

}  // namespace trib::pipeline
