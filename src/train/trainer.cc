#include "trib/train/trainer.h"

#include <chrono>
#include <cmath>

#include "train/job_schedule.h"
#include "train/resume_position.h"
#include "train/stream_training.h"
#include "train/training_state.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/checkpoint/checkpoint.h"
#include "trib/data/pipeline.h"
#include "trib/engine/context.h"
#include "trib/train/datasets.h"
#include "trib/train/evaluator.h"
#include "trib/train/run_directory.h"
#include "trib/train/update_strategy.h"

namespace trib::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

EngineOptions engine_options(const config::ThreadsConfig& t) {
  return EngineOptions{t.intra, t.inter};
}

}  // namespace

RunSummary train(const TrainerOptions& options) {
  if (options.job.data.stream()) return train_stream(options);
  const config::JobConfig& job = options.job;
  const config::TrainingConfig& tc = job.training;
  const Distribution& dist = options.distribution;
  const bool chief = dist.chief();

  // Everything that can be wrong with the input is checked before the run directory is touched.
  Datasets data = load_datasets(job.data, job.model);
  EngineContext engine(engine_options(job.threads));
  ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, tc.seed};
  ModelGraph graph(spec, tc.batch, true, engine);
  // Sharded workers walk equal parts, so that synchronous workers take the same number of steps.
  const std::int64_t shard_examples = data.train->size() / dist.workers;
  const std::int64_t steps_per_epoch = shard_examples / tc.batch;
  TRIB_CHECK(steps_per_epoch > 0, InvalidArgument,
             "training.batch {} is larger than a worker's share of the training set ({} examples)", tc.batch,
             shard_examples);
  const std::int64_t total_steps =
      tc.steps > 0 ? tc.steps : static_cast<std::int64_t>(std::ceil(tc.epochs * steps_per_epoch));
  std::optional<ValidCheckpoint> resumed;
  if (options.resume && chief) resumed = find_resume_checkpoint(options.output, options.log);
  const std::optional<data::DataPosition> data_start =
      resume_data_position(dist, options.resume, resumed ? &*resumed : nullptr, options.log);

  std::optional<RunDirectory> run;
  if (chief) {
    run.emplace(options.output, options.resume);
    run->write_config(job.resolved_yaml);
  }
  Progress progress(options.log, options.interactive, total_steps);
  if (chief) progress.message(fmt::format("run directory: {}", run->path().string()));

  std::vector<std::string> trainable;
  for (const nn::Parameter& p : graph.trainable_parameters()) trainable.push_back(p.name);
  std::shared_ptr<const Optimizer> optimizer = make_optimizer(job.optimizer);
  std::shared_ptr<const Schedule> schedule = make_job_schedule(job, dist.workers, total_steps);
  std::unique_ptr<UpdateStrategy> update =
      dist.make_update ? dist.make_update(trainable, optimizer, schedule)
                       : std::make_unique<LocalUpdate>(LocalUpdateOptions{trainable, optimizer, schedule, tc.clip_norm});

  VariableStore vars;
  initialize_parameters(graph.parameters(), tc.seed, vars);
  data::Pipeline pipeline = data::Pipeline::from(data.train)
                                .shuffle(job.data.shuffle ? tc.seed : 0)
                                .shard(dist.worker_index, dist.workers, /*equal_shards=*/true)
                                .batch(tc.batch, /*drop_last=*/true)
                                .prefetch(job.data.prefetch)
                                .build();
  std::int64_t step = update->start(vars, resumed ? &resumed->checkpoint : nullptr);
  if (data_start) pipeline.seek(*data_start);
  if (resumed) {
    progress.message(fmt::format("resumed from {} at step {}", resumed->checkpoint.dir().string(), step));
  }

  Evaluator evaluator(spec, tc.eval_batch, engine);
  const std::int64_t eval_every = tc.eval_every > 0 ? tc.eval_every : steps_per_epoch;
  const std::int64_t checkpoint_every = tc.checkpoint_every > 0 ? tc.checkpoint_every : eval_every;
  const auto start = Clock::now();
  std::int64_t images = 0;
  RunSummary summary;

  auto evaluate = [&] {
    double epoch = double(step) / steps_per_epoch;
    double t = seconds_since(start);
    EvalRow test{step, epoch, "test", 0, 0, t};
    EvalResult te = evaluator.run(*data.test, vars);
    test.loss = te.loss, test.accuracy = te.accuracy;
    EvalRow tr{step, epoch, "train", NAN, NAN, t};
    if (tc.train_metrics) {
      EvalResult r = evaluator.run(*data.train, vars, 10000);
      tr.loss = r.loss, tr.accuracy = r.accuracy;
      run->append_metrics(tr);
    }
    run->append_metrics(test);
    progress.eval(tr, test);
    summary.accuracy = te.accuracy;
    summary.loss = te.loss;
  };
  auto checkpoint = [&] {
    CheckpointWriter w(run->checkpoints(), step);
    update->save(w, vars);
    w.set_epoch(step / steps_per_epoch);
    // The chief's; the other workers' follow from it (train/resume_position.h).
    w.set_data_position(data_position_to_json(pipeline.position()));
    w.publish();
    keep_last(run->checkpoints(), static_cast<std::size_t>(tc.keep_checkpoints));
  };

  while (step < total_steps) {
    std::optional<data::Batch> batch = pipeline.next();
    if (!batch) continue;  // the end of an epoch; the next call starts the next one
    Tensor x = as_model_input(batch->features(), spec.input);
    UpdateStrategy* u = update.get();
    StepResult r = graph.run(x, batch->labels(), vars, static_cast<std::uint64_t>(step),
                             [u](std::size_t i, const GradTensor& g) { u->on_gradient_ready(i, g); });
    if (update->apply(step, r.grads, vars)) {
      graph.apply_state_updates(vars);
      ++step;
      if (options.on_step) options.on_step(step, r.loss);
    } else {
      progress.message(fmt::format("step {}: non-finite gradient, step skipped", step));
    }
    images += batch->rows();
    progress.step(step, double(step) / steps_per_epoch, r.loss, batch->rows());
    bool last = step == total_steps;
    if (chief && (step % eval_every == 0 || last)) evaluate();
    if (chief && (step % checkpoint_every == 0 || last)) checkpoint();
  }
  update->finish();
  summary.wall_s = seconds_since(start);
  summary.steps = step;
  summary.epochs = double(step) / steps_per_epoch;
  summary.images_per_s = summary.wall_s > 0 ? images / summary.wall_s : 0;
  if (std::string report = update->report(); !report.empty()) progress.message(report);
  if (chief) progress.summary(summary);
  if (dist.workers > 1)  // each worker's own rate, for whoever adds them up (bench/ps_bench)
    progress.message(fmt::format("worker {} throughput: {:.0f} images/s", dist.worker_index, summary.images_per_s));
  return summary;
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
  EvalResult r = evaluator.run(*data.test, vars);
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
