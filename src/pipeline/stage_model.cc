#include "trib/pipeline/stage_model.h"

#include "trib/engine/autodiff.h"
#include "trib/engine/ops.h"
#include "trib/train/model_graph.h"

namespace trib::pipeline {

struct StageModel::Built {
  Graph graph;
  Value input, target, output, loss;
  std::vector<Value> fetches;             // output or loss first, then logits (last), grads, input grad
  std::vector<std::size_t> grad_fetch;    // per trainable parameter
  std::vector<bool> grad_sparse;
  std::size_t input_grad_fetch = SIZE_MAX;
  std::vector<nn::Parameter> params;
  std::unique_ptr<Executor> executor;
};

namespace {

Shape with_batch(std::int64_t batch, const Shape& example) {
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  return Shape(dims);
}

Shape without_batch(const Shape& s) { return Shape(std::vector<std::int64_t>(s.dims().begin() + 1, s.dims().end())); }

}  // namespace

StageModel::StageModel(StageModelOptions options, const EngineContext& engine) : o_(std::move(options)), engine_(engine) {
  TRIB_CHECK(o_.model != nullptr && o_.micro_batch > 0, InvalidArgument, "pipeline stage needs a model and a micro-batch");
  const auto& layers = o_.model->layers();
  TRIB_CHECK(o_.layers.begin >= 0 && o_.layers.begin < o_.layers.end &&
                 o_.layers.end <= static_cast<int>(layers.size()),
             InvalidArgument, "pipeline stage: layers {}..{} of a model of {}", o_.layers.begin, o_.layers.end - 1,
             layers.size());
  // The whole model, built once as a shape-only graph: this stage's input shape, and each of
  // its parameters' index in the whole model (which seeds its initial value).
  Graph whole;
  nn::ModelBuilder mb(whole, true, o_.seed);
  Value x = whole.placeholder("features", {DType::f32, with_batch(o_.micro_batch, o_.input)});
  std::size_t seen = 0;
  for (int i = 0; i < o_.layers.end; ++i) {
    if (i == o_.layers.begin) {
      input_spec_ = whole.spec(x);
      seen = mb.parameters().size();
    }
    x = (*layers[static_cast<std::size_t>(i)])(mb, x);
  }
  output_spec_ = whole.spec(x);
  for (std::size_t i = seen; i < mb.parameters().size(); ++i) {
    params_.push_back(mb.parameters()[i]);
    global_index_.push_back(i);
  }
  if (o_.last)
    TRIB_CHECK(output_spec_.shape.rank() == 2 && output_spec_.shape[1] == o_.classes, ShapeError,
               "the model's output is {} but [{}, {}] (batch, classes) was expected", output_spec_.shape.to_string(),
               o_.micro_batch, o_.classes);
  forward_ = o_.last ? nullptr : build(o_.micro_batch, true, false);
  backward_ = build(o_.micro_batch, true, true);
}

StageModel::~StageModel() = default;

std::unique_ptr<StageModel::Built> StageModel::build(std::int64_t batch, bool training, bool with_backward) const {
  auto b = std::make_unique<Built>();
  Graph& g = b->graph;
  b->input = g.placeholder("stage_input", {input_spec_.dtype, with_batch(batch, without_batch(input_spec_.shape))});
  nn::ModelBuilder mb(g, training, o_.seed);
  Value x = b->input;
  for (int i = o_.layers.begin; i < o_.layers.end; ++i) x = (*o_.model->layers()[static_cast<std::size_t>(i)])(mb, x);
  b->output = x;
  b->params = mb.parameters();
  if (!with_backward) {
    b->fetches = {b->output};
    b->executor = std::make_unique<Executor>(g, b->fetches, engine_);
    return b;
  }
  if (o_.last) {
    b->target = g.placeholder("labels", {DType::i32, Shape{batch}});
    b->loss = ops::softmax_cross_entropy(g, b->output, b->target, "loss/cross_entropy");
  } else {
    b->target = g.placeholder("output_grad", g.spec(b->output));
    b->loss = ops::sum(g, ops::mul(g, b->output, b->target));
  }
  for (const nn::Parameter& p : b->params) {
    if (p.l2 <= 0) continue;
    Value sq = ops::sum(g, ops::mul(g, p.value, p.value));
    b->loss = ops::add(g, b->loss, ops::scale(g, sq, 0.5f * p.l2));
  }
  std::vector<Value> wrt;
  for (const nn::Parameter& p : b->params)
    if (p.trainable) wrt.push_back(p.value);
  const bool first = o_.layers.begin == 0;
  if (!first) wrt.push_back(b->input);
  std::vector<Gradient> grads = gradients(g, b->loss, wrt);
  b->fetches = {b->loss};
  if (o_.last) b->fetches.push_back(b->output);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const bool is_input = !first && i + 1 == grads.size();
    if (is_input) {
      b->input_grad_fetch = b->fetches.size();
      b->fetches.push_back(grads[i].values);
      continue;
    }
    b->grad_fetch.push_back(b->fetches.size());
    b->grad_sparse.push_back(grads[i].sparse());
    b->fetches.push_back(grads[i].values);
    if (grads[i].sparse()) b->fetches.push_back(grads[i].indices);
  }
  b->executor = std::make_unique<Executor>(g, b->fetches, engine_);
  return b;
}

std::vector<std::string> StageModel::trainable_names() const {
  std::vector<std::string> out;
  for (const nn::Parameter& p : params_)
    if (p.trainable) out.push_back(p.name);
  return out;
}

std::int64_t StageModel::parameter_bytes() const {
  std::int64_t bytes = 0;
  for (const nn::Parameter& p : params_) bytes += p.shape.numel() * 4;
  return bytes;
}

void StageModel::initialize(VariableStore& vars) const {
  Rng base(o_.seed);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (vars.contains(params_[i].name)) continue;
    Rng rng = base.fork(global_index_[i]);
    vars.set(params_[i].name, params_[i].init.make(params_[i].shape, rng));
  }
}

Tensor StageModel::forward(const Tensor& input, VariableStore& vars, std::uint64_t step) {
  TRIB_CHECK(forward_ != nullptr, InvalidArgument, "the last pipeline stage runs its forward pass in backward()");
  RunOptions opts;
  opts.training = true;
  opts.step = step;
  std::vector<Feed> feeds{{forward_->input, input}};
  std::vector<Tensor> out = forward_->executor->run(feeds, vars, opts);
  last_peak_ = forward_->executor->last_peak_bytes();
  return out[0];
}

BackwardResult StageModel::backward(const Tensor& input, const Tensor& target, VariableStore& vars, std::uint64_t step) {
  RunOptions opts;
  opts.training = true;
  opts.step = step;
  std::vector<Feed> feeds{{backward_->input, input}, {backward_->target, target}};
  std::vector<Tensor> out = backward_->executor->run(feeds, vars, opts);
  last_peak_ = backward_->executor->last_peak_bytes();
  BackwardResult r;
  r.loss = out[0].item();
  if (o_.last) r.correct = train::count_correct(out[1], target);
  for (std::size_t i = 0; i < backward_->grad_fetch.size(); ++i) {
    const std::size_t f = backward_->grad_fetch[i];
    r.grads.push_back({out[f], backward_->grad_sparse[i] ? out[f + 1] : Tensor()});
  }
  if (backward_->input_grad_fetch != SIZE_MAX) r.input_grad = out[backward_->input_grad_fetch];
  return r;
}

Tensor StageModel::infer(const Tensor& input, VariableStore& vars) {
  const std::int64_t batch = input.shape()[0];
  std::unique_ptr<Built>& b = inference_[batch];
  if (!b) b = build(batch, false, false);
  RunOptions opts;
  opts.training = false;
  std::vector<Feed> feeds{{b->input, input.reshape(with_batch(batch, without_batch(input_spec_.shape)))}};
  return b->executor->run(feeds, vars, opts)[0];
}

}  // namespace trib::pipeline
