#include "serve/predictor.h"

#include <cstring>

#include "trib/core/error.h"

namespace trib::serve {

struct Predictor::BatchGraph {
  Graph graph;
  Value features, logits;
  std::unique_ptr<Executor> executor;
};

Predictor::Predictor(const onnx_export::RunModel& run, EngineOptions engine)
    : model_(run.model), input_(run.input), classes_(run.classes), engine_(engine) {}

Predictor::~Predictor() = default;

std::int64_t Predictor::padded_batch(std::int64_t rows) {
  std::int64_t b = 1;
  while (b < rows) b *= 2;
  return b;
}

Predictor::BatchGraph& Predictor::graph_for(std::int64_t batch) {
  std::unique_ptr<BatchGraph>& g = graphs_[batch];
  if (g) return *g;
  auto built = std::make_unique<BatchGraph>();
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), input_.dims().begin(), input_.dims().end());
  built->features = built->graph.placeholder("features", {DType::f32, Shape(dims)});
  nn::ModelBuilder mb(built->graph, /*training=*/false);
  built->logits = (*model_)(mb, built->features);
  built->executor = std::make_unique<Executor>(built->graph, std::vector<Value>{built->logits}, engine_);
  g = std::move(built);
  return *g;
}

Tensor Predictor::logits(const Tensor& features, const VariableStore& vars) {
  const std::int64_t rows = features.shape()[0];
  TRIB_CHECK(rows > 0 && features.numel() == rows * input_.numel(), ShapeError,
             "features {} do not fit the model's input [rows, {}]", features.shape().to_string(),
             input_.to_string());
  const std::int64_t batch = padded_batch(rows);
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), input_.dims().begin(), input_.dims().end());
  Tensor fed;
  if (batch == rows) {
    fed = features.reshape(Shape(dims));
  } else {
    fed = Tensor::zeros(DType::f32, Shape(dims));
    std::memcpy(fed.data<float>(), features.data<float>(), features.nbytes());
  }

  std::vector<Tensor> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    BatchGraph& g = graph_for(batch);
    Feed feed{g.features, fed};
    RunOptions opts;
    opts.training = false;
    // The executor only reads variables (graphs refer to them by name); its signature is
    // the training one, which shares the store with optimizers.
    out = g.executor->run(std::span<const Feed>(&feed, 1), const_cast<VariableStore&>(vars), opts);
  }
  Tensor result = Tensor::empty(DType::f32, Shape{rows, classes_});
  std::memcpy(result.data<float>(), out[0].data<float>(), result.nbytes());
  return result;
}

}  // namespace trib::serve
