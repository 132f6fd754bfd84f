// The one training loop. Every job (files, Kafka, a Python iterator) runs through it:
//
//   set-up   the job as it runs (derived settings), the model graph, the checkpoint to
//            resume (chief), source.start, the run directory and its config.yaml (chief),
//            optimizer, schedule, update strategy, initial variables, strategy.start
//   steps    batch = source.next() (none: the source ended) -> forward and backward ->
//            strategy.apply -> source.applied, hooks.on_step (a skipped step: source.skipped,
//            hooks.on_skip) -> every report_every steps
//            hooks.on_report, every checkpoint_every steps hooks.on_checkpoint
//   end      strategy.finish, the last report, the last checkpoint, hooks.on_end
//
// What differs between kinds of job lives in the BatchSource (batch_source.h) and the
// TrainingHooks (training_hooks.h) they pass in.
#pragma once

#include <cstdint>

#include "trib/train/batch_source.h"
#include "trib/train/trainer.h"
#include "train/training_hooks.h"

namespace trib::train {

// The run's shape, which the kind of job knows (a dataset's size, a stream's settings).
struct LoopPlan {
  std::int64_t total_steps = 0;      // 0: no limit, the run ends when the source does
  std::int64_t steps_per_epoch = 0;  // 0: the source has no epochs
  std::int64_t report_every = 100;   // steps between hooks.on_report
  std::int64_t checkpoint_every = 100;
  // The source decides when the run ends (data.assignment: dynamic: when the job's batches are
  // all read, however many steps this worker took); total_steps is then what is expected,
  // for progress and the schedule.
  bool source_ends_run = false;
};

RunSummary run_training_loop(const TrainerOptions& options, const LoopPlan& plan, BatchSource& source,
                             TrainingHooks& hooks);

}  // namespace trib::train
