// Training on batches a program hands over instead of a job's files: what the Python API's
// Model.fit runs over numpy arrays or a Python iterator. It is the one training loop
// (src/train/training_loop.h) with the caller's BatchSource, optionally starting from the
// caller's variables (a model trained or loaded before), and it hands the trained variables
// back. The job (options.job) gives the model, optimizer, schedule and training settings; its
// data section is not read (data.format: python says so in the run's config.yaml).
#pragma once

#include <cstdint>
#include <functional>

#include "trib/engine/executor.h"
#include "trib/train/batch_source.h"
#include "trib/train/trainer.h"

namespace trib::train {

// What one applied step computed, as a caller's callback sees it.
struct StepMetrics {
  std::int64_t step = 0;  // 1-based
  double epoch = 0;       // steps / steps_per_epoch; 0 without epochs
  double loss = 0;        // mean over the batch, L2 penalty included
  double accuracy = 0;    // of the batch, before the step's update
  std::int64_t rows = 0;
};

struct SourceTrainingOptions {
  std::int64_t total_steps = 0;      // 0: until the source ends
  std::int64_t steps_per_epoch = 0;  // 0: the source has no epochs
  // Steps between on_report calls (and checkpoints); 0: steps_per_epoch, or 100 without epochs.
  std::int64_t report_every = 0;
  // Start from these values instead of fresh ones: every parameter of the model must be
  // there with its shape (InvalidArgument naming it otherwise). Ignored when resuming.
  const VariableStore* initial = nullptr;
  // After every applied step.
  std::function<void(const StepMetrics&)> on_step;
  // Every report_every steps and once at the end: the variables as they are then (for a
  // validation evaluation).
  std::function<void(std::int64_t step, double epoch, VariableStore& vars)> on_report;
};

struct SourceTrainingResult {
  RunSummary summary;
  VariableStore variables;  // every parameter and running statistic, after the last step
};

// Runs options.job on `source` as a single process (options.distribution must be the default)
// and writes its run directory (options.output) like any run: config.yaml, checkpoints.
SourceTrainingResult train_on_source(const TrainerOptions& options, BatchSource& source,
                                     const SourceTrainingOptions& plan);

}  // namespace trib::train
