// One pipeline stage's share of the model: its run of layers built into graphs of a fixed
// micro-batch size. A stage other than the last maps its input to an activation, and later
// maps (input, the activation's gradient) to its parameters' gradients and its input's
// gradient; the last stage maps (input, labels) to the loss, the logits and the same
// gradients. The backward graph recomputes the forward pass from the kept input (GPipe's
// re-materialisation), so between its two passes a stage keeps only its input per micro-batch.
//
// The backward pass of a stage before the last differentiates sum(output * output_grad),
// whose gradient is exactly the chain rule's; each stage adds its own parameters' L2 penalty,
// so the stages' gradients together are the whole model's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "trib/engine/executor.h"
#include "trib/nn/sequential.h"
#include "trib/pipeline/partition.h"
#include "trib/update/grad_tensor.h"

namespace trib::pipeline {

struct StageModelOptions {
  std::shared_ptr<nn::Sequential> model;  // the whole model
  Shape input;                            // one example's shape at the model's input
  std::int64_t classes = 0;
  std::uint64_t seed = 0;                 // the job's: initial values as one process draws them
  StageRange layers;                      // this stage's
  bool last = false;                      // ends with the loss
  std::int64_t micro_batch = 1;
};

struct BackwardResult {
  std::vector<update::GradTensor> grads;  // per trainable parameter, trainable_names() order
  Tensor input_grad;                      // undefined on the first stage
  double loss = 0;                        // last stage: mean over the micro-batch (with L2)
  std::int64_t correct = 0;               // last stage
};

class StageModel {
 public:
  StageModel(StageModelOptions options, const EngineContext& engine);
  ~StageModel();

  const std::vector<nn::Parameter>& parameters() const { return params_; }
  std::vector<std::string> trainable_names() const;
  // The micro-batch's input and output specs ([b, ...]); the first stage's input is the features.
  const TensorSpec& input_spec() const { return input_spec_; }
  const TensorSpec& output_spec() const { return output_spec_; }
  bool last() const { return o_.last; }

  // Gives this stage's parameters missing from `vars` the values one process would draw
  // for them (parameter i of the whole model draws from stream i of the seed).
  void initialize(VariableStore& vars) const;

  // Training forward (not on the last stage, whose backward includes it).
  Tensor forward(const Tensor& input, VariableStore& vars, std::uint64_t step);
  // `target`: the gradient of this stage's output, or on the last stage the labels (i32 [b]).
  BackwardResult backward(const Tensor& input, const Tensor& target, VariableStore& vars, std::uint64_t step);
  // Inference of a batch of any size: the activation, or the logits on the last stage.
  Tensor infer(const Tensor& input, VariableStore& vars);

  // Peak intermediate bytes of the last forward or backward run.
  std::size_t last_peak_bytes() const { return last_peak_; }
  // Bytes of this stage's trainable parameters.
  std::int64_t parameter_bytes() const;

 private:
  struct Built;
  std::unique_ptr<Built> build(std::int64_t batch, bool training, bool with_backward) const;

  StageModelOptions o_;
  const EngineContext& engine_;
  std::vector<nn::Parameter> params_;
  std::vector<std::size_t> global_index_;  // per parameter: its index in the whole model
  TensorSpec input_spec_, output_spec_;
  std::unique_ptr<Built> forward_, backward_;
  std::map<std::int64_t, std::unique_ptr<Built>> inference_;
  std::size_t last_peak_ = 0;
};

}  // namespace trib::pipeline
