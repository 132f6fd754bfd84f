// The training loop: batches from the data pipeline, gradients from the model graph, updates
// from an UpdateStrategy, evaluations, metrics, checkpoints and resuming.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trib/config/job_config.h"
#include "trib/train/progress.h"
#include "trib/train/update_strategy.h"

namespace trib::train {

// What a distributed worker adds to a run: its place among the workers, and the strategy
// that combines gradients. Absent (the default), the run is one local process.
struct Distribution {
  int worker_index = 0;
  int workers = 1;
  bool chief() const { return worker_index == 0; }
  // Builds the update strategy for the model's trainable parameter names, with the
  // optimizer and schedule the job describes.
  std::function<std::unique_ptr<UpdateStrategy>(const std::vector<std::string>& trainable,
                                                std::shared_ptr<const Optimizer>, std::shared_ptr<const Schedule>)>
      make_update;
  // Stream jobs with several workers: the coordinator's key-value store. Workers hand their
  // Kafka offsets to the chief through it at every checkpoint (see src/train/stream_sync.h).
  std::function<void(const std::string& key, const std::string& value)> publish;
  std::function<std::optional<std::string>(const std::string& key)> lookup;
};

struct TrainerOptions {
  config::JobConfig job;
  std::filesystem::path output;  // the run directory
  bool resume = false;           // continue from the newest valid checkpoint in output
  bool interactive = false;      // a live progress line instead of plain log lines
  std::FILE* log = stdout;
  // Called after every applied step with the step number (1-based) and its loss; for tests
  // and tools that want every loss, not just the evaluations.
  std::function<void(std::int64_t step, double loss)> on_step;
  Distribution distribution;
};

// Trains as the job says and returns the final test metrics. Every input is validated (data
// files, model shapes, the checkpoint to resume) before the run directory is touched.
RunSummary train(const TrainerOptions& options);

// Throws NotFound (as `train` with resume would) when `run_dir` holds no valid checkpoint.
void check_resumable(const std::filesystem::path& run_dir);

struct EvalOptions {
  config::JobConfig job;
  std::filesystem::path checkpoint;  // a ckpt-<step> directory, or a run directory / root
  std::FILE* log = stdout;
};
// Evaluates a checkpoint on the job's test split.
RunSummary evaluate_checkpoint(const EvalOptions& options);

}  // namespace trib::train
