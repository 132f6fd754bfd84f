// What a kind of job adds to the one training loop (training_loop.h): evaluations on a test
// set for file jobs, prequential metrics and agreed Kafka offsets for stream jobs. The loop
// owns the model, the variables, the update strategy and the run directory; hooks see them
// through a LoopContext at fixed points of the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trib/config/job_config.h"
#include "trib/data/batch.h"
#include "trib/engine/context.h"
#include "trib/train/batch_source.h"
#include "trib/train/distribution.h"
#include "trib/train/model_graph.h"
#include "trib/train/progress.h"
#include "trib/train/run_directory.h"
#include "trib/update/update_strategy.h"

namespace trib::train {

// Where the last applied step's time went, in seconds: waiting for its batch (source.next),
// the forward and backward pass, and the strategy's apply (the exchange with servers or
// peers, waits for them included, and the optimizer).
struct StepTiming {
  double wait_s = 0, compute_s = 0, exchange_s = 0;
};

// The loop's state as hooks see it.
struct LoopContext {
  const config::JobConfig& job;  // as it runs (config/derived_settings.h)
  const Distribution& distribution;
  const ModelSpec& spec;
  const EngineContext& engine;
  VariableStore& vars;
  update::UpdateStrategy& update;
  BatchSource& source;
  Progress& progress;
  RunDirectory* run;  // the chief's; null on the other workers
  std::int64_t steps_per_epoch = 0;  // 0: the source has no epochs
  std::int64_t step = 0;             // steps applied so far
  std::int64_t examples = 0;         // examples in the applied steps of this process's run
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  RunSummary summary;                // the loop fills steps, epochs, wall_s, images_per_s
  std::int64_t saved_step = -1;      // the newest checkpoint's step (resumed from or written)
  StepTiming timing;                 // the last applied step's (on_step)
  // The loop stopped because this worker leaves the running job alone (StopRequest::leaves):
  // set before on_last_step.
  bool leaving = false;

  bool chief() const { return distribution.chief(); }
  double epoch() const { return steps_per_epoch > 0 ? double(step) / double(steps_per_epoch) : 0; }
  double seconds() const;  // since the loop started
  // Chief only: writes and publishes checkpoint `step` (the strategy's variables and state,
  // the epoch, the source's position and `sections` as manifest sections), then keeps the
  // newest training.keep_checkpoints. Nothing when checkpoint `step` exists already, unless
  // `again`: a stream job's final checkpoint at a periodic checkpoint's step, whose sections
  // (every worker's final Kafka claims) may hold more than that one's.
  void write_checkpoint(const std::map<std::string, nlohmann::json>& sections = {}, bool again = false);
};

class TrainingHooks {
 public:
  virtual ~TrainingHooks() = default;
  // Once every worker's variables are in place (fresh, or the checkpoint's), before the first
  // step.
  virtual void on_start(LoopContext& /*ctx*/) {}
  // After each applied step (ctx.step counts it), on every worker: the batch it trained on and
  // what the step computed. result.logits came from the forward pass before the update: the
  // batch's prequential scores.
  virtual void on_step(LoopContext& /*ctx*/, const data::Batch& /*batch*/, const StepResult& /*result*/) {}
  // Before each step's forward and backward pass, once its batch is read and the strategy has
  // its data cursor, on every worker (a stream's id record, whose line an allreduce group that
  // shares cursors needs before the exchange).
  virtual void before_step(LoopContext& /*ctx*/, const data::Batch& /*batch*/) {}
  // After a step the strategy skipped (a non-finite gradient; ctx.step does not count it), on
  // the worker that skipped it, after source.skipped: the batch it consumed without training.
  virtual void on_skip(LoopContext& /*ctx*/, const data::Batch& /*batch*/) {}
  // Every LoopPlan::report_every steps, and once after the last step unless that step just
  // reported; on every worker: evaluations, metrics rows.
  virtual void on_report(LoopContext& /*ctx*/) {}
  // After the job rolled back (a lost parameter server was restored) and the loop rewound to
  // `rewind.step`, before the step after it: a hook that keeps positions of its own (a
  // stream's Kafka offsets, in the checkpoint's sections) rewinds them to the checkpoint's.
  virtual void on_rewind(LoopContext& /*ctx*/, const update::Rewind& /*rewind*/) {}
  // After the workers re-formed their group (a lost allreduce worker; the update strategy
  // holds the new group, and the survivors' state of step `rollback.step`), on every survivor,
  // before the loop goes on, and on a worker that joined a running group, after on_start: a
  // hook whose positions cannot follow the group's rollback (a
  // stream's Kafka offsets) rolls the whole group back further, to a step whose positions it
  // knows (the newest checkpoint's), and returns it. nullopt: the loop goes on from
  // rollback.step, with the data where the strategy says it stood (the default).
  virtual std::optional<std::int64_t> on_regroup(LoopContext& /*ctx*/, const update::Rollback& /*rollback*/) {
    return std::nullopt;
  }
  // Once this worker has taken its last step, before the strategy's finish() (which, on a
  // parameter-server chief, waits for every other worker to be done): a hook whose
  // checkpoints are barriers between workers releases them here, or a worker still stepping
  // would wait at its next barrier for a chief that waits for it.
  virtual void on_last_step(LoopContext& /*ctx*/) {}
  // Every LoopPlan::checkpoint_every steps before the last (`final` false), and once at the
  // end after the strategy's finish() (`final` true); on every worker. The default has the
  // chief write the checkpoint. A job whose workers must agree on what it holds (a stream's
  // offsets) overrides this and calls ctx.write_checkpoint on the chief with its sections.
  virtual void on_checkpoint(LoopContext& ctx, bool /*final*/) {
    if (ctx.chief()) ctx.write_checkpoint();
  }
  // Once at the end, after the last checkpoint: summaries.
  virtual void on_end(LoopContext& /*ctx*/) {}
};

}  // namespace trib::train
