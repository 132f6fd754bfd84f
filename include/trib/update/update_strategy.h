// What a trainer does with a step's gradients. Locally: clip, then the optimizer
// (local_update.h). The distributed strategies (parameter servers, allreduce) implement the
// same interface, so the training loop is the same for all of them. This library sits below
// both the trainer and the strategies: it knows gradients, variables, optimizers and
// checkpoints, and nothing of graphs, networks or data.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trib/checkpoint/checkpoint.h"
#include "trib/core/error.h"
#include "trib/engine/executor.h"
#include "trib/update/grad_tensor.h"

namespace trib::update {

// What apply() returning false means when the set of workers changed under it (allreduce: a
// worker was lost and the survivors re-formed their group): the step was not applied, and
// the steps from `step` on are to be taken again, by `workers` workers of which this is
// number `rank` (this worker's data shard from the next epoch on).
struct Rollback {
  std::int64_t step = 0;  // the next step to take
  int rank = 0;
  int workers = 1;
  // Where this worker's data stood after step - 1 was applied; nullopt when not known (then
  // the batches of the undone steps are consumed without being trained on).
  std::optional<std::string> data_cursor;
  // Where the worker whose state the group took stood after step - 1, in its own shard: a
  // worker that joins a running group starts its data there (moved to its shard).
  std::optional<std::string> peer_cursor;
  // Every member's data cursor of step - 1, the lost members' included, in the ranks of the
  // group that applied that step, when the strategy shares them each step (a stream job: a
  // hook merges them into the group's whole progress at `step`). Empty: not known, and
  // `no_group_cursors` says why (one phrase for the log).
  std::vector<std::string> group_cursors;
  std::string no_group_cursors;
  std::string message;  // one line for the log: who was lost, what was undone
  std::int64_t generation = 0;  // the re-formed group's (a stream job scopes its barriers by it)
};

// A group's collective failed because a member was lost or stalled (Unavailable, Timeout): the
// errors after which the survivors re-form the group (a Rollback) instead of ending the run.
inline bool lost_peer(const Error& e) {
  return dynamic_cast<const Unavailable*>(&e) != nullptr || dynamic_cast<const Timeout*>(&e) != nullptr;
}

// crc32c of every variable's bytes, in name order: rollback and rejoin lines print it, so that
// tests (and users) see every member of a group go on from the same variables.
std::uint32_t variables_crc32c(const VariableStore& vars);

// The job rolled back (a lost parameter server was restored from a checkpoint): the loop
// continues from `step`, with the data at `data_position` (the checkpoint's, as JSON in the
// manifest's form, taken on the chief's shard; empty: where this worker's data started).
struct Rewind {
  std::int64_t step = 0;
  std::string data_position;
  std::string why;  // one line for the log
  // The restore's generation, and the restored checkpoint's manifest sections (a JSON object
  // as text; empty: no checkpoint, the initial values): a job that keeps positions of its own
  // in a section (a stream's Kafka offsets, "kafka") rewinds them too (TrainingHooks::on_rewind).
  std::int64_t generation = 0;
  std::string sections;
};

// Where the chief announces a job restore in the coordinator's store: {"generation",
// "step", "checkpoint", "data_position", "sections", "lost"} (ps/ps_recovery.h). A worker
// that found a server lost and waits for that announcement says so under kRestoreWantedKey
// (the generation of the last restore it rewound to, 0 before any): a chief waiting for that
// worker at a barrier of its own (a stream's checkpoint) gives way instead of waiting forever.
inline constexpr const char* kRestoreKey = "ps/restore";
inline constexpr const char* kRestoreWantedKey = "ps/restore/wanted";

class UpdateStrategy {
 public:
  virtual ~UpdateStrategy() = default;
  // Called from the backprop thread as soon as gradient `index` exists (overlap hook).
  virtual void on_gradient_ready(std::size_t /*index*/, const GradTensor& /*grad*/) {}
  // Applies one step's gradients. Returns false when the step was skipped (a non-finite
  // gradient): the caller then does not advance the schedule.
  virtual bool apply(std::int64_t step, std::vector<GradTensor>& grads, VariableStore& vars) = 0;
  virtual float learning_rate(std::int64_t step) const = 0;

  // Brings the variables to where training starts: `vars` holds fresh values from the
  // shared seed; with a checkpoint, its values instead. Returns the step to continue from.
  // Distributed strategies make every worker agree here (the chief's values win).
  virtual std::int64_t start(VariableStore& vars, const Checkpoint* checkpoint);
  // Adds the model and optimizer state to a checkpoint being written (the caller adds the
  // data position and publishes). Called on the chief only.
  virtual void save(CheckpointWriter& writer, const VariableStore& vars);
  // After the last step: flush, leave the group, report. Called on every worker.
  virtual void finish() {}
  // Before finish(), on a worker that leaves a job which goes on without it (trib scale down):
  // finish() then waits for nobody's end of the run.
  virtual void leave() {}
  // At a step boundary where the data source begins an epoch (BatchSource::at_epoch_start),
  // before that step's batch: where an allreduce group takes in workers that join beyond its
  // starting ones, so that every member reshards with nothing left out or read twice.
  virtual void at_epoch_start(std::int64_t /*step*/) {}
  // After finish(), on a worker other than the chief: the job was restored since (a lost
  // parameter server, restore announced under kRestoreKey), and this worker, done, says so
  // again to the restored servers, so that the chief does not wait for it.
  virtual void finish_after_restore() {}
  // After finish(), on a stream job's worker other than the chief, the chief lost after the run's
  // last exchange: waits for its relaunched process to join and hands it the final state (an
  // allreduce group's variables, optimizer state and members' cursors of the last step). False
  // where the strategy has no such path, or none joined.
  virtual bool hand_over_after_end() { return false; }
  // A few lines for the end-of-run summary (per-PS load, staleness); empty by default.
  virtual std::string report() const { return ""; }

  // The data position (opaque bytes, data::DataPosition::serialize) that holds once the
  // step about to be applied is: strategies whose servers outlive a worker keep it with
  // the step, so that a relaunched worker resumes its data exactly where the servers'
  // state says it stood. Called before each apply() by a loop whose source has positions.
  virtual void set_data_cursor(std::string /*cursor*/) {}
  // After start(): where this worker's data resumes, when the strategy knows (a relaunched
  // parameter-server worker); nullopt: where the source's own start put it.
  virtual std::optional<std::string> resume_data_cursor() const { return std::nullopt; }
  // The data cursor of another worker's last applied update (parameter servers: the slowest
  // server's; a worker gone for good hands its data to the others from there). nullopt where
  // the strategy keeps none; "" where that worker has pushed none.
  virtual std::optional<std::string> data_cursor_of(int /*worker*/) { return std::nullopt; }
  // After start(), on a chief started in place of a lost one: true when it rejoined the
  // running job with its current state (the parameter servers'), false when it took the job
  // back to its newest checkpoint (or it is no such chief).
  virtual bool rejoined_running_job() const { return false; }
  // After apply() returned false: set when the job rolled back instead (the step was not
  // applied, and the loop rewinds to the Rewind's step and data). Taken once.
  virtual std::optional<Rewind> take_rewind() { return std::nullopt; }

  // After apply() returned false: the rollback that caused it, once (nullopt: the step was
  // skipped for a non-finite gradient). After start(): set when this worker joined a running
  // group (the shard it takes).
  virtual std::optional<Rollback> take_rollback() { return std::nullopt; }
  // Every member's data cursor once step `step` was applied, in the ranks of the group that
  // applied it, where the strategy shares them each step and still keeps that step's (allreduce
  // with share_cursors: the last few steps); empty otherwise. A stream job's chief takes a
  // worker lost after the run's last exchange at its cursor of the last step.
  virtual std::vector<std::string> group_cursors_of(std::int64_t /*step*/) const { return {}; }

  // Optimizer state for checkpoints, as named tensors.
  virtual std::map<std::string, Tensor> state() const { return {}; }
  virtual void restore_state(const std::map<std::string, Tensor>& /*tensors*/) {}
};

}  // namespace trib::update
