// Training a job whose data are files (idx, csv): the one training loop (training_loop.h) over
// the job's dataset (dataset_batch_source.h), with evaluations on its test split. Stream jobs
// (data.format: kafka) take the same options to trib::train_stream::train.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trib/config/job_config.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/train/datasets.h"
#include "trib/train/progress.h"
#include "trib/train/distribution.h"
#include "trib/train/stop_request.h"

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
  Distribution distribution;
  // Progress as machine-readable lines for a local-cluster launcher's live line (progress.h);
  // overrides `interactive`.
  bool progress_lines = false;
  // Asked at every step boundary whether to stop there, with a checkpoint (preemption).
  // Null: the run goes to its end.
  StopRequest* stop = nullptr;
  // This process's metrics (monitoring.port): the loop's hooks feed it (train/observed_hooks.h).
  // Null: no metrics.
  monitor::MetricsRegistry* metrics = nullptr;
  // The chief of a running cluster job, started in place of a lost one: it takes the run
  // directory back (its newest checkpoint, if there is one yet) instead of starting a new one.
  bool relaunched_chief = false;
  // The job's datasets, loaded already: a sweep loads them once and forks its trials with
  // them (sweep/trial_fork.h). Null: train loads them from the job's data section.
  std::shared_ptr<const Datasets> datasets = nullptr;
  // Asked when the run has reached its steps, after its last evaluation and checkpoint, with
  // the step: the same job with a larger training.steps (and nothing else changed) to train
  // on to in this process, from the state it holds, as `--resume` with that job would but
  // without rebuilding the model or reading the checkpoint back; nullopt to end. Local runs
  // only; a sweep's forked trials use it at their rungs (sweep/trial_fork.h). Null: the run ends.
  std::function<std::optional<config::JobConfig>(std::int64_t step)> next_job = nullptr;
};

// Trains as the job says and returns the final test metrics. Every input is validated (data
// files, model shapes, the checkpoint to resume) before the run directory is touched.
// InvalidArgument for a stream job.
RunSummary train(const TrainerOptions& options);

// Throws NotFound (as `train` with resume would) when `run_dir` holds no valid checkpoint.
void check_resumable(const std::filesystem::path& run_dir);

struct EvalOptions {
  config::JobConfig job;
  std::filesystem::path checkpoint;  // a ckpt-<step> directory, or a run directory / root
  std::FILE* log = stdout;
  std::int64_t limit = 0;             // the first `limit` test examples only; 0: all
  // Also writes the logits [examples, classes] as a NumPy .npy file (f32): what an exported
  // or served model's outputs are checked against.
  std::filesystem::path outputs;
};
// Evaluates a checkpoint on the job's test split.
RunSummary evaluate_checkpoint(const EvalOptions& options);

}  // namespace trib::train
