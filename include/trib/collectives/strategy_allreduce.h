// The `allreduce` training strategy: synchronous data parallelism without servers. Every
// worker computes gradients on its own shard of the batch; gradients are fused into
// buckets, and each bucket is allreduced (averaged) on a communication thread as soon as
// its last gradient exists, while backprop goes on with earlier layers; apply() waits for
// the buckets and runs the local optimizer on the averaged gradients, so every worker
// makes the same update and the variables stay identical everywhere.
//
// Sparse gradients (embedding rows) are allgathered rather than densified: every worker
// gets every worker's rows and indices, concatenated, divided by the group size, and
// applies them with the optimizer's sparse (lazy) update. That is exactly the gradient of
// the global batch, costs bytes in proportion to the rows touched, and keeps lazy
// optimizers (sparse Adam) behaving as in one process.
//
// The job's strategy factory (include/trib/strategy/make_strategy.h) builds one for
// `strategy: allreduce`; the learning-rate schedule it is given is the job's, with the linear
// scaling rule already applied where the job asks for it (config/derived_settings.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trib/collectives/allreduce.h"
#include "trib/collectives/group.h"
#include "trib/update/local_update.h"

namespace trib::collectives {

class GradientExchange;

struct AllreduceUpdateOptions {
  std::shared_ptr<Group> group;
  std::vector<std::string> parameters;  // trainable parameter names, in gradient order
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;  // used as given
  std::size_t bucket_bytes = std::size_t{4} << 20;  // fusion size
  Compression compression = Compression::none;
  double clip_norm = 0;  // by the global norm of the averaged gradient; 0: off
  int max_consecutive_skips = 10;
};

class AllreduceUpdate final : public update::UpdateStrategy {
 public:
  explicit AllreduceUpdate(AllreduceUpdateOptions options);
  ~AllreduceUpdate() override;

  // Makes every worker start where rank 0 (the chief) starts: its checkpoint's step (with
  // a checkpoint, which only the chief reads), its variables and its optimizer state.
  std::int64_t start(VariableStore& vars, const Checkpoint* checkpoint) override;
  // Broadcasts every variable in `vars` (sorted by name) from rank 0. A worker whose model
  // differs fails naming the variable and both shapes.
  void broadcast_variables(VariableStore& vars);
  // Stops the communication thread and drops this strategy's hold on the group (the rank
  // leaves cleanly once nothing else holds it).
  void finish() override;
  // One line: workers, buckets, bytes averaged per step, and how much of the exchange
  // backprop hid (time apply() still waited, share of buckets sent before apply()).
  std::string report() const override;

  // Copies the gradient into its bucket; the bucket's allreduce starts once it is full.
  // Thread-safe (backprop may report from several threads at once).
  void on_gradient_ready(std::size_t index, const update::GradTensor& grad) override;
  // Waits for every bucket (reporting any gradient the hook did not), replaces `grads` by
  // the averages, then applies them through a LocalUpdate: skip on NaN/Inf (the same
  // decision on every worker, since every worker holds the same averages), clip, update.
  bool apply(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) override;
  float learning_rate(std::int64_t step) const override { return local_.learning_rate(step); }
  std::map<std::string, Tensor> state() const override { return local_.state(); }
  void restore_state(const std::map<std::string, Tensor>& tensors) override { local_.restore_state(tensors); }

  const Group& group() const { return *o_.group; }

 private:
  void broadcast_slots();

  AllreduceUpdateOptions o_;
  int workers_ = 1;
  std::string final_report_;
  std::unique_ptr<GradientExchange> exchange_;
  update::LocalUpdate local_;  // the update itself, on the averaged gradients
};

}  // namespace trib::collectives
