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
// Losing a worker (docs/fault_tolerance.md, "Allreduce: losing and regaining a worker"): when
// the exchange of a step fails and `regroup` is set, apply() asks it for the group of the
// next generation (the survivors), and the survivors agree on the lowest step any of them
// stands at, take the variables and optimizer state of a survivor standing there (undoing a
// step that completed on some ranks only), rescale the learning rate by the linear rule
// (lr * survivors / scaled_for, when linear_scaling), and return false with a Rollback
// (take_rollback()) that tells the loop where to go on. No process restarts.
//
// The job's strategy factory (include/trib/strategy/make_strategy.h) builds one for
// `strategy: allreduce`; the learning-rate schedule it is given is the job's, with the linear
// scaling rule already applied where the job asks for it (config/derived_settings.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trib/collectives/allreduce.h"
#include "trib/collectives/group.h"
#include "trib/update/local_update.h"

namespace trib::collectives {

class GradientExchange;

// Given the group that failed and why, the group of the next generation (its ranks in the
// failed group's order, this worker among them); throws when the job cannot go on (the
// failure was not a lost member, or this worker was itself evicted).
using Regroup = std::function<std::shared_ptr<Group>(const Group& failed, const std::string& why)>;

struct AllreduceUpdateOptions {
  std::shared_ptr<Group> group;
  std::vector<std::string> parameters;  // trainable parameter names, in gradient order
  std::shared_ptr<const Optimizer> optimizer;
  std::shared_ptr<const Schedule> schedule;  // used as given
  std::size_t bucket_bytes = std::size_t{4} << 20;  // fusion size
  Compression compression = Compression::none;
  double clip_norm = 0;  // by the global norm of the averaged gradient; 0: off
  int max_consecutive_skips = 10;
  Regroup regroup{};  // empty: a failed exchange ends the run (apply() throws)
  // Joining a running group (a relaunched worker): `group` is null, and start() gets the group
  // from this, then takes the group's step, variables and optimizer state from a member.
  std::function<std::shared_ptr<Group>()> join{};
  // At finish(), after the run's last step, called until it gives null: the group that a
  // member who must end the run with it has joined (a relaunched chief, which writes the last
  // checkpoint and report: it takes the group's final state like any joiner), or null once
  // nothing more is awaited (the chief's word that the run's end is written; at once on the
  // chief). Empty: finish() returns at once.
  std::function<std::shared_ptr<Group>(const Group& current)> await_rejoin{};
  // A stream job's members other than the chief hand over their final Kafka offsets after
  // finish(), so the chief's loss there is seen only then: hand_over_after_end() calls this
  // until it gives null, each group given one that the chief's relaunched process joined.
  // Empty: hand_over_after_end() hands nothing.
  std::function<std::shared_ptr<Group>(const Group& current)> await_relaunched_chief{};
  // At an epoch boundary of the data (at_epoch_start): the group takes in the workers waiting
  // to join beyond its starting ones, if this member leads it (it aborts the group, whose
  // next exchange then re-forms it with them). Empty: such joiners are never waited for here.
  std::function<void(Group& current)> admit_joiners{};
  // The schedule includes the linear scaling rule for `scaled_for` workers (0: the group's
  // size at construction); a re-formed group of n workers trains at lr * n / scaled_for.
  bool linear_scaling = false;
  int scaled_for = 0;
  // How many failed exchanges in a row a worker tries to recover from before it gives up.
  int max_regroups = 8;
  // Every step, inside its exchange (first, overlapping the step's compute), the members
  // allgather their data cursors (set_data_cursor), and keep every member's for the last few
  // steps: a re-formed group then
  // knows where a lost member's data stood at the step it rolls back to
  // (Rollback::group_cursors). For stream jobs, whose survivors take over the lost member's
  // partitions; a file job's shards need only each worker's own cursor, and skip the exchange.
  bool share_cursors = false;
};

// The largest data cursor a member may share (a Kafka position with a shuffle buffer's ranges
// holds a few KB): a bigger one fails the step naming it, before anything is allocated.
inline constexpr std::size_t kMaxSharedCursorBytes = std::size_t{1} << 20;

class AllreduceUpdate final : public update::UpdateStrategy {
 public:
  explicit AllreduceUpdate(AllreduceUpdateOptions options);
  ~AllreduceUpdate() override;

  // Makes every worker start where rank 0 (the chief) starts: its checkpoint's step (with
  // a checkpoint, which only the chief reads), its variables and its optimizer state. A joiner
  // (options.join) instead joins the running group, whose members are re-forming it: it starts
  // at their step with their state, and take_rollback() then tells the loop its shard.
  std::int64_t start(VariableStore& vars, const Checkpoint* checkpoint) override;
  // Broadcasts every variable in `vars` (sorted by name) from rank 0. A worker whose model
  // differs fails naming the variable and both shapes.
  void broadcast_variables(VariableStore& vars);
  // Stops the communication thread and drops this strategy's hold on the group (the rank
  // leaves cleanly once nothing else holds it; with options.await_relaunched_chief it is kept
  // for hand_over_after_end() until the strategy goes); first, with options.await_rejoin, hands
  // the final state to each member it gives, until it gives none.
  void finish() override;
  // This worker leaves a job that goes on (trib scale down): finish() hands nothing over and
  // waits for nobody; the others re-form without it.
  void leave() override { leaving_ = true; }
  // options.admit_joiners, with the group now.
  void at_epoch_start(std::int64_t step) override;
  // After finish(), with options.await_relaunched_chief: hands the final state (variables,
  // optimizer state, every member's cursor of the last step) to the relaunched chief of each
  // group it gives. False when it gave none.
  bool hand_over_after_end() override;
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
  float learning_rate(std::int64_t step) const override { return local_->learning_rate(step); }
  // With options.share_cursors, the group's allgather of the cursors starts here, overlapping
  // the step's compute when the loop gives the cursor before it.
  void set_data_cursor(std::string cursor) override;
  std::map<std::string, Tensor> state() const override { return local_->state(); }
  void restore_state(const std::map<std::string, Tensor>& tensors) override { local_->restore_state(tensors); }

  std::optional<update::Rollback> take_rollback() override;
  std::vector<std::string> group_cursors_of(std::int64_t step) const override;

  const Group& group() const { return *o_.group; }
  // Groups formed since start (each after a lost worker), and steps undone by them in all.
  int regroups() const { return regroups_; }
  std::int64_t steps_redone() const { return steps_redone_; }
  // The learning rate's factor now (1 until a re-formed group of another size).
  double lr_factor() const { return lr_factor_; }

 private:
  void broadcast_slots();
  // A failed exchange at `step`: re-form, agree, roll back (strategy_allreduce_recovery.cc).
  void recover(std::int64_t step, VariableStore& vars, const std::string& why);
  void agree_and_roll_back(std::int64_t step, VariableStore& vars, const std::string& why, int old_size);
  void adopt_group();  // the exchange and learning rate for the group now in o_.group
  // The group's cursors of step `to` - 1 from rank `root` (agree_and_roll_back), into `rb`: a
  // joiner's too.
  void share_rollback_cursors(std::int64_t to, int root, update::Rollback& rb);
  void hand_over_final_state(std::shared_ptr<Group> next);  // finish() with options.await_rejoin
  // Sets lr_factor_ for a group of `workers`.
  update::LocalUpdateOptions scaled_local_options(double workers);

  // The step a joiner says it stands at: above every member's, so never the one agreed on.
  static constexpr std::int64_t kJoining = INT64_MAX;

  AllreduceUpdateOptions o_;
  int workers_ = 1;
  std::string final_report_;
  std::unique_ptr<GradientExchange> exchange_;
  std::unique_ptr<update::LocalUpdate> local_;  // the update itself, on the averaged gradients
  double lr_factor_ = 1;
  int regroups_ = 0;
  std::int64_t steps_redone_ = 0;
  std::string cursor_;                            // set_data_cursor of the step being applied
  std::map<std::int64_t, std::string> cursors_;   // after each recent applied step
  // options.share_cursors: every member's cursor after each recent applied step, in rank order
  // of the group that applied it. Cleared by start(): a group back at a checkpoint left them.
  std::map<std::int64_t, std::vector<std::string>> group_cursors_;
  std::optional<update::Rollback> rollback_;
  VariableStore* vars_ = nullptr;  // the loop's, for hand_over_final_state()
  // The group finish() left, kept for hand_over_after_end() (options.await_relaunched_chief).
  std::shared_ptr<Group> finished_group_;
  bool leaving_ = false;  // leave(): finish() waits for no run's end
  std::int64_t next_step_ = 0;     // the step after the last one applied
};

}  // namespace trib::collectives
