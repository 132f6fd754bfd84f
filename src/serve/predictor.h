// The forward pass a server runs: a run's model in inference mode (dropout off, batch norm on
// running statistics), features [rows, input...] to logits [rows, classes], for whichever
// variables the caller passes (the checkpoint being served). A graph is built per batch
// size, rounded up to a power of two (the extra rows are zeros, their outputs dropped), so
// that any request size reuses one of at most log2(max batch) + 1 graphs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "export/run_model.h"
#include "trib/engine/context.h"

namespace trib::serve {

class Predictor {
 public:
  Predictor(const onnx_export::RunModel& run, EngineOptions engine);
  ~Predictor();

  // features: f32 [rows, input...]. Runs are serialised: an engine context runs one graph
  // at a time well, and the CPU is what requests share anyway.
  Tensor logits(const Tensor& features, const VariableStore& vars);

  const Shape& input() const { return input_; }
  std::int64_t classes() const { return classes_; }
  // The graph batch size `rows` runs at.
  static std::int64_t padded_batch(std::int64_t rows);

 private:
  struct BatchGraph;
  BatchGraph& graph_for(std::int64_t batch);

  std::shared_ptr<nn::Sequential> model_;
  Shape input_;
  std::int64_t classes_;
  EngineContext engine_;
  std::mutex mu_;
  std::map<std::int64_t, std::unique_ptr<BatchGraph>> graphs_;
};

}  // namespace trib::serve
