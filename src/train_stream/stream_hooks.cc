#include "train_stream/stream_hooks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <unistd.h>

#include <fmt/ranges.h>

#include "train/training_state.h"
#include "trib/stream/stream_counts.h"
#include "trib/stream/stream_position.h"
#include "trib/update/group_plan.h"

namespace trib::train_stream {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What this worker counts as its own of a position's counts: its own, and the chief also
// those of workers the job no longer has (a resume with fewer workers, or `members`, an
// allreduce group re-formed without a lost worker).
stream::StreamCounts own_counts(const train::Distribution& dist, const data::DataPosition& position,
                                const std::vector<int>& members) {
  stream::StreamCounts base;
  for (const auto& [w, c] : stream::counts_in(position))
    if (w == dist.worker_index ||
        (dist.chief() && (w >= dist.workers || std::find(members.begin(), members.end(), w) == members.end())))
      base += c;
  return base;
}

// Where an allreduce stream group announces the checkpoint it rolls back to, by generation.
std::string regroup_key(std::int64_t generation) { return fmt::format("stream/regroup/{}", generation); }

// The members of allreduce group `generation`, from its plan in the store (allreduce_membership.cc);
// none once a newer plan replaced it.
std::optional<std::vector<int>> members_of_plan(const train::Distribution& dist, std::int64_t generation) {
  const std::optional<update::GroupPlan> plan = update::parse_group_plan(dist.lookup(update::kGroupPlanKey).value_or(""));
  if (!plan || plan->generation != generation) return std::nullopt;
  return plan->workers;
}

// The same, failing when the plan was replaced.
std::vector<int> planned_members(const train::Distribution& dist, std::int64_t generation) {
  std::optional<std::vector<int>> members = members_of_plan(dist, generation);
  TRIB_CHECK(members.has_value(), Unavailable,
             "worker {}: the allreduce plan of generation {} was replaced before the group rolled back: {}",
             dist.worker_index, generation, dist.lookup(update::kGroupPlanKey).value_or("none"));
  return *members;
}

// Whether this worker states where allreduce group `generation` goes on (regroup_key): its lowest
// member, the chief or the lowest survivor while a lost chief is away (plans list workers in
// order). With the plan replaced meanwhile, the chief (which then fails reading it, as before).
bool states_regroup(const train::Distribution& dist, std::int64_t generation) {
  const std::optional<std::vector<int>> members = members_of_plan(dist, generation);
  return members ? !members->empty() && members->front() == dist.worker_index : dist.chief();
}

// The chief's note for allreduce group `generation` (regroup_key): where it goes on, and its members.
nlohmann::json await_regroup_note(const train::Distribution& dist, std::int64_t generation) {
  std::optional<std::string> text;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1); !(text = dist.lookup(regroup_key(generation)));) {
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "worker {}: the chief did not say where allreduce group {} goes on within 60 s", dist.worker_index,
               generation);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return nlohmann::json::parse(*text);
}

// The "kafka" section among a restore's checkpoint sections (JSON text; empty: none).
data::DataPosition kafka_section(const std::string& sections) {
  if (sections.empty()) return {};
  const nlohmann::json j = nlohmann::json::parse(sections);
  return j.contains("kafka") ? train::data_position_from_json(j["kafka"]) : data::DataPosition{};
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

void IdRecorder::rewind(std::int64_t step) {
  if (out_.is_open()) out_ << "rewind " << step << std::endl;
}

StreamHooks::StreamHooks(KafkaBatchSource& source, const std::filesystem::path& run_dir, bool record_ids,
                         std::int64_t checkpoint_every, monitor::MetricsRegistry* metrics)
    : source_(source), run_dir_(run_dir), record_ids_(record_ids), checkpoint_every_(checkpoint_every) {
  if (metrics != nullptr) gauges_.emplace(*metrics);
  // Each update's cursor carries this worker's counts with its batch trained: a worker
  // relaunched at a parameter server's cursor continues them (rejoin), and an allreduce group
  // that shares cursors keeps a lost worker's counts with its events (regroup_from_cursors).
  source_.set_cursor_counts([this](const data::Batch& batch) {
    metrics_.set_dead_lettered(source_.kafka().stats().poison);
    stream::StreamCounts c = metrics_.counts();
    c.trained += batch.rows();
    return c;
  });
}

void StreamHooks::on_start(train::LoopContext& ctx) {
  const train::Distribution& dist = ctx.distribution;
  ids_.emplace(run_dir_, dist.worker_index, record_ids_);
  shares_cursors_ = ctx.job.strategy.name == config::StrategyName::allreduce && ctx.job.data.kafka.share_cursors;
  relay_.emplace(dist.worker_index, dist.workers, dist.publish, dist.lookup);
  const data::DataPosition& restored = source_.restored_offsets();
  if (!restored.fields().empty()) {
    ctx.progress.message(fmt::format("Kafka offsets restored: {}", restored.to_string()));
    // Counts continue from the checkpoint's; the chief takes over those of workers the resumed
    // job no longer has. Freshness leaves out the time the job was down.
    metrics_.restore_counts(own_counts(dist, restored, source_.sync().members()));
    metrics_.set_freshness_floor(wall_ms());
    if (gauges_) gauges_->set_freshness_floor(wall_ms());
  }
  // Parameter servers with job-assigned partitions (an allreduce joiner rolls back with its
  // group instead: on_regroup; a group-assigned one's partitions may have moved).
  const bool ps_assigned = ctx.job.strategy.name == config::StrategyName::ps && source_.kafka().options().share;
  if (source_.sync().relaunched() && ps_assigned) rejoin(ctx);
  // Their workers that leave for good hand their partitions to the others (stream_departures.cc).
  adopts_ = ps_assigned && dist.workers > 1;
  if (adopts_ && ctx.chief()) source_.sync().set_settle([this, &ctx](int w) { settle(ctx, w); });
}

void StreamHooks::rejoin(train::LoopContext& ctx) {
  const int w = ctx.distribution.worker_index;
  const data::DataPosition& cursor = source_.resumed_at();
  if (source_.left_before()) return rejoin_after_leaving(ctx);
  // No cursor, yet the job restored its servers from a checkpoint since it started: they forget
  // every cursor there, and this worker pushed nothing after (lost in the restore's rewind,
  // say). Its share then starts at that checkpoint's progress, as the others' did when they
  // rewound to it, not where the run started (which would train that stretch twice).
  std::optional<AnnouncedRestore> restore;
  if (cursor.fields().empty()) restore = source_.sync().announced_restore();
  if (restore) {
    const data::DataPosition offsets = restored_from(restore->sections);
    source_.rewind(offsets, restore->generation);
    metrics_.rewind_counts(own_counts(ctx.distribution, offsets, source_.sync().members()));
  }
  // Its own counts continue from the cursor's; a chief's also hold those it took over at the
  // run's start (workers the job no longer has).
  const std::map<int, stream::StreamCounts> counts = stream::counts_in(cursor);
  if (auto c = counts.find(w); c != counts.end()) {
    data::DataPosition from = source_.restored_offsets();
    stream::save_counts(from, w, c->second);
    metrics_.restore_counts(own_counts(ctx.distribution, from, source_.sync().members()));
  }
  const stream::StreamCounts now = metrics_.counts();
  ctx.progress.message(fmt::format("worker {}: relaunched into the running job at step {}: its partitions {} continue "
                                   "{} ({} events trained before)",
                                   w, ctx.step, fmt::join(source_.kafka().assignment(), ", "),
                                   !cursor.fields().empty()
                                       ? "at its last applied push: " + stream::progress_fields(cursor).to_string()
                                   : restore ? fmt::format("at the restored checkpoint of step {} (it had pushed no update "
                                                           "since the restore)",
                                                           restore->step)
                                             : std::string("where this run started (it had pushed no update)"),
                                   now.trained));
  // Lost after its update of a checkpoint step, before its offer (the chief: its gather): the
  // others wait at that barrier for it. Its claim now is exactly what it was then (its resumed
  // cursor), so it takes that barrier as it would have.
  // Not at a restored checkpoint's step: that barrier is behind the job (the others went on
  // from its checkpoint without one).
  const std::int64_t steps = ctx.job.training.steps;
  if (!restore && ctx.step > 0 && ctx.step % checkpoint_every_ == 0 && (steps == 0 || ctx.step < steps))
    on_checkpoint(ctx, false);
}

void StreamHooks::on_step(train::LoopContext& ctx, const data::Batch& batch, const train::StepResult& result) {
  // The logits came from the forward pass before this update: they are the batch's
  // prequential scores; the update that used the batch happened now.
  metrics_.record(batch, positive_scores(result.logits), wall_ms());
  if (gauges_) gauges_->step(batch, wall_ms());
  if (!shares_cursors_) ids_->step(ctx.step, batch);  // else written before the exchange
  if (adopts_) adopt_departed(ctx);
  // Tests: a worker lost at a known step, its update applied and recorded (app/fault_hooks.h).
  if (ctx.distribution.fault_point) ctx.distribution.fault_point(fmt::format("stream-step-applied:{}", ctx.step));
}

void StreamHooks::before_step(train::LoopContext& ctx, const data::Batch& batch) {
  if (!shares_cursors_) return;
  // The step's line goes in before the exchange, which may complete on the others even if this
  // worker dies in it: they keep its events then, and the record must hold them. A rewind line
  // retracts it when the step is not applied here (on_skip, a regroup to an earlier step).
  ids_->step(ctx.step + 1, batch);
}

void StreamHooks::on_skip(train::LoopContext& ctx, const data::Batch& batch) {
  metrics_.record_skipped(batch.rows());
  if (shares_cursors_) ids_->rewind(ctx.step);
}

void StreamHooks::on_report(train::LoopContext& ctx) {
  stream::KafkaSource& kafka = source_.kafka();
  // One snapshot of each for the whole report: the metrics row, the gauges and the warning agree.
  const std::vector<stream::PartitionLag> lag = kafka.lag();
  const stream::KafkaSourceStats stats = kafka.stats();
  metrics_.set_consumer_lag(lag);
  metrics_.set_dead_lettered(stats.poison);
  nlohmann::json j = metrics_.to_json();
  j["step"] = ctx.step, j["split"] = "stream", j["worker"] = ctx.distribution.worker_index;
  j["time_s"] = ctx.seconds();
  j["poison"] = stats.poison;
  if (gauges_) gauges_->report(lag, j);
  // A refused hand-over cannot be repaired here: the partition's next owner starts at an older
  // position and trains again what this worker trained of it (docs/kafka_mock_coordinator.md).
  if (stats.handoff_failures > handoff_failures_said_) {
    ctx.progress.message(fmt::format(
        "warning: worker {}: the consumer group refused {} hand-over commit(s) ({}); the partitions' next "
        "owners start where the group last committed, and may train again events trained here",
        ctx.distribution.worker_index, stats.handoff_failures - handoff_failures_said_, stats.last_error));
    handoff_failures_said_ = stats.handoff_failures;
  }
  // The chief writes metrics.jsonl: its own row, then the rows the other workers sent.
  if (ctx.run) {
    ctx.run->append_metrics_line(j.dump());
    for (const std::string& row : relay_->receive()) ctx.run->append_metrics_line(row);
  } else {
    relay_->send(j.dump());
  }
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

data::DataPosition StreamHooks::claim(const train::LoopContext& ctx) {
  stream::KafkaSource& kafka = source_.kafka();
  metrics_.set_dead_lettered(kafka.stats().poison);
  data::DataPosition own = kafka.applied_position();
  if (ctx.chief() && !regrouped_from_.fields().empty()) {
    data::DataPosition base = regrouped_from_;
    stream::merge_claims(base, own);
    own = std::move(base);
  }
  stream::save_counts(own, ctx.distribution.worker_index, metrics_.counts());
  return own;
}

bool StreamHooks::checkpoint_and_commit(train::LoopContext& ctx, const data::DataPosition& offsets, bool final) {
  // The final one is written even at a periodic checkpoint's step: the other workers may have
  // trained on past it (async parameter servers), and its claims say so.
  ctx.write_checkpoint({{"kafka", train::data_position_to_json(offsets)}}, final);
  // Not written (a full disk; a server lost while saving, the job then restores from the
  // previous one): the group's offsets stay the previous checkpoint's.
  if (ctx.saved_step != ctx.step) return false;
  if (std::string e = source_.kafka().commit(offsets); !e.empty())
    ctx.progress.message("Kafka commit failed (the checkpoint holds the offsets): " + e);
  return true;
}

data::DataPosition StreamHooks::restored_from(const std::string& sections) const {
  data::DataPosition offsets = kafka_section(sections);
  return offsets.fields().empty() ? source_.restored_offsets() : offsets;
}

data::DataPosition StreamHooks::rewind_to(train::LoopContext& ctx, const std::string& sections, std::int64_t step) {
  const data::DataPosition offsets = restored_from(sections);
  take_back(ctx, offsets, step);
  return offsets;
}

void StreamHooks::take_back(train::LoopContext& ctx, const data::DataPosition& position, std::int64_t step) {
  metrics_.rewind_counts(own_counts(ctx.distribution, position, source_.sync().members()));
  ids_->rewind(step);
}

void StreamHooks::on_rewind(train::LoopContext& ctx, const update::Rewind& rewind) {
  const data::DataPosition offsets = rewind_to(ctx, rewind.sections, rewind.step);
  source_.rewind(offsets, rewind.generation);
  ctx.progress.message(fmt::format("worker {}: Kafka positions rewound in place to step {} (restore generation {}): {}",
                                   ctx.distribution.worker_index, rewind.step, rewind.generation,
                                   offsets.fields().empty() ? std::string("where this run started")
                                                            : offsets.to_string()));
  if (ctx.distribution.fault_point) ctx.distribution.fault_point("stream-rewound");  // tests only
}

std::optional<std::int64_t> StreamHooks::on_regroup(train::LoopContext& ctx, const update::Rollback& rollback) {
  const std::int64_t steps = ctx.job.training.steps;
  if (!rollback.group_cursors.empty() && steps > 0 && rollback.step >= steps) return take_end_of_run(ctx, rollback);
  if (!rollback.group_cursors.empty()) return regroup_from_cursors(ctx, rollback);
  const train::Distribution& dist = ctx.distribution;
  if (shares_cursors_)
    ctx.progress.message(fmt::format("worker {}: allreduce group {} rolls back to the newest checkpoint: {}",
                                     dist.worker_index, rollback.generation, rollback.no_group_cursors));
  // The chief (rank 0 of every group it is in: plans list workers in order) states the step,
  // the checkpoint's sections and the members; its variables and optimizer state reach the
  // others through the group (UpdateStrategy::start broadcasts rank 0's).
  std::optional<ValidCheckpoint> found;
  // Only the chief holds the checkpoints: a group formed while a lost chief is away (relaunched)
  // has none to roll back to, and fails, and the launcher restarts the job whole.
  if (const std::optional<std::vector<int>> members = members_of_plan(dist, rollback.generation))
    TRIB_CHECK(std::find(members->begin(), members->end(), 0) != members->end(), Unavailable,
               "worker {}: allreduce group {} (workers {}) must roll back to the newest checkpoint ({}), but its "
               "chief, which holds the checkpoints, is lost",
               dist.worker_index, rollback.generation, fmt::join(*members, ", "), rollback.no_group_cursors);
  if (ctx.chief()) {
    found = load_latest_valid(ctx.run->checkpoints());
    // Before the first checkpoint no positions are known but where the run started, which the
    // others' may be past: the chief fails, and the job restarts whole from the beginning.
    TRIB_CHECK(found.has_value(), Unavailable,
               "step {}: a worker was lost before the job's first checkpoint: its Kafka positions cannot roll "
               "back with the group",
               ctx.step);
    const nlohmann::json note{{"step", found->checkpoint.step()},
                              {"sections", nlohmann::json(found->checkpoint.manifest().sections)},
                              {"members", planned_members(dist, rollback.generation)}};
    dist.publish(regroup_key(rollback.generation), note.dump());
  }
  if (dist.fault_point) dist.fault_point("allreduce-stream-before-broadcast");
  // A member lost during this broadcast fails it on the others (not always on all: the root
  // may have sent everything): like a member lost at the rendezvous below, the group then
  // goes through its rollback and its next exchange fails into a new re-forming, which
  // overwrites whatever part of the state arrived. The step is then the chief's announced one.
  std::optional<std::int64_t> started;
  std::string lost_in_broadcast;
  try {
    started = ctx.update.start(ctx.vars, found ? &found->checkpoint : nullptr);
  } catch (const Error& e) {
    if (!update::lost_peer(e)) throw;
    lost_in_broadcast = e.what();
  }
  if (dist.fault_point) dist.fault_point("allreduce-stream-rollback");
  const nlohmann::json note = await_regroup_note(dist, rollback.generation);
  TRIB_CHECK(note.contains("sections"), InvalidArgument,
             "worker {}: allreduce group {} rolls back to its checkpoint, but the chief goes on from the members' "
             "cursors: {}",
             dist.worker_index, rollback.generation, note.dump());
  const std::int64_t step = started.value_or(note.at("step").get<std::int64_t>());
  TRIB_CHECK(note.at("step").get<std::int64_t>() == step, InvalidArgument,
             "worker {}: the group rolled back to step {} but the chief announced checkpoint {}", dist.worker_index, step,
             note.at("step").get<std::int64_t>());
  if (!started)
    ctx.progress.message(fmt::format("worker {}: a member of allreduce group {} was lost during the broadcast of its "
                                     "checkpoint's state ({}); the group re-forms again at its next exchange",
                                     dist.worker_index, rollback.generation, lost_in_broadcast));
  source_.sync().set_members(note.at("members").get<std::vector<int>>());
  source_.hold_in_cursors({});  // the chief is in this group (above): it counts its own again
  const data::DataPosition offsets = rewind_to(ctx, note.at("sections").dump(), step);
  if (ctx.chief()) regrouped_from_ = stream::progress_fields(offsets);
  // (A member lost in the broadcast was named above.)
  rewind_group(ctx, offsets, rollback.generation, started.has_value());
  ctx.saved_step = step;
  ctx.progress.message(fmt::format("worker {}: allreduce group {} (workers {}) rolled back to checkpoint {} from step {} "
                                   "({} steps to redo), variables crc32c {:08x}; Kafka positions rewound in place: {}; "
                                   "reads partitions {}{}",
                                   dist.worker_index, rollback.generation,
                                   fmt::join(source_.sync().members(), ", "), step, ctx.step,
                                   std::max<std::int64_t>(0, ctx.step - step), update::variables_crc32c(ctx.vars),
                                   offsets.to_string(),
                                   fmt::join(source_.kafka().assignment(), ", "),
                                   source_.kafka().options().share ? " (assigned by the job)" : ""));
  return step;
}

void StreamHooks::rewind_group(train::LoopContext& ctx, const data::DataPosition& position, std::int64_t generation,
                               bool say_lost) {
  // Every member seeks before any reads again: partitions that a rebalance moves between
  // them from here on then continue from hand-over commits tagged with this generation, never
  // from positions taken before the rewind (kafka_source_offsets.cc).
  bool all_rewound = true;
  source_.rewind(position, generation, [&] { all_rewound = source_.sync().rendezvous(kRewound); });
  // Another member lost during the rollback: this group's next exchange fails, and the
  // survivors re-form again and roll back again (on_regroup, a newer generation).
  if (!all_rewound && say_lost)
    ctx.progress.message(fmt::format("worker {}: a member of allreduce group {} was lost during its rollback; the "
                                     "group re-forms again at its next exchange",
                                     ctx.distribution.worker_index, generation));
}

std::int64_t StreamHooks::regroup_from_cursors(train::LoopContext& ctx, const update::Rollback& rollback) {
  const train::Distribution& dist = ctx.distribution;
  const std::int64_t step = rollback.step;
  if (states_regroup(dist, rollback.generation))
    dist.publish(regroup_key(rollback.generation),
                 nlohmann::json{{"step", step}, {"members", planned_members(dist, rollback.generation)}}.dump());
  const nlohmann::json note = await_regroup_note(dist, rollback.generation);
  TRIB_CHECK(!note.contains("sections") && note.at("step").get<std::int64_t>() == step, InvalidArgument,
             "worker {}: allreduce group {} goes on from step {} with its members' cursors, but the chief announced {}",
             dist.worker_index, rollback.generation, step, note.dump());
  // The group's whole progress at the step: each member's applied progress and counts, the
  // lost ones' included; partitions are disjoint but for a claim handed over (merge_claims).
  data::DataPosition merged;
  for (const std::string& cursor : rollback.group_cursors) stream::merge_claims(merged, data::DataPosition::parse(cursor));
  const std::vector<int> members = note.at("members").get<std::vector<int>>();
  source_.sync().set_members(members);
  take_back(ctx, merged, step);
  // A lost chief away: nobody counts what it would (its own counts, those of workers lost with
  // it: own_counts), so the group's lowest member carries them in its cursors, and the chief
  // takes them back from the cursors of the group it joins (as a relaunched worker takes its
  // own): the totals line and the final checkpoint hold each count once.
  data::DataPosition held;
  if (std::find(members.begin(), members.end(), 0) == members.end() && !members.empty() &&
      members.front() == dist.worker_index)
    for (const auto& [w, c] : stream::counts_in(merged))
      if (std::find(members.begin(), members.end(), w) == members.end()) stream::save_counts(held, w, c);
  source_.hold_in_cursors(std::move(held));
  const data::DataPosition progress = stream::progress_fields(merged);
  if (ctx.chief()) regrouped_from_ = progress;
  if (dist.fault_point) dist.fault_point("allreduce-stream-rollback");
  rewind_group(ctx, progress, rollback.generation, true);
  if (dist.fault_point) dist.fault_point("allreduce-stream-rewound");  // tests: a join before the next step
  ctx.progress.message(fmt::format("worker {}: allreduce group {} (workers {}) goes on from step {} with the Kafka "
                                   "progress of that step of all {} workers that took it, lost ones included, "
                                   "variables crc32c {:08x}; Kafka positions rewound in place: {}; reads partitions {}{}",
                                   dist.worker_index, rollback.generation, fmt::join(source_.sync().members(), ", "),
                                   step, rollback.group_cursors.size(), update::variables_crc32c(ctx.vars),
                                   progress.to_string(), fmt::join(source_.kafka().assignment(), ", "),
                                   source_.kafka().options().share ? " (assigned by the job)" : ""));
  return step;
}

data::DataPosition StreamHooks::adopt_after_end(train::LoopContext& ctx, const AnnouncedRestore& restore) {
  const data::DataPosition offsets = rewind_to(ctx, restore.sections, restore.step);
  source_.sync().set_scope(restore.generation);
  ctx.progress.message(fmt::format("worker {}: the job rolled back to step {} (restore generation {}) after this "
                                   "worker's last step: its events since then are left for the next --resume",
                                   ctx.distribution.worker_index, restore.step, restore.generation));
  // The chief restored the job from inside its finish(), which said done again itself.
  if (!ctx.chief()) ctx.update.finish_after_restore();
  data::DataPosition own = stream::progress_fields(offsets);
  stream::save_counts(own, ctx.distribution.worker_index, metrics_.counts());
  return own;
}

void StreamHooks::summarize(train::LoopContext& ctx, const data::DataPosition& merged) {
  for (const std::string& row : relay_->receive()) ctx.run->append_metrics_line(row);
  const nlohmann::json totals = stream::summary_json(stream::counts_in(merged));
  ctx.run->append_metrics_line(totals.dump());
  ctx.progress.message(fmt::format("stream totals: consumed {} trained {} skipped {} dead-lettered {}",
                                   totals["consumed"].get<std::int64_t>(), totals["trained"].get<std::int64_t>(),
                                   totals["skipped"].get<std::int64_t>(),
                                   totals["dead_lettered"].get<std::int64_t>()));
}

void StreamHooks::on_last_step(train::LoopContext& ctx) {
  // The chief takes no more periodic checkpoints: workers still training skip their barriers
  // from here on instead of waiting there while the chief waits for them to finish.
  if (ctx.chief()) source_.sync().ending();
}

void StreamHooks::on_checkpoint(train::LoopContext& ctx, bool final) {
  StreamSync& sync = source_.sync();
  data::DataPosition own = claim(ctx);
  if (!final) {
    // A lost chief away (relaunched, not yet back in the group): no checkpoint until it is.
    const std::vector<int>& members = sync.members();
    if (!ctx.chief() && std::find(members.begin(), members.end(), 0) == members.end()) {
      ctx.progress.message(fmt::format("step {}: no checkpoint: the chief was lost and has not joined the group again "
                                       "yet",
                                       ctx.step));
      return;
    }
    if (ctx.chief()) {
      const std::optional<data::DataPosition> merged = sync.gather(ctx.step, own);
      if (!merged)
        ctx.progress.message(fmt::format("step {}: no checkpoint: {}", ctx.step,
                                         ctx.job.strategy.name == config::StrategyName::allreduce
                                             ? "a worker was lost before its claim; the group re-forms without it "
                                               "(its regroup line says from which step)"
                                             : "a worker found a parameter server lost, and the job restores from "
                                               "the previous one"));
      sync.published(ctx.step, merged && checkpoint_and_commit(ctx, *merged));
    } else if (sync.offer(ctx.step, own)) {
      source_.kafka().commit(own);
    }
    return;
  }
  // The last checkpoint: every worker has stopped, so the final claims are exact. The loop has
  // just had every worker report, so the chief collects all rows after the claims.
  if (ctx.distribution.fault_point) ctx.distribution.fault_point("stream-after-last-step");
  if (ctx.leaving && adopts_) return leave(ctx);  // the job goes on: no last checkpoint for it
  if (ctx.chief()) {
    if (std::optional<AnnouncedRestore> r = sync.newer_restore()) own = adopt_after_end(ctx, *r);
    std::vector<int> taken;
    // A relaunched chief that took the final state from the group holds every member's final
    // progress and counts already (end_of_run_); the others wait in a scope of their own.
    data::DataPosition merged = end_of_run_;
    if (end_of_run_.fields().empty())
      merged = sync.gather_final(own, [&](int w) { return last_step_cursor(ctx, w); }, &taken);
    else
      stream::merge_claims(merged, own);
    for (int w : taken)
      ctx.progress.message(fmt::format("worker 0: worker {} was lost after the run's last exchange, before handing over "
                                       "its final Kafka offsets: the last checkpoint takes them from its cursor of step "
                                       "{}, which the group shared in that exchange (nothing restarts)",
                                       w, ctx.step));
    checkpoint_and_commit(ctx, merged, /*final=*/true);
    sync.published_final();
    summarize(ctx, merged);
    return;
  }
  if (!end_of_run_.fields().empty()) own = end_of_run_;  // joined at the run's end (take_end_of_run)
  for (;;) {
    if (std::optional<AnnouncedRestore> r = sync.newer_restore()) own = adopt_after_end(ctx, *r);
    if (sync.final_offsets(own)) break;
    if (sync.chief_lost()) hand_over_end(ctx);
  }
  source_.kafka().commit(own);
}

void StreamHooks::on_end(train::LoopContext& ctx) {
  const int w = ctx.distribution.worker_index;
  if (auto a = metrics_.auc()) ctx.progress.message(fmt::format("worker {} final prequential AUC {:.4f}", w, *a));
  ctx.progress.message(
      fmt::format("worker {} trained on {} events ({:.0f} events/s)", w, ctx.examples, ctx.summary.images_per_s));
}

}  // namespace trib::train_stream
