// What the job's own hooks do, watched: ObservedHooks forwards every call to them and feeds
// the process's metrics registry (steps, examples, loss, learning rate, images/s, the step's
// phases, checkpoint durations, evaluations) and, every training.log_every steps, a per-step
// row (loss, lr, images/s, gradient norm) to metrics.jsonl: the chief writes its own rows,
// the other workers send theirs through the coordinator's store (RowRelay) for the chief to
// write. The chief also writes those rows and its evaluations as TensorBoard scalars
// (monitoring.tensorboard). Nothing in the loop changes: the trainers wrap their hooks in it.
#pragma once

#include <chrono>
#include <optional>

#include "train/row_relay.h"
#include "train/step_series.h"
#include "train/training_hooks.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/tensorboard/tfevents_writer.h"

namespace trib::train {

class ObservedHooks final : public TrainingHooks {
 public:
  // `metrics` may be null (no monitoring): then only the per-step rows.
  ObservedHooks(TrainingHooks& inner, monitor::MetricsRegistry* metrics);

  void on_start(LoopContext& ctx) override;
  void on_step(LoopContext& ctx, const data::Batch& batch, const StepResult& result) override;
  void before_step(LoopContext& ctx, const data::Batch& batch) override { inner_.before_step(ctx, batch); }
  void on_skip(LoopContext& ctx, const data::Batch& batch) override;
  void on_report(LoopContext& ctx) override;
  void on_last_step(LoopContext& ctx) override { inner_.on_last_step(ctx); }
  void on_rewind(LoopContext& ctx, const update::Rewind& rewind) override { inner_.on_rewind(ctx, rewind); }
  std::optional<std::int64_t> on_regroup(LoopContext& ctx, const update::Rollback& rollback) override {
    return inner_.on_regroup(ctx, rollback);
  }
  void on_checkpoint(LoopContext& ctx, bool final) override;
  void on_end(LoopContext& ctx) override;

 private:
  void write_row(LoopContext& ctx, const StepResult& result);
  void collect_rows(LoopContext& ctx);
  void row_scalars(const nlohmann::json& row);

  TrainingHooks& inner_;
  monitor::MetricsRegistry* metrics_;
  std::shared_ptr<StepSeries> series_;  // the registry's series this process feeds
  std::optional<RowRelay> relay_;
  std::optional<tensorboard::TfEventsWriter> events_;  // the chief's
  // images/s over the window since the last row (or the last gauge update)
  std::chrono::steady_clock::time_point rate_since_ = std::chrono::steady_clock::now();
  std::int64_t rate_examples_ = 0;
  std::chrono::steady_clock::time_point row_since_ = std::chrono::steady_clock::now();
  std::int64_t row_examples_ = 0;
};

// The global L2 norm of a step's gradients (dense values, or the rows a sparse one touched).
double gradient_norm(const std::vector<update::GradTensor>& grads);

}  // namespace trib::train
