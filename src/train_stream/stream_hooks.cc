#include "train_stream/stream_hooks.h"

#include <chrono>
#include <cmath>

#include <unistd.h>

#include "train/training_state.h"

namespace trib::train_stream {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// P(class 1) from two-class logits: the prequential score.
std::vector<float> positive_scores(const Tensor& logits) {
  const std::int64_t n = logits.shape()[0], c = logits.shape()[1];
  const float* l = logits.data<float>();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + std::exp(l[i * c] - l[i * c + 1]));
  return out;
}

}  // namespace

IdRecorder::IdRecorder(const std::filesystem::path& run_dir, int worker, bool enabled) {
  if (!enabled) return;
  std::filesystem::create_directories(run_dir / "stream_ids");
  out_.open(run_dir / "stream_ids" / fmt::format("worker-{}.txt", worker), std::ios::app);
  out_ << "run " << ::getpid() << std::endl;
}

void IdRecorder::step(std::int64_t step, const data::Batch& batch) {
  if (!out_.is_open()) return;
  const Tensor& ids = batch.get(stream::KafkaSource::kEventId);
  std::string line = std::to_string(step);
  for (std::int64_t i = 0; i < ids.numel(); ++i) line += " " + std::to_string(ids.data<std::int64_t>()[i]);
  out_ << line << std::endl;
}

StreamHooks::StreamHooks(KafkaBatchSource& source, const std::filesystem::path& run_dir, bool record_ids)
    : source_(source), run_dir_(run_dir), record_ids_(record_ids) {}

void StreamHooks::on_start(train::LoopContext& ctx) {
  ids_.emplace(run_dir_, ctx.distribution.worker_index, record_ids_);
  if (!source_.restored_offsets().fields().empty())
    ctx.progress.message(fmt::format("Kafka offsets restored: {}", source_.restored_offsets().to_string()));
}

void StreamHooks::on_step(train::LoopContext& ctx, const data::Batch& batch, const train::StepResult& result) {
  // The logits came from the forward pass before this update: they are the batch's
  // prequential scores; the update that used the batch happened now.
  metrics_.record(batch, positive_scores(result.logits), wall_ms());
  ids_->step(ctx.step, batch);
}

void StreamHooks::on_report(train::LoopContext& ctx) {
  stream::KafkaSource& kafka = source_.kafka();
  metrics_.set_consumer_lag(kafka.lag());
  nlohmann::json j = metrics_.to_json();
  j["step"] = ctx.step, j["split"] = "stream", j["worker"] = ctx.distribution.worker_index;
  j["time_s"] = ctx.seconds();
  j["poison"] = kafka.stats().poison;
  if (ctx.run) ctx.run->append_metrics_line(j.dump());
  auto num = [](const nlohmann::json& v, const char* f) {
    return v.is_null() ? std::string("-") : fmt::format(fmt::runtime(f), v.get<double>());
  };
  ctx.progress.message(fmt::format("stream step {:>6}  examples {:>8}  acc {:>6}  auc {:>6}  events/s {:>7}  "
                                   "fresh p50/p99 {}/{} ms  lag {}",
                                   ctx.step, j["examples"].get<std::int64_t>(), num(j["prequential_accuracy"], "{:.4f}"),
                                   num(j["prequential_auc"], "{:.4f}"), num(j["events_per_s"], "{:.0f}"),
                                   num(j["freshness_p50_ms"], "{:.0f}"), num(j["freshness_p99_ms"], "{:.0f}"),
                                   j["consumer_lag_total"].dump()));
  if (auto a = metrics_.accuracy()) ctx.summary.accuracy = *a;
}

void StreamHooks::checkpoint_and_commit(train::LoopContext& ctx, const data::DataPosition& offsets) {
  ctx.write_checkpoint({{"kafka", train::data_position_to_json(offsets)}});
  if (std::string e = source_.kafka().commit(offsets); !e.empty())
    ctx.progress.message("Kafka commit failed (the checkpoint holds the offsets): " + e);
}

void StreamHooks::on_checkpoint(train::LoopContext& ctx, bool final) {
  StreamSync& sync = source_.sync();
  const data::DataPosition own = source_.kafka_position();
  if (!final) {
    if (ctx.chief()) {
      checkpoint_and_commit(ctx, sync.gather(ctx.step, own));
      sync.published(ctx.step);
    } else if (sync.offer(ctx.step, own)) {
      source_.kafka().commit(own);
    }
    return;
  }
  // The last checkpoint: every worker has stopped, so the final offsets are exact.
  if (ctx.chief()) {
    checkpoint_and_commit(ctx, sync.gather_final(own));
    sync.published_final();
  } else if (sync.final_offsets(own)) {
    source_.kafka().commit(own);
  }
}

void StreamHooks::on_end(train::LoopContext& ctx) {
  const int w = ctx.distribution.worker_index;
  if (auto a = metrics_.auc()) ctx.progress.message(fmt::format("worker {} final prequential AUC {:.4f}", w, *a));
  ctx.progress.message(
      fmt::format("worker {} trained on {} events ({:.0f} events/s)", w, ctx.examples, ctx.summary.images_per_s));
}

}  // namespace trib::train_stream
