#include "trib/train/trainer.h"

#include <chrono>
#include <cmath>

#include "train/npy_file.h"
#include "train/training_state.h"
#include "trib/engine/context.h"
#include "trib/train/chunked_batch_source.h"
#include "trib/train/dataset_batch_source.h"
#include "trib/train/datasets.h"
#include "trib/train/evaluator.h"
#include "train/observed_hooks.h"
#include "train/training_loop.h"

namespace trib::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// data.assignment: dynamic: batches per chunk. Small enough that a departed worker's chunk is
// soon read by another, large enough that claims are few (one per 8 steps).
constexpr std::int64_t kChunkBatches = 8;

// A file job's reports: the test split (and up to 10k training examples) evaluated on the
// chief, one metrics row per split; the run's summary at the end.
class EvaluationHooks final : public TrainingHooks {
 public:
  explicit EvaluationHooks(const Datasets& data) : data_(data) {}

  void on_start(LoopContext& ctx) override {
    if (ctx.chief()) evaluator_.emplace(ctx.spec, ctx.job.training.eval_batch, ctx.engine);
  }
  void on_report(LoopContext& ctx) override {
    if (!ctx.chief()) return;
    const double t = ctx.seconds();
    EvalRow test{ctx.step, ctx.epoch(), "test", 0, 0, t};
    EvalResult te = evaluator_->run(*data_.test, ctx.vars);
    test.loss = te.loss, test.accuracy = te.accuracy;
    EvalRow tr{ctx.step, ctx.epoch(), "train", NAN, NAN, t};
    if (ctx.job.training.train_metrics) {
      EvalResult r = evaluator_->run(*data_.train, ctx.vars, 10000);
      tr.loss = r.loss, tr.accuracy = r.accuracy;
      ctx.run->append_metrics(tr);
    }
    ctx.run->append_metrics(test);
    ctx.progress.eval(tr, test);
    ctx.summary.accuracy = te.accuracy;
    ctx.summary.loss = te.loss;
  }
  void on_end(LoopContext& ctx) override {
    if (ctx.chief()) ctx.progress.summary(ctx.summary);
    const Distribution& dist = ctx.distribution;
    if (dist.workers > 1)  // each worker's own rate, for whoever adds them up (bench/ps_bench)
      ctx.progress.message(
          fmt::format("worker {} throughput: {:.0f} images/s", dist.worker_index, ctx.summary.images_per_s));
  }

 private:
  const Datasets& data_;
  std::optional<Evaluator> evaluator_;
};

EngineOptions engine_options(const config::ThreadsConfig& t) { return EngineOptions{t.intra, t.inter}; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

RunSummary train(const TrainerOptions& options) {
  const config::JobConfig& job = options.job;
  const config::TrainingConfig& tc = job.training;
  TRIB_CHECK(!job.data.stream(), InvalidArgument,
             "config {}: a stream job (data.format: kafka) is trained by train_stream::train", job.source_file);
  Datasets data = options.datasets ? *options.datasets : load_datasets(job.data, job.model);
  LoopPlan plan;
  std::unique_ptr<BatchSource> source;
  const Distribution& dist = options.distribution;
  if (job.data.assignment == "dynamic" && dist.claim_data) {
    // Parameter server 0 hands out the data in chunks (chunked_batch_source.h): the job reads
    // its epochs between the workers present, and ends when they are read.
    const std::int64_t per_epoch = whole_batches(data.train->size(), job);
    const int workers = std::max(1, dist.workers);
    const std::int64_t total = tc.steps > 0 ? tc.steps * workers
                                            : static_cast<std::int64_t>(std::ceil(tc.epochs * per_epoch));
    ChunkedSourceOptions co{tc.batch, job.data.shuffle, tc.seed, kChunkBatches, total, dist.claim_data};
    source = std::make_unique<ChunkedBatchSource>(data.train, co);
    plan.steps_per_epoch = std::max<std::int64_t>(1, per_epoch / workers);
    plan.total_steps = std::max<std::int64_t>(1, total / workers);
    plan.source_ends_run = true;
  } else {
    auto shards = std::make_unique<DatasetBatchSource>(data.train, job, dist, options.log);
    plan.steps_per_epoch = shards->steps_per_epoch();
    plan.total_steps = tc.steps > 0 ? tc.steps : static_cast<std::int64_t>(std::ceil(tc.epochs * plan.steps_per_epoch));
    source = std::move(shards);
  }
  plan.report_every = tc.eval_every > 0 ? tc.eval_every : plan.steps_per_epoch;
  plan.checkpoint_every = tc.checkpoint_every > 0 ? tc.checkpoint_every : plan.report_every;
  EvaluationHooks evaluations(data);
  ObservedHooks hooks(evaluations, options.metrics);
  return run_training_loop(options, plan, *source, hooks);
}

void check_resumable(const fs::path& run_dir) {
  std::FILE* quiet = std::fopen("/dev/null", "w");
  try {
    find_resume_checkpoint(run_dir, quiet);
  } catch (...) {
    std::fclose(quiet);
    throw;
  }
  std::fclose(quiet);
}

RunSummary evaluate_checkpoint(const EvalOptions& options) {
  const config::JobConfig& job = options.job;
  TRIB_CHECK(!job.data.stream(), InvalidArgument,
             "a stream job has no test split: its metrics.jsonl holds the prequential evaluation");
  Datasets data = load_datasets(job.data, job.model);
  EngineContext engine(engine_options(job.threads));
  ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
  Checkpoint ckpt = load_checkpoint_for_eval(options.checkpoint, options.log);
  VariableStore vars;
  restore_variables(ckpt, ModelGraph(spec, 1, false, engine).parameters(), vars);
  Evaluator evaluator(spec, job.training.eval_batch, engine);
  auto start = Clock::now();
  std::vector<float> logits;
  auto keep_logits = [&](const Tensor& t) {
    const float* p = t.data<float>();
    logits.insert(logits.end(), p, p + t.numel());
  };
  EvalResult r = evaluator.run(*data.test, vars, options.limit,
                               options.outputs.empty() ? std::function<void(const Tensor&)>{} : keep_logits);
  if (!options.outputs.empty()) write_npy_f32(options.outputs, logits, {r.examples, job.model.classes});
  RunSummary s;
  s.accuracy = r.accuracy;
  s.loss = r.loss;
  s.wall_s = seconds_since(start);
  s.steps = ckpt.step();
  s.images_per_s = s.wall_s > 0 ? r.examples / s.wall_s : 0;
  fmt::print(options.log, "checkpoint {} (step {}): test accuracy {:.4f}, test loss {:.4f} on {} examples\n",
             ckpt.dir().string(), ckpt.step(), r.accuracy, r.loss, r.examples);
  return s;
}

}  // namespace trib::train
