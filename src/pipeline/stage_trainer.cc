#include "trib/pipeline/stage_trainer.h"

#include <sys/resource.h>

#include <cmath>
#include <sstream>
#include <thread>

#include "config/derived_settings.h"
#include "pipeline/shard_info_json.h"
#include "pipeline/stage_recovery.h"
#include "train/training_state.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/engine/context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/pipeline_stage.h"
#include "trib/pipeline/planner.h"
#include "trib/train/dataset_batch_source.h"
#include "trib/train/datasets.h"
#include "trib/train/evaluator.h"
#include "trib/update/local_update.h"

namespace trib::pipeline {

namespace {

constexpr double kMb = 1024.0 * 1024.0;

// Waits for `key` in the store until `timeout`, naming what it waits for.
std::string await(const StageTrainerOptions& o, const std::string& key, const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + o.timeout;
  for (;;) {
    if (std::optional<std::string> v = o.lookup(key)) return *v;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout, "pipeline stage {}: {} did not come within {} s",
               o.stage, what, std::chrono::duration_cast<std::chrono::seconds>(o.timeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

// This stage's variables and optimizer state from a checkpoint (of one process or of a
// pipeline: both hold every variable by name). Returns its step.
std::int64_t restore(const Checkpoint& ckpt, const StageModel& sm, VariableStore& vars, update::UpdateStrategy& update) {
  std::map<std::string, Tensor> slots;
  for (const nn::Parameter& p : sm.parameters()) {
    TRIB_CHECK(ckpt.contains(p.name), NotFound, "checkpoint {} has no tensor '{}' that pipeline stage needs",
               ckpt.dir().string(), p.name);
    const Tensor& t = ckpt.tensor(p.name);
    TRIB_CHECK(t.shape() == p.shape, ShapeError, "checkpoint {}: tensor '{}' is {} but the model needs f32{}",
               ckpt.dir().string(), p.name, t.spec_string(), p.shape.to_string());
    vars.set(p.name, t.clone());
    for (const auto& [name, s] : ckpt.tensors_with_prefix("slot/" + p.name + "/")) slots[name] = s.clone();
  }
  update.restore_state(slots);
  return ckpt.step();
}

class StageRun {
 public:
  explicit StageRun(const StageTrainerOptions& o) : o_(o), job_(o.job), s_(o.job.strategy) {}

  StageSummary run();

 private:
  struct RunLength {
    std::int64_t total = 0, report_every = 0, checkpoint_every = 0;
  };
  Partition agree_partition();
  RunLength start_data(const std::optional<ValidCheckpoint>& resumed);
  std::unique_ptr<update::UpdateStrategy> make_update(const config::JobConfig& run_job) const;
  // A fresh stage, its variables initialised and, from `ckpt`, restored; returns the step it starts after.
  std::int64_t begin(const Checkpoint* ckpt);
  // Round round_: links anew, every stage from the checkpoint the chief names, stage 0's data
  // rewound to it (stage_recovery.h). Returns the step the round starts after.
  std::int64_t rejoin();
  // A neighbour was lost (`lost`): drop the links and the step in flight, wait for the
  // relaunched stage's round, and rejoin it.
  std::int64_t recover(const std::string& lost);
  // Only a pipeline without replicas recovers in place (the replicas' allreduce groups do not re-form).
  bool recovers_in_place() const { return s_.replicas == 1; }
  void connect();
  void evaluate(std::int64_t round);
  // This stage's shard of step `step`; the chief then publishes the manifest. At the run's
  // `end`, every stage of replica 0 waits for that manifest before it leaves.
  void checkpoint(std::int64_t step, bool end);
  // Waits for `key` in the store up to the links' timeout while watching the neighbours: a
  // stage lost meanwhile fails the wait at once (Unavailable), as a wait on the links does.
  std::string await_linked(const std::string& key, const std::string& what);
  bool chief() const { return o_.stage == 0 && o_.replica == 0; }
  bool last() const { return o_.stage + 1 == s_.stages; }
  template <typename... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    fmt::print(o_.log, "pipeline stage {}{}: {}\n", o_.stage, o_.replica > 0 ? fmt::format(" (replica {})", o_.replica) : "",
               fmt::format(f, std::forward<Args>(args)...));
    std::fflush(o_.log);
  }

  const StageTrainerOptions& o_;
  const config::JobConfig& job_;
  const config::StrategyConfig& s_;
  EngineContext engine_{EngineOptions{o_.job.threads.intra, o_.job.threads.inter}};
  std::unique_ptr<StageLinks> links_;
  std::unique_ptr<StageModel> model_;
  std::unique_ptr<PipelineStage> stage_;
  VariableStore vars_;
  train::Datasets data_;  // stage 0 only
  train::Distribution dist_;
  std::unique_ptr<train::DatasetBatchSource> source_;
  std::int64_t eval_batches_ = 0;
  config::JobConfig run_job_;  // the job as the run takes it (its schedule's length known)
  std::int64_t round_ = 0;     // stage_recovery.h
  StageSummary summary_;
};

Partition StageRun::agree_partition() {
  // `stage:` on the layers (written by hand, or pinned by the launcher that planned): every
  // process reads the same partition from the job.
  std::vector<int> manual;
  for (const config::LayerConfig& l : job_.model.layers) manual.push_back(l.stage);
  if (has_manual_stages(manual)) return manual_partition(manual, s_.stages);
  // A relaunched chief takes the partition the running stages have (a new calibration
  // could cut elsewhere).
  if (chief() && !o_.lookup(partition_key())) {
    Plan plan = plan_for_job(job_, [this](const std::string& table) {
      fmt::print(o_.log, "{}", table);
      std::fflush(o_.log);
    });
    o_.publish(partition_key(), plan.partition.to_string());
    return plan.partition;
  }
  return Partition::parse(await(o_, partition_key(), "the partition (stage 0 of replica 0 plans it)"));
}

void StageRun::connect() {
  links_ = std::make_unique<StageLinks>(StageLinksOptions{o_.transport, o_.stage, s_.stages, o_.replica, o_.timeout});
  const std::string bound = links_->listen(o_.listen);
  o_.publish(address_key(o_.replica, o_.stage, round_),
             o_.stage == 0 ? "-" : (o_.published ? o_.published(bound) : bound));
  std::string next;
  if (!last())
    next = await(o_, address_key(o_.replica, o_.stage + 1, round_), fmt::format("stage {}'s address", o_.stage + 1));
  links_->connect(next);
}

void StageRun::evaluate(std::int64_t round) {
  double loss = 0;
  std::int64_t correct = 0, examples = 0;
  for (std::int64_t i = 0; i < eval_batches_; ++i) {
    Tensor x, y;
    if (o_.stage == 0) {
      const std::int64_t begin = i * job_.training.eval_batch;
      const std::int64_t end = std::min(data_.test->size(), begin + job_.training.eval_batch);
      std::vector<std::int64_t> idx;
      for (std::int64_t k = begin; k < end; ++k) idx.push_back(k);
      data::Batch b = data_.test->gather(idx);
      x = train::as_model_input(b.features(), Shape(job_.model.input));
      y = b.labels();
    } else {
      Envelope e = links_->receive(Kind::eval, round, static_cast<std::int32_t>(i));
      x = std::move(e.tensor);
      y = std::move(e.labels);
    }
    Tensor out = model_->infer(x, vars_);
    if (!last()) {
      links_->send({Kind::eval, round, static_cast<std::int32_t>(i), eval_batches_, y, out});
      continue;
    }
    // The mean cross-entropy of this batch, as the single-process evaluator computes it.
    const std::int64_t n = out.shape()[0], c = out.shape()[1];
    const float* z = out.data<float>();
    for (std::int64_t r = 0; r < n; ++r) {
      const float* row = z + r * c;
      float mx = row[0];
      for (std::int64_t k = 1; k < c; ++k) mx = std::max(mx, row[k]);
      double sum = 0;
      for (std::int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(row[k] - mx));
      loss += std::log(sum) + mx - row[y.data<std::int32_t>()[r]];
    }
    correct += train::count_correct(out, y);
    examples += n;
  }
  if (last() && examples > 0) {
    summary_.test_accuracy = static_cast<double>(correct) / static_cast<double>(examples);
    summary_.test_loss = loss / static_cast<double>(examples);
    say("step {}: test loss {:.4f}, test accuracy {:.4f} on {} examples", round, summary_.test_loss,
        summary_.test_accuracy, examples);
  }
}

std::string StageRun::await_linked(const std::string& key, const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + o_.timeout;
  for (;;) {
    if (std::optional<std::string> v = o_.lookup(key)) return *v;
    links_->check_neighbours();
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout, "pipeline stage {}: {} did not come within {} s",
               o_.stage, what, std::chrono::duration_cast<std::chrono::seconds>(o_.timeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void StageRun::checkpoint(std::int64_t step, bool end) {
  if (o_.replica != 0) return;  // the replicas hold the same values
  const std::filesystem::path root = o_.output / "checkpoints";
  const std::filesystem::path dir = checkpoint_dir(root, step);
  std::filesystem::create_directories(dir);
  TensorMap tensors;
  for (const nn::Parameter& p : model_->parameters()) tensors[p.name] = vars_.get(p.name);
  for (const auto& [name, t] : stage_->update().state()) tensors[name] = t;
  ShardInfo info = write_shard(dir, fmt::format("stage-{}", o_.stage), tensors);
  // Keyed by round too: a shard of this step written before a rollback is not this round's.
  auto key = [&](int stage) { return fmt::format("pipeline/ckpt/{}/{}/{}", round_, step, stage); };
  o_.publish(key(o_.stage), shard_info_to_json(info));
  const std::string manifest = fmt::format("pipeline/ckpt/{}/{}/manifest", round_, step);
  if (!chief()) {
    // The run's end: a stage that left now would close its links while the chief still
    // gathers the shards, and the chief, watching its neighbours, would take that for a
    // loss (and wait for a relaunch that never comes). Every stage stays until the manifest
    // is out; a stage lost meanwhile is still a loss.
    if (end) await_linked(manifest, fmt::format("the manifest of step {} (stage 0 writes it)", step));
    return;
  }
  CheckpointWriter w(root, step);
  for (int s = 0; s < s_.stages; ++s)
    // A stage lost before writing its shard: the chief's neighbour says so (its loss reaches
    // every stage), rather than this wait timing out.
    w.add_written_shard(
        shard_info_from_json(await_linked(key(s), fmt::format("stage {}'s checkpoint shard of step {}", s, step))));
  // Where stage 0's data stands after this step: a resumed run continues there.
  if (source_ && source_->position()) w.set_data_position(train::data_position_to_json(*source_->position()));
  w.publish();
  keep_last(root, static_cast<std::size_t>(job_.training.keep_checkpoints));  // as one process keeps them
  o_.publish(manifest, "1");
}

// Stage 0 reads the data and says how long the run is; the others learn it from the store.
StageRun::RunLength StageRun::start_data(const std::optional<ValidCheckpoint>& resumed) {
  dist_.worker_index = o_.replica;  // replicas share the data; the stages of one replica read it once
  dist_.workers = s_.replicas;
  dist_.publish = o_.publish;
  dist_.lookup = o_.lookup;
  RunLength n;
  if (o_.stage == 0) {
    data_ = train::load_datasets(job_.data, job_.model);
    source_ = std::make_unique<train::DatasetBatchSource>(data_.train, job_, dist_, o_.log);
    source_->start({o_.resume, resumed && chief() ? &resumed->checkpoint : nullptr});
    const std::int64_t per_epoch = source_->steps_per_epoch();
    n.total = job_.training.steps > 0 ? job_.training.steps
                                      : static_cast<std::int64_t>(std::ceil(job_.training.epochs * per_epoch));
    n.report_every = job_.training.eval_every > 0 ? job_.training.eval_every : per_epoch;
    n.checkpoint_every = job_.training.checkpoint_every > 0 ? job_.training.checkpoint_every : n.report_every;
    eval_batches_ = (data_.test->size() + job_.training.eval_batch - 1) / job_.training.eval_batch;
    o_.publish(fmt::format("pipeline/{}/run", o_.replica),
               fmt::format("{} {} {} {}", n.total, n.report_every, n.checkpoint_every, eval_batches_));
  } else {
    std::stringstream in(await(o_, fmt::format("pipeline/{}/run", o_.replica), "the run's length (from stage 0)"));
    in >> n.total >> n.report_every >> n.checkpoint_every >> eval_batches_;
  }
  return n;
}

// A LocalUpdate, or with replicas an AllreduceUpdate over this stage's copies.
std::unique_ptr<update::UpdateStrategy> StageRun::make_update(const config::JobConfig& run_job) const {
  if (s_.replicas > 1) {
    TRIB_CHECK(o_.replica_group != nullptr, InvalidArgument, "pipeline stage {}: replicas need a group", o_.stage);
    collectives::AllreduceUpdateOptions ao;
    ao.group = o_.replica_group;
    ao.parameters = model_->trainable_names();
    ao.optimizer = make_optimizer(job_.optimizer);
    ao.schedule = make_schedule(run_job.schedule);
    return std::make_unique<collectives::AllreduceUpdate>(std::move(ao));
  }
    return std::make_unique<update::LocalUpdate>(
        update::LocalUpdateOptions{model_->trainable_names(), make_optimizer(job_.optimizer), make_schedule(run_job.schedule)});
}

std::int64_t StageRun::begin(const Checkpoint* ckpt) {
  stage_ = std::make_unique<PipelineStage>(PipelineStageOptions{model_.get(), links_.get(), make_update(run_job_),
                                                              s_.schedule, o_.stage, s_.stages, s_.micro_batches});
  vars_ = VariableStore();
  model_->initialize(vars_);
  const std::int64_t step = ckpt ? restore(*ckpt, *model_, vars_, stage_->update()) : 0;
  stage_->update().start(vars_, nullptr);  // replicas: every copy takes replica 0's values
  return step;
}

std::int64_t StageRun::rejoin() {
  std::optional<Checkpoint> ckpt = rollback_checkpoint(o_, round_, o_.output / "checkpoints");
  if (o_.stage == 0) {  // the data from where the checkpoint left it
    source_ = std::make_unique<train::DatasetBatchSource>(data_.train, job_, dist_, o_.log);
    source_->start({ckpt.has_value(), ckpt ? &*ckpt : nullptr});
  }
  const std::int64_t step = begin(ckpt ? &*ckpt : nullptr);
  say("round {}: every stage goes on from {}", round_,
      ckpt ? fmt::format("the checkpoint of step {}", step) : std::string("the start (no checkpoint yet)"));
  return step;
}

std::int64_t StageRun::recover(const std::string& lost) {
  // `lost` names this stage already (the links' message).
  fmt::print(o_.log, "{}; dropping the step in flight and waiting for the stage to be relaunched\n", lost);
  std::fflush(o_.log);
  stage_.reset();  // its micro-batches in flight go with it
  links_.reset();  // closing them tells the other neighbour, so the loss reaches every stage
  round_ = await_next_round(o_, round_, lost);
  connect();
  return rejoin();
}

StageSummary StageRun::run() {
  const Partition partition = agree_partition();
  TRIB_CHECK(partition.stage_count() == s_.stages, InvalidArgument, "pipeline partition '{}' has {} stages, not {}",
             partition.to_string(), partition.stage_count(), s_.stages);
  const std::int64_t micro = job_.training.batch / s_.micro_batches;
  model_ = std::make_unique<StageModel>(
      StageModelOptions{config::build_model(job_.model), Shape(job_.model.input), job_.model.classes, job_.training.seed,
                        partition.stages[static_cast<std::size_t>(o_.stage)], last(), micro},
      engine_);
  // A relaunched stage (its process started before in this job) opens the next round, which
  // the survivors wait for; the run's start is round 0.
  const bool relaunched = mark_started(o_) && recovers_in_place();
  if (relaunched) round_ = open_next_round(o_);
  connect();
  std::optional<ValidCheckpoint> resumed;
  if (o_.resume && !relaunched) resumed.emplace(train::find_resume_checkpoint(o_.output, o_.log));
  const RunLength length = start_data(resumed);
  const std::int64_t total = length.total;
  // The schedule as the run takes it: its length known (a cosine's total steps), as one
  // process derives it (config/derived_settings.h).
  run_job_ = config::derive_settings(job_, {1, total});
  std::int64_t step = relaunched ? rejoin() : begin(resumed ? &resumed->checkpoint : nullptr);
  const StageRange mine = partition.stages[static_cast<std::size_t>(o_.stage)];
  say("layers {}-{}, {:.2f} MB of parameters, from step {} to {}{}", mine.begin, mine.end - 1,
      static_cast<double>(model_->parameter_bytes()) / kMb, step, total,
      relaunched ? fmt::format(" (relaunched: round {})", round_) : "");
  const auto t0 = std::chrono::steady_clock::now();
  double busy = 0, loss_sum = 0;
  std::int64_t loss_steps = 0;
  std::size_t peak = 0;
  while (step < total) {
    try {
      Tensor x, y;
      std::optional<data::Batch> batch;
      if (o_.stage == 0) {
        batch = source_->next();
        x = batch->features();
        y = batch->labels();
      }
      StepStats st = stage_->step(step + 1, total, x, y, vars_);
      ++step;
      if (source_) source_->applied(*batch);
      busy += st.busy_s;
      peak = std::max(peak, st.peak_activation_bytes);
      loss_sum += st.loss, ++loss_steps;
      const bool report = step % length.report_every == 0 || step == total;
      if (report && last() && o_.replica == 0) {
        say("step {}: train loss {:.4f}", step, loss_sum / static_cast<double>(loss_steps));
        loss_sum = 0, loss_steps = 0;
      }
      if (report && o_.replica == 0) evaluate(step);
      if (step % length.checkpoint_every == 0 || step == total) checkpoint(step, step == total);
    } catch (const Unavailable& e) {
      if (!recovers_in_place()) throw;
      step = recover(e.what());
      loss_sum = 0, loss_steps = 0;
    }
  }
  stage_->finish();
  summary_.steps = step;
  summary_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  summary_.busy_s = busy;
  summary_.peak_activation_mb = static_cast<double>(peak) / kMb;
  summary_.parameter_mb = static_cast<double>(model_->parameter_bytes()) / kMb;
  for (const auto& [name, t] : stage_->update().state()) summary_.optimizer_mb += static_cast<double>(t.nbytes()) / kMb;
  summary_.max_rss_mb = max_rss_mb();
  say("done: parameters {:.1f} MB, optimizer state {:.1f} MB, peak activations {:.2f} MB, peak process memory (RSS) "
      "{:.1f} MB, busy {:.0f}% of {:.1f} s",
      summary_.parameter_mb, summary_.optimizer_mb, summary_.peak_activation_mb, summary_.max_rss_mb,
      summary_.wall_s > 0 ? 100 * busy / summary_.wall_s : 0, summary_.wall_s);
  return summary_;
}

}  // namespace

std::string partition_key() { return "pipeline/partition"; }
std::string address_key(int replica, int stage, std::int64_t round) {
  return round == 0 ? fmt::format("pipeline/{}/{}/address", replica, stage)
                    : fmt::format("pipeline/{}/{}/address/{}", replica, stage, round);
}

StageSummary train_stage(const StageTrainerOptions& options) {
  TRIB_CHECK(options.job.strategy.name == config::StrategyName::pipeline, InvalidArgument,
             "train_stage needs strategy.name: pipeline");
  TRIB_CHECK(options.publish && options.lookup && options.transport, InvalidArgument,
             "pipeline stage {} needs a store and a transport", options.stage);
  StageRun run(options);
  return run.run();
}

}  // namespace trib::pipeline
