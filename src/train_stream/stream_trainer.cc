#include "trib/train_stream/stream_trainer.h"

#include "train_stream/kafka_batch_source.h"
#include "train_stream/stream_hooks.h"
#include "trib/core/error.h"
#include "train/observed_hooks.h"
#include "train/training_loop.h"

namespace trib::train_stream {

bool ps_chief_rejoins(const config::JobConfig& job) {
  return job.data.stream() && job.strategy.name == config::StrategyName::ps && job_assigns_partitions(job);
}

bool allreduce_chief_rejoins(const config::JobConfig& job) {
  return job.data.stream() && job.strategy.name == config::StrategyName::allreduce && job_assigns_partitions(job) &&
         job.cluster.stream_rejoin;
}

bool chief_rejoins(const config::JobConfig& job) { return ps_chief_rejoins(job) || allreduce_chief_rejoins(job); }

train::RunSummary train(const train::TrainerOptions& options) {
  const config::JobConfig& job = options.job;
  const config::TrainingConfig& tc = job.training;
  const config::KafkaDataConfig& kc = job.data.kafka;
  TRIB_CHECK(job.data.stream(), InvalidArgument,
             "config {}: data.format '{}' is not a stream: train it with train::train", job.source_file,
             job.data.format);
  TRIB_CHECK(!kc.bootstrap_servers.empty(), InvalidArgument,
             "data.kafka.bootstrap_servers is empty: `trib train` starts a built-in broker for such a job, but "
             "this process was given no broker address");
  TRIB_CHECK(tc.steps > 0 || kc.idle_timeout_s > 0, InvalidArgument,
             "a stream has no epochs: set training.steps, or data.kafka.idle_timeout_s to end when events stop");
  TRIB_CHECK(job.model.classes == 2, InvalidArgument,
             "prequential AUC needs two classes; model.classes is {}", job.model.classes);
  TRIB_CHECK(Shape(job.model.input).numel() == static_cast<std::int64_t>(job.data.schema.features.size()),
             ShapeError, "model.input {} needs {} values but data.schema.features lists {}",
             Shape(job.model.input).to_string(), Shape(job.model.input).numel(), job.data.schema.features.size());
  train::LoopPlan plan;
  plan.total_steps = tc.steps;  // 0: until the stream is idle
  plan.report_every = tc.eval_every > 0 ? tc.eval_every : 100;
  plan.checkpoint_every = tc.checkpoint_every > 0 ? tc.checkpoint_every : plan.report_every;
  KafkaBatchSource source(job, options.distribution);
  StreamHooks stream_hooks(source, options.output, kc.record_ids, plan.checkpoint_every, options.metrics);
  train::ObservedHooks hooks(stream_hooks, options.metrics);
  return train::run_training_loop(options, plan, source, hooks);
}

}  // namespace trib::train_stream
