#include "train/observed_hooks.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace trib::train {

using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace


double gradient_norm(const std::vector<update::GradTensor>& grads) {
  double sum = 0;
  for (const update::GradTensor& g : grads) {
    if (!g.values.defined() || g.values.dtype() != DType::f32) continue;
    for (float v : g.values.span<float>()) sum += double(v) * double(v);
  }
  return std::sqrt(sum);
}

ObservedHooks::ObservedHooks(TrainingHooks& inner, monitor::MetricsRegistry* metrics)
    : inner_(inner), metrics_(metrics) {
  if (metrics_ != nullptr) series_ = std::make_shared<StepSeries>(*metrics_);
}

void ObservedHooks::on_start(LoopContext& ctx) {
  inner_.on_start(ctx);
  const Distribution& d = ctx.distribution;
  if (ctx.job.training.log_every > 0 && d.workers > 1) relay_.emplace(d.worker_index, d.workers, d.publish, d.lookup);
  if (ctx.run != nullptr && ctx.job.monitoring.tensorboard) {
    try {
      events_.emplace(ctx.run->path());
    } catch (const std::exception& e) {
      ctx.progress.message(fmt::format("no TensorBoard file: {}", e.what()));
    }
  }
  rate_since_ = row_since_ = Clock::now();
  rate_examples_ = row_examples_ = ctx.examples;
  if (series_) {
    series_->step.set(double(ctx.step));
    series_->lr.set(ctx.update.learning_rate(ctx.step));
  }
}

void ObservedHooks::on_step(LoopContext& ctx, const data::Batch& batch, const StepResult& result) {
  inner_.on_step(ctx, batch, result);
  if (series_) {
    StepSeries& s = *series_;
    s.record({double(batch.rows()), double(ctx.step), result.loss, ctx.update.learning_rate(ctx.step),
              ctx.timing.wait_s, ctx.timing.compute_s, ctx.timing.exchange_s});
    const Clock::time_point now = Clock::now();
    if (const double dt = seconds(now - rate_since_); dt >= 1.0) {
      s.rate.set(double(ctx.examples - rate_examples_) / dt);
      rate_since_ = now;
      rate_examples_ = ctx.examples;
    }
  }
  const std::int64_t every = ctx.job.training.log_every;
  if (every > 0 && ctx.step % every == 0) write_row(ctx, result);
}

void ObservedHooks::write_row(LoopContext& ctx, const StepResult& result) {
  const Clock::time_point now = Clock::now();
  const double dt = seconds(now - row_since_);
  nlohmann::json row = {{"split", "step"},
                        {"step", ctx.step},
                        {"epoch", ctx.epoch()},
                        {"worker", ctx.distribution.worker_index},
                        {"loss", result.loss},
                        {"lr", ctx.update.learning_rate(ctx.step)},
                        {"images_per_s", dt > 0 ? double(ctx.examples - row_examples_) / dt : 0.0},
                        {"grad_norm", gradient_norm(result.grads)},
                        {"time_s", ctx.seconds()}};
  row_since_ = now;
  row_examples_ = ctx.examples;
  // Metrics are never worth the run: a row that cannot travel (the coordinator away) is lost.
  try {
    if (ctx.run != nullptr) {
      ctx.run->append_metrics_line(row.dump());
      row_scalars(row);
      collect_rows(ctx);
      if (events_) events_->flush();
    } else if (relay_) {
      relay_->send(row.dump());
    }
  } catch (const std::exception& e) {
    ctx.progress.message(fmt::format("worker {}: a metrics row was not written: {}", ctx.distribution.worker_index,
                                     e.what()));
  }
}

void ObservedHooks::collect_rows(LoopContext& ctx) {
  if (ctx.run == nullptr || !relay_) return;
  for (const std::string& row : relay_->receive()) {
    ctx.run->append_metrics_line(row);
    const nlohmann::json j = nlohmann::json::parse(row, nullptr, false);
    if (j.is_object()) row_scalars(j);
  }
}

// loss, images/s and gradient norm per worker; the learning rate once (the chief's).
void ObservedHooks::row_scalars(const nlohmann::json& row) {
  if (!events_) return;
  const int worker = row.value("worker", 0);
  const std::int64_t step = row.value("step", std::int64_t{0});
  for (const char* key : {"loss", "images_per_s", "grad_norm"})
    if (row.contains(key) && row[key].is_number())
      events_->scalar(fmt::format("{}/worker{}", key, worker), step, row[key].get<double>());
  if (worker == 0 && row.contains("lr") && row["lr"].is_number()) events_->scalar("lr", step, row["lr"].get<double>());
}

void ObservedHooks::on_skip(LoopContext& ctx, const data::Batch& batch) {
  inner_.on_skip(ctx, batch);
  if (series_) series_->skipped.add(1);
}

void ObservedHooks::on_report(LoopContext& ctx) {
  inner_.on_report(ctx);
  // Only the chief evaluates: the others have no such series.
  if (metrics_ != nullptr && ctx.chief() && !ctx.job.data.stream()) {
    metrics_->gauge("trib_eval_loss", "The last evaluation's loss (chief).", {{"split", "test"}}).set(ctx.summary.loss);
    metrics_->gauge("trib_eval_accuracy", "The last evaluation's accuracy (chief).", {{"split", "test"}})
        .set(ctx.summary.accuracy);
  }
  // A file job's evaluation (a stream's prequential metrics are its metrics.jsonl rows).
  if (events_ && !ctx.job.data.stream()) {
    try {
      events_->scalar("test/loss", ctx.step, ctx.summary.loss);
      events_->scalar("test/accuracy", ctx.step, ctx.summary.accuracy);
      events_->flush();
    } catch (const std::exception& e) {
      ctx.progress.message(fmt::format("step {}: TensorBoard scalars not written: {}", ctx.step, e.what()));
    }
  }
}

void ObservedHooks::on_checkpoint(LoopContext& ctx, bool final) {
  const Clock::time_point start = Clock::now();
  inner_.on_checkpoint(ctx, final);
  if (series_) series_->checkpoint.observe(seconds(Clock::now() - start));
}

void ObservedHooks::on_end(LoopContext& ctx) {
  inner_.on_end(ctx);
  try {
    collect_rows(ctx);
    if (events_) events_->flush();
  } catch (const std::exception& e) {
    ctx.progress.message(fmt::format("the other workers' last metrics rows were not collected: {}", e.what()));
  }
}

}  // namespace trib::train
