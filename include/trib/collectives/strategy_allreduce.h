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
// Typical use (the cluster runtime does this for `strategy: allreduce`):
//   auto group = std::shared_ptr<Group>(Group::form(...));
//   auto update = make_allreduce_update(group, trainable_names, job.optimizer, job.schedule,
//                                       strategy_config, per_worker_batch);
//   update->broadcast_variables(vars);          // rank 0's initial values everywhere
//   graph.run(x, y, vars, step, [&](auto i, auto& g) { update->on_gradient_ready(i, g); });
//   update->apply(step, result.grads, vars);
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
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/train/update_strategy.h"

namespace trib::collectives {

class GradientExchange;

struct AllreduceUpdateOptions {
  std::shared_ptr<Group> group;
  std::vector<std::string> parameters;  // trainable parameter names, in gradient order
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;  // used as given (see make_allreduce_schedule)
  std::size_t bucket_bytes = std::size_t{4} << 20;  // fusion size
  Compression compression = Compression::none;
  double clip_norm = 0;  // by the global norm of the averaged gradient; 0: off
  int max_consecutive_skips = 10;
};

class AllreduceUpdate final : public train::UpdateStrategy {
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
  void on_gradient_ready(std::size_t index, const train::GradTensor& grad) override;
  // Waits for every bucket (reporting any gradient the hook did not), replaces `grads` by
  // the averages, then: skip on NaN/Inf (the same decision on every worker), clip, update.
  bool apply(std::int64_t step, std::vector<train::GradTensor>& grads, VariableStore& vars) override;
  float learning_rate(std::int64_t step) const override { return o_.schedule->lr(step); }
  std::map<std::string, Tensor> state() const override { return slots_.to_tensors(); }
  void restore_state(const std::map<std::string, Tensor>& tensors) override;

  const Group& group() const { return *o_.group; }

 private:
  void broadcast_slots();

  AllreduceUpdateOptions o_;
  int workers_ = 1;
  std::string final_report_;
  std::unique_ptr<GradientExchange> exchange_;
  SlotStore slots_;
  int consecutive_skips_ = 0;
};

// The strategy's section of a job file:
//   strategy: {name: allreduce, bucket_mb: 4, compression: none, linear_scaling: true, warmup_steps: 100}
struct AllreduceStrategyConfig {
  double bucket_mb = 4;
  Compression compression = Compression::none;
  // The linear scaling rule (Goyal et al.): the learning rate is multiplied by the number of
  // workers, since the global batch is that many times the per-worker batch...
  bool linear_scaling = true;
  // ...reached gradually: when the job's schedule has no warm-up of its own, this many steps
  // ramp the rate from the single-worker rate up to the scaled one.
  std::int64_t warmup_steps = 100;
};

// The job's schedule as this strategy runs it: with linear scaling, base_lr * workers (the
// global batch over the per-worker batch, unless schedule.base_batch says otherwise) and a
// warm-up from base_lr.
std::shared_ptr<const Schedule> make_allreduce_schedule(ScheduleConfig schedule, float base_lr, int workers,
                                                        std::int64_t per_worker_batch,
                                                        const AllreduceStrategyConfig& config);

std::unique_ptr<AllreduceUpdate> make_allreduce_update(std::shared_ptr<Group> group,
                                                       std::vector<std::string> parameters,
                                                       const OptimizerConfig& optimizer,
                                                       const ScheduleConfig& schedule,
                                                       const AllreduceStrategyConfig& config,
                                                       std::int64_t per_worker_batch, double clip_norm = 0);

}  // namespace trib::collectives
