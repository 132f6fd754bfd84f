// The graphs a trainer runs for one model: a training graph (loss, accuracy count and the
// gradient of every trainable parameter) and an inference graph (loss and accuracy count),
// each for a fixed batch size. Every training strategy (local, parameter server, allreduce)
// computes gradients through this class and differs only in what it does with them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trib/engine/executor.h"
#include "trib/nn/layer.h"
#include "trib/update/grad_tensor.h"

namespace trib::train {

struct ModelSpec {
  std::shared_ptr<nn::Layer> model;  // maps [N, input...] to logits [N, classes]
  Shape input;                       // one example's shape, e.g. [1, 28, 28]
  std::int64_t classes = 0;
  std::uint64_t seed = 0;            // initial values and dropout masks
};

struct StepResult {
  double loss = 0;            // mean over the batch, including the L2 penalty
  std::int64_t correct = 0;   // examples whose argmax equals the label
  // [N, classes], computed before this step's update: a stream trainer's prequential scores.
  Tensor logits;
  std::vector<update::GradTensor> grads;  // one per trainable parameter, in parameters() order
};

class ModelGraph {
 public:
  // training: build the gradient graph too. batch: the fixed batch size of this graph.
  ModelGraph(const ModelSpec& spec, std::int64_t batch, bool training, const EngineContext& engine);

  // Every parameter (trainable and state), in declaration order.
  const std::vector<nn::Parameter>& parameters() const { return params_; }
  std::vector<nn::Parameter> trainable_parameters() const;
  std::int64_t batch() const { return batch_; }
  const Graph& graph() const { return graph_; }

  // Runs forward (and backward when training) for global step `step` (which seeds dropout).
  // `on_grad_ready(i, grad)` fires as soon as gradient i exists, while backprop goes on
  // (for communication overlap).
  StepResult run(const Tensor& features, const Tensor& labels, VariableStore& vars,
                 std::uint64_t step = 0,
                 const std::function<void(std::size_t, const update::GradTensor&)>& on_grad_ready = {});

  // Folds this step's batch statistics into the running ones (batch norm); training only.
  void apply_state_updates(VariableStore& vars) const;

  // Peak intermediate memory of the last run.
  std::size_t last_peak_bytes() const { return executor_->last_peak_bytes(); }

 private:
  Graph graph_;
  std::int64_t batch_;
  bool training_;
  Value features_, labels_, loss_, logits_;
  std::vector<nn::Parameter> params_;
  std::vector<nn::StateUpdate> updates_;
  std::vector<Value> fetches_;           // loss, logits, then per grad values (+ indices)
  std::vector<std::size_t> grad_fetch_;  // per trainable param: index of its values fetch
  std::vector<bool> grad_sparse_;
  std::unique_ptr<Executor> executor_;
  std::vector<Tensor> last_state_values_;  // batch statistics of the last training run
};

// Gives every parameter of `params` missing from `vars` its initial value. Deterministic:
// parameter i draws from a stream derived from (seed, i), whatever else exists.
void initialize_parameters(const std::vector<nn::Parameter>& params, std::uint64_t seed,
                           VariableStore& vars);

// Number of rows of `logits` [N, C] whose argmax equals `labels` (i32 [N]).
std::int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace trib::train
