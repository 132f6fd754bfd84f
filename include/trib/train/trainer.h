// The training loop: batches from the data pipeline, gradients from the model graph, updates
// from an UpdateStrategy, evaluations, metrics, checkpoints and resuming.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include "trib/config/job_config.h"
#include "trib/train/progress.h"

namespace trib::train {

struct TrainerOptions {
  config::JobConfig job;
  std::filesystem::path output;  // the run directory
  bool resume = false;           // continue from the newest valid checkpoint in output
  bool interactive = false;      // a live progress line instead of plain log lines
  std::FILE* log = stdout;
  // Called after every applied step with the step number (1-based) and its loss; for tests
  // and tools that want every loss, not just the evaluations.
  std::function<void(std::int64_t step, double loss)> on_step;
};

// Trains as the job says and returns the final test metrics. Every input is validated (data
// files, model shapes, the checkpoint to resume) before the run directory is touched.
RunSummary train(const TrainerOptions& options);

struct EvalOptions {
  config::JobConfig job;
  std::filesystem::path checkpoint;  // a ckpt-<step> directory, or a run directory / root
  std::FILE* log = stdout;
};
// Evaluates a checkpoint on the job's test split.
RunSummary evaluate_checkpoint(const EvalOptions& options);

}  // namespace trib::train
