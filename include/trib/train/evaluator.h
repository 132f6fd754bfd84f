// Loss and accuracy of the current variables over a dataset, in inference mode (dropout off,
// batch norm on running statistics). Graphs are built once per batch size and reused.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "trib/data/dataset.h"
#include "trib/train/model_graph.h"

namespace trib::train {

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  std::int64_t examples = 0;
};

class Evaluator {
 public:
  Evaluator(ModelSpec spec, std::int64_t batch, const EngineContext& engine);
  // Evaluates the first `limit` examples (all when limit is 0). `on_logits`, when given,
  // receives each batch's logits [rows, classes], in order.
  EvalResult run(const data::Dataset& dataset, VariableStore& vars, std::int64_t limit = 0,
                 const std::function<void(const Tensor&)>& on_logits = {});

 private:
  ModelGraph& graph_for(std::int64_t batch);
  ModelSpec spec_;
  std::int64_t batch_;
  const EngineContext& engine_;
  std::map<std::int64_t, std::unique_ptr<ModelGraph>> graphs_;
};

// Reshapes a batch's features [N, ...] to [N, input...] (IDX images come as [N, 28, 28]).
Tensor as_model_input(const Tensor& features, const Shape& input);

}  // namespace trib::train
