#include "trib/train/evaluator.h"

#include <numeric>

namespace trib::train {

Tensor as_model_input(const Tensor& features, const Shape& input) {
  std::vector<std::int64_t> dims{features.shape()[0]};
  dims.insert(dims.end(), input.dims().begin(), input.dims().end());
  return features.reshape(Shape(dims));
}

Evaluator::Evaluator(ModelSpec spec, std::int64_t batch, const EngineContext& engine)
    : spec_(std::move(spec)), batch_(batch), engine_(engine) {}

ModelGraph& Evaluator::graph_for(std::int64_t batch) {
  auto& g = graphs_[batch];
  if (!g) g = std::make_unique<ModelGraph>(spec_, batch, false, engine_);
  return *g;
}

EvalResult Evaluator::run(const data::Dataset& dataset, VariableStore& vars, std::int64_t limit,
                          const std::function<void(const Tensor&)>& on_logits) {
  std::int64_t n = limit > 0 ? std::min(limit, dataset.size()) : dataset.size();
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::vector<std::int64_t> idx;
  for (std::int64_t begin = 0; begin < n; begin += batch_) {
    std::int64_t rows = std::min(batch_, n - begin);
    idx.resize(rows);
    std::iota(idx.begin(), idx.end(), begin);
    data::Batch b = dataset.gather(idx);
    StepResult r = graph_for(rows).run(as_model_input(b.features(), spec_.input), b.labels(), vars);
    loss_sum += r.loss * rows;
    correct += r.correct;
    if (on_logits) on_logits(r.logits);
  }
  EvalResult e;
  e.examples = n;
  if (n > 0) {
    e.loss = loss_sum / n;
    e.accuracy = double(correct) / n;
  }
  return e;
}

}  // namespace trib::train
