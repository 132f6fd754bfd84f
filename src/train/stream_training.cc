#include "train/stream_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include <unistd.h>

#include "train/job_schedule.h"
#include "train/stream_sync.h"
#include "train/training_state.h"
#include "trib/data/pipeline.h"
#include "trib/engine/context.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/stream/kafka_source.h"
#include "trib/stream/prequential_metrics.h"
#include "trib/stream/stream_counts.h"
#include "trib/stream/stream_position.h"
#include "stream/metrics_relay.h"
#include "trib/train/evaluator.h"
#include "trib/train/run_directory.h"

namespace trib::train {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

stream::KafkaSourceOptions source_options(const config::JobConfig& job, const std::string& run_id) {
  const config::KafkaDataConfig& k = job.data.kafka;
  const config::SchemaDataConfig& s = job.data.schema;
  stream::KafkaSourceOptions o;
  o.kafka.bootstrap_servers = k.bootstrap_servers;
  o.kafka.properties = k.properties;
  o.kafka.connect_timeout = std::chrono::seconds(k.connect_timeout_s);
  o.topic = k.topic;
  o.group_id = k.group_id.empty() ? "trib-" + job.name : k.group_id;
  o.schema.format = stream::parse_record_format(s.format);
  o.schema.features = s.features;
  o.schema.label = s.label;
  o.schema.id_field = s.id_field;
  o.schema.csv_columns = s.csv_columns;
  o.schema.num_classes = static_cast<int>(job.model.classes);
  o.run_id = run_id;
  o.reports_applied = true;  // the loop calls kafka->applied(batch) after each update
  if (k.idle_timeout_s > 0) o.idle_end = std::chrono::milliseconds(static_cast<std::int64_t>(k.idle_timeout_s * 1000));
  return o;
}

// sign(x) * log(1 + |x|) on the schema's log1p columns: amounts and distances span decades.
data::BatchTransform log1p_columns(const config::SchemaDataConfig& s) {
  std::vector<std::size_t> cols;
  for (const std::string& name : s.log1p)
    cols.push_back(static_cast<std::size_t>(std::find(s.features.begin(), s.features.end(), name) - s.features.begin()));
  const std::size_t width = s.features.size();
  return [cols, width](data::Batch b) {
    Tensor f = b.features().clone();
    float* x = f.data<float>();
    for (std::int64_t r = 0; r < f.shape()[0]; ++r)
      for (std::size_t c : cols) {
        float& v = x[static_cast<std::size_t>(r) * width + c];
        v = std::copysign(std::log1p(std::fabs(v)), v);
      }
    b.set(data::Batch::kFeatures, std::move(f));
    return b;
  };
}

// P(class 1) from two-class logits: the prequential score.
std::vector<float> positive_scores(const Tensor& logits) {
  const std::int64_t n = logits.shape()[0], c = logits.shape()[1];
  const float* l = logits.data<float>();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + std::exp(l[i * c] - l[i * c + 1]));
  return out;
}

// The debug record of applied event ids (data.kafka.record_ids), one line per step, written
// whole and flushed so that a killed run leaves complete lines.
class IdRecorder {
 public:
  IdRecorder(const fs::path& run_dir, int worker, bool enabled) {
    if (!enabled) return;
    fs::create_directories(run_dir / "stream_ids");
    out_.open(run_dir / "stream_ids" / fmt::format("worker-{}.txt", worker), std::ios::app);
    out_ << "run " << ::getpid() << std::endl;
  }
  void step(std::int64_t step, const data::Batch& batch) {
    if (!out_.is_open()) return;
    const Tensor& ids = batch.get(stream::KafkaSource::kEventId);
    std::string line = std::to_string(step);
    for (std::int64_t i = 0; i < ids.numel(); ++i) line += " " + std::to_string(ids.data<std::int64_t>()[i]);
    out_ << line << std::endl;
  }

 private:
  std::ofstream out_;
};

}  // namespace

RunSummary train_stream(const TrainerOptions& options) {
  const config::JobConfig& job = options.job;
  const config::TrainingConfig& tc = job.training;
  const config::KafkaDataConfig& kc = job.data.kafka;
  const Distribution& dist = options.distribution;
  const bool chief = dist.chief();
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
  const std::int64_t total_steps = tc.steps > 0 ? tc.steps : std::numeric_limits<std::int64_t>::max();
  std::shared_ptr<const Schedule> schedule = make_job_schedule(job, dist.workers, tc.steps);

  EngineContext engine(EngineOptions{job.threads.intra, job.threads.inter});
  ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, tc.seed};
  ModelGraph graph(spec, tc.batch, true, engine);
  std::optional<ValidCheckpoint> resumed;
  if (options.resume && chief) resumed = find_resume_checkpoint(options.output, options.log);
  if (!options.resume && chief) RunDirectory::check_new(options.output);

  // Where to start: the checkpoint's applied progress per partition (the chief's, handed to
  // every worker, whichever partitions it gets), never the group's commits (docs/streaming.md).
  StreamSync sync(dist);
  StreamStart start;
  if (chief) {
    start.run_id = fmt::format("{}-{}", wall_ms(), std::random_device{}());
    if (resumed) {
      const Manifest& m = resumed->checkpoint.manifest();
      if (m.sections.count("kafka")) start.offsets = data_position_from_json(m.sections.at("kafka"));
    }
  }
  start = sync.start(start);

  // Reaching the broker and the topic is checked before the run directory is touched.
  auto source = std::make_unique<stream::KafkaSource>(source_options(job, start.run_id));
  stream::KafkaSource* kafka = source.get();
  if (!start.offsets.fields().empty()) kafka->seek(start.offsets);
  sync.await_assignment([kafka] { return !kafka->assignment().empty(); },
                        [kafka] { kafka->service(std::chrono::milliseconds(10)); }, std::chrono::seconds(60),
                        kc.topic);
  data::PipelineBuilder builder = data::Pipeline::from(std::move(source));
  if (job.data.shuffle && kc.shuffle_buffer > 0) builder.shuffle_buffer(kc.shuffle_buffer, tc.seed + dist.worker_index);
  if (!job.data.schema.log1p.empty()) builder.map(log1p_columns(job.data.schema));
  // Not drop_last: the last batch of an idle stream is trained, short (graph_for below).
  data::Pipeline pipeline = builder.batch(tc.batch, /*drop_last=*/false).prefetch(job.data.prefetch).build();

  std::optional<RunDirectory> run;
  if (chief) {
    run.emplace(options.output, options.resume);
    run->write_config(job.resolved_yaml);
  }
  Progress progress(options.log, options.interactive, tc.steps > 0 ? tc.steps : 0);
  if (chief) progress.message(fmt::format("run directory: {}", run->path().string()));

  std::vector<std::string> trainable;
  for (const nn::Parameter& p : graph.trainable_parameters()) trainable.push_back(p.name);
  std::shared_ptr<const Optimizer> optimizer = make_optimizer(job.optimizer);
  std::unique_ptr<UpdateStrategy> update =
      dist.make_update ? dist.make_update(trainable, optimizer, schedule)
                       : std::make_unique<LocalUpdate>(LocalUpdateOptions{trainable, optimizer, schedule, tc.clip_norm});
  VariableStore vars;
  initialize_parameters(graph.parameters(), tc.seed, vars);
  std::int64_t step = update->start(vars, resumed ? &resumed->checkpoint : nullptr);
  if (resumed) progress.message(fmt::format("resumed from {} at step {}", resumed->checkpoint.dir().string(), step));
  if (!start.offsets.fields().empty()) progress.message(fmt::format("Kafka offsets restored: {}", start.offsets.to_string()));

  const std::int64_t report_every = tc.eval_every > 0 ? tc.eval_every : 100;
  const std::int64_t checkpoint_every = tc.checkpoint_every > 0 ? tc.checkpoint_every : report_every;
  stream::PrequentialMetrics metrics;
  // Counts continue from the checkpoint's; the chief takes over those of workers the resumed
  // job no longer has. Freshness leaves out the time the job was down.
  if (!start.offsets.fields().empty()) {
    for (const auto& [w, c] : stream::counts_in(start.offsets))
      if (w == dist.worker_index || (chief && w >= dist.workers)) {
        stream::StreamCounts base = metrics.counts();
        base += c;
        metrics.restore_counts(base);
      }
    metrics.set_freshness_floor(wall_ms());
  }
  stream::MetricsRelay relay(dist.worker_index, dist.workers, dist.publish, dist.lookup);
  // Graphs have a fixed batch size: a short last batch gets its own, built once per size.
  std::map<std::int64_t, std::unique_ptr<ModelGraph>> short_graphs;
  auto graph_for = [&](std::int64_t rows) -> ModelGraph& {
    if (rows == tc.batch) return graph;
    std::unique_ptr<ModelGraph>& g = short_graphs[rows];
    if (!g) g = std::make_unique<ModelGraph>(spec, rows, true, engine);
    return *g;
  };
  // This worker's claim for a checkpoint: applied progress per partition, and its counts.
  auto claim = [&] {
    metrics.set_dead_lettered(kafka->stats().poison);
    data::DataPosition own = kafka->applied_position();
    stream::save_counts(own, dist.worker_index, metrics.counts());
    return own;
  };
  IdRecorder ids(options.output, dist.worker_index, kc.record_ids);
  const auto started = Clock::now();
  std::int64_t examples = 0;
  RunSummary summary;

  auto report = [&] {
    metrics.set_consumer_lag(kafka->lag());
    metrics.set_dead_lettered(kafka->stats().poison);
    nlohmann::json j = metrics.to_json();
    j["step"] = step, j["split"] = "stream", j["worker"] = dist.worker_index;
    j["time_s"] = std::chrono::duration<double>(Clock::now() - started).count();
    j["poison"] = kafka->stats().poison;
    if (run) {
      run->append_metrics_line(j.dump());
      for (const std::string& row : relay.receive()) run->append_metrics_line(row);
    } else {
      relay.send(j.dump());
    }
    auto num = [](const nlohmann::json& v, const char* f) { return v.is_null() ? std::string("-") : fmt::format(fmt::runtime(f), v.get<double>()); };
    progress.message(fmt::format("stream step {:>6}  examples {:>8}  acc {:>6}  auc {:>6}  events/s {:>7}  "
                                 "fresh p50/p99 {}/{} ms  lag {}",
                                 step, j["examples"].get<std::int64_t>(), num(j["prequential_accuracy"], "{:.4f}"),
                                 num(j["prequential_auc"], "{:.4f}"), num(j["events_per_s"], "{:.0f}"),
                                 num(j["freshness_p50_ms"], "{:.0f}"), num(j["freshness_p99_ms"], "{:.0f}"),
                                 j["consumer_lag_total"].dump()));
    if (auto a = metrics.accuracy()) summary.accuracy = *a;
  };
  // Writes a checkpoint holding `offsets`; commits to Kafka only once it is published.
  auto checkpoint = [&](const data::DataPosition& offsets) {
    CheckpointWriter w(run->checkpoints(), step);
    update->save(w, vars);
    w.set_section("kafka", data_position_to_json(offsets));
    w.publish();
    keep_last(run->checkpoints(), static_cast<std::size_t>(tc.keep_checkpoints));
    if (std::string e = kafka->commit(offsets); !e.empty()) progress.message("Kafka commit failed (the checkpoint holds the offsets): " + e);
  };

  while (step < total_steps) {
    std::optional<data::Batch> batch = pipeline.next();
    if (!batch) break;  // idle_timeout_s without a record: the producer stopped
    Tensor x = as_model_input(batch->features(), spec.input);
    UpdateStrategy* u = update.get();
    ModelGraph& g = graph_for(batch->rows());
    StepResult r = g.run(x, batch->labels(), vars, static_cast<std::uint64_t>(step),
                         [u](std::size_t i, const GradTensor& grad) { u->on_gradient_ready(i, grad); });
    if (!update->apply(step, r.grads, vars)) {
      progress.message(fmt::format("step {}: non-finite gradient, step skipped", step));
      kafka->applied(*batch);  // consumed on purpose: not read again after a restore
      metrics.record_skipped(batch->rows());
      continue;
    }
    kafka->applied(*batch);
    // The logits came from the forward pass before this update: they are the batch's
    // prequential scores; the update that used the batch happened now.
    metrics.record(*batch, positive_scores(r.logits), wall_ms());
    g.apply_state_updates(vars);
    ++step;
    ids.step(step, *batch);
    if (options.on_step) options.on_step(step, r.loss);
    examples += batch->rows();
    progress.step(step, 0, r.loss, batch->rows());
    if (step % report_every == 0) report();
    if (step % checkpoint_every == 0 && step < total_steps) {
      data::DataPosition own = claim();
      if (chief) {
        checkpoint(sync.gather(step, own));
        sync.published(step);
      } else if (sync.offer(step, own)) {
        kafka->commit(own);
      }
    }
  }
  // Done stepping, before waiting for the others below: a parameter server then stops
  // waiting for this worker, so that a worker with events left can finish its steps.
  update->finish();
  // The last checkpoint: every worker has stopped, so the final offsets are exact.
  // Every worker's last row, then its claim: the chief collects the rows after the claims.
  if (step == 0 || step % report_every != 0) report();  // else the loop just reported this step
  data::DataPosition own = claim();
  if (chief) {
    data::DataPosition merged = sync.gather_final(own);
    checkpoint(merged);
    sync.published_final();
    for (const std::string& row : relay.receive()) run->append_metrics_line(row);
    nlohmann::json totals = stream::summary_json(stream::counts_in(merged));
    run->append_metrics_line(totals.dump());
    progress.message(fmt::format("stream totals: consumed {} trained {} skipped {} dead-lettered {}",
                                 totals["consumed"].get<std::int64_t>(), totals["trained"].get<std::int64_t>(),
                                 totals["skipped"].get<std::int64_t>(), totals["dead_lettered"].get<std::int64_t>()));
  } else if (sync.final_offsets(own)) {
    kafka->commit(own);
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  summary.steps = step;
  summary.images_per_s = summary.wall_s > 0 ? examples / summary.wall_s : 0;
  if (std::string rep = update->report(); !rep.empty()) progress.message(rep);
  if (auto a = metrics.auc()) progress.message(fmt::format("worker {} final prequential AUC {:.4f}", dist.worker_index, *a));
  progress.message(fmt::format("worker {} trained on {} events ({:.0f} events/s)", dist.worker_index, examples,
                               summary.images_per_s));
  return summary;
}

}  // namespace trib::train
