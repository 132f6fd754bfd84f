#include "trib/train/model_graph.h"

#include <algorithm>

#include "trib/engine/autodiff.h"
#include "trib/engine/ops.h"

namespace trib::train {

ModelGraph::ModelGraph(const ModelSpec& spec, std::int64_t batch, bool training,
                       const EngineContext& engine)
    : batch_(batch), training_(training) {
  TRIB_CHECK(spec.model != nullptr, InvalidArgument, "ModelGraph needs a model");
  TRIB_CHECK(batch > 0, InvalidArgument, "batch size must be positive, got {}", batch);
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), spec.input.dims().begin(), spec.input.dims().end());
  features_ = graph_.placeholder("features", {DType::f32, Shape(dims)});
  labels_ = graph_.placeholder("labels", {DType::i32, Shape{batch}});

  nn::ModelBuilder mb(graph_, training, spec.seed);
  logits_ = (*spec.model)(mb, features_);
  const TensorSpec& ls = graph_.spec(logits_);
  TRIB_CHECK(ls.shape.rank() == 2 && ls.shape[0] == batch && ls.shape[1] == spec.classes, ShapeError,
             "the model's output is {} but [{}, {}] (batch, classes) was expected; end the model "
             "with a dense layer of {} units",
             ls.shape.to_string(), batch, spec.classes, spec.classes);
  loss_ = ops::softmax_cross_entropy(graph_, logits_, labels_, "loss/cross_entropy");
  for (const nn::Parameter& p : mb.parameters()) {
    if (p.l2 <= 0) continue;
    Value sq = ops::sum(graph_, ops::mul(graph_, p.value, p.value));
    loss_ = ops::add(graph_, loss_, ops::scale(graph_, sq, 0.5f * p.l2));
  }
  params_ = mb.parameters();
  updates_ = mb.state_updates();
  fetches_ = {loss_, logits_};

  if (training) {
    std::vector<Value> wrt;
    for (const nn::Parameter& p : params_)
      if (p.trainable) wrt.push_back(p.value);
    std::vector<Gradient> grads = gradients(graph_, loss_, wrt);
    for (const Gradient& g : grads) {
      grad_fetch_.push_back(fetches_.size());
      grad_sparse_.push_back(g.sparse());
      fetches_.push_back(g.values);
      if (g.sparse()) fetches_.push_back(g.indices);
    }
    for (const nn::StateUpdate& u : updates_) fetches_.push_back(u.batch_value);
  }
  executor_ = std::make_unique<Executor>(graph_, fetches_, engine);
}

std::vector<nn::Parameter> ModelGraph::trainable_parameters() const {
  std::vector<nn::Parameter> out;
  for (const nn::Parameter& p : params_)
    if (p.trainable) out.push_back(p);
  return out;
}

StepResult ModelGraph::run(const Tensor& features, const Tensor& labels, VariableStore& vars,
                           std::uint64_t step, const std::function<void(std::size_t, const update::GradTensor&)>& on_grad_ready) {
  RunOptions opts;
  opts.training = training_;
  opts.step = step;
  if (on_grad_ready) {
    // Dense gradients are ready the moment their fetch is; sparse ones need both parts,
    // which the executor may produce in either order, so those are reported after the run.
    std::vector<std::size_t> dense_of_fetch(fetches_.size(), SIZE_MAX);
    for (std::size_t i = 0; i < grad_fetch_.size(); ++i)
      if (!grad_sparse_[i]) dense_of_fetch[grad_fetch_[i]] = i;
    opts.on_fetch_ready = [&, dense_of_fetch](std::size_t f, const Tensor& t) {
      if (dense_of_fetch[f] != SIZE_MAX) on_grad_ready(dense_of_fetch[f], update::GradTensor{t, {}});
    };
  }
  std::vector<Feed> feeds{{features_, features}, {labels_, labels}};
  std::vector<Tensor> out = executor_->run(feeds, vars, opts);
  StepResult r;
  r.loss = out[0].item();
  r.correct = count_correct(out[1], labels);
  r.logits = out[1];
  for (std::size_t i = 0; i < grad_fetch_.size(); ++i) {
    std::size_t f = grad_fetch_[i];
    update::GradTensor g{out[f], grad_sparse_[i] ? out[f + 1] : Tensor()};
    if (on_grad_ready && g.sparse()) on_grad_ready(i, g);
    r.grads.push_back(std::move(g));
  }
  // Keep the batch statistics for apply_state_updates.
  std::size_t first_update = fetches_.size() - (training_ ? updates_.size() : 0);
  last_state_values_.assign(out.begin() + static_cast<std::ptrdiff_t>(first_update), out.end());
  return r;
}

void ModelGraph::apply_state_updates(VariableStore& vars) const {
  for (std::size_t i = 0; i < updates_.size() && i < last_state_values_.size(); ++i) {
    Tensor& running = vars.get(updates_[i].variable);
    const float m = updates_[i].momentum;
    float* r = running.data<float>();
    const float* b = last_state_values_[i].data<float>();
    for (std::int64_t k = 0; k < running.numel(); ++k) r[k] = m * r[k] + (1 - m) * b[k];
  }
}

void initialize_parameters(const std::vector<nn::Parameter>& params, std::uint64_t seed,
                           VariableStore& vars) {
  Rng base(seed);
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (vars.contains(params[i].name)) continue;
    Rng rng = base.fork(i);
    vars.set(params[i].name, params[i].init.make(params[i].shape, rng));
  }
}

std::int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  const std::int64_t n = logits.shape()[0], c = logits.shape()[1];
  const float* x = logits.data<float>();
  const std::int32_t* y = labels.data<std::int32_t>();
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = x + i * c;
    correct += (std::max_element(row, row + c) - row) == y[i];
  }
  return correct;
}

}  // namespace trib::train
