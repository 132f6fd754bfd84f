#include "train/training_loop.h"

#include <algorithm>
#include <limits>
#include <map>

#include "train/training_state.h"
#include "config/derived_settings.h"
#include "trib/train/evaluator.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/data/dataset_source.h"
#include "trib/update/local_update.h"

namespace trib::train {

namespace {

std::vector<std::string> trainable_names(const ModelGraph& graph) {
  std::vector<std::string> out;
  for (const nn::Parameter& p : graph.trainable_parameters()) out.push_back(p.name);
  return out;
}

}  // namespace

std::unique_ptr<update::UpdateStrategy> make_local_update(const UpdateInputs& in) {
  return std::make_unique<update::LocalUpdate>(
      update::LocalUpdateOptions{in.trainable, in.optimizer, in.schedule, in.job.training.clip_norm});
}

double LoopContext::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void LoopContext::write_checkpoint(const std::map<std::string, nlohmann::json>& sections, bool again) {
  TRIB_CHECK(run != nullptr, InvalidArgument, "worker {}: only the chief writes checkpoints",
             distribution.worker_index);
  if (step == saved_step && !again) return;  // already saved (a run resumed at its last step): nothing new
  // Written again, its manifest goes first (CheckpointWriter): until the new one is published,
  // no checkpoint of this step exists.
  if (step == saved_step) saved_step = -1;
  try {
    CheckpointWriter w(run->checkpoints(), step);
    update.save(w, vars);
    if (steps_per_epoch > 0) w.set_epoch(step / steps_per_epoch);
    if (std::optional<data::DataPosition> p = source.position()) w.set_data_position(data_position_to_json(*p));
    for (const auto& [name, value] : sections) w.set_section(name, value);
    w.publish();
  } catch (const IoError& e) {
    // A full disk (or a quota, or a server's failed write) costs this checkpoint, not the
    // run: the half-written one has no manifest, so the previous stays what --resume uses.
    std::error_code ignored;
    std::filesystem::remove_all(checkpoint_dir(run->checkpoints(), step), ignored);
    progress.message(fmt::format("step {}: checkpoint not written ({}); the previous one stays; trying again at the "
                                 "next checkpoint",
                                 step, e.what()));
    return;
  } catch (...) {
    // The run ends on this (a server lost at the final checkpoint): no empty directory stays.
    std::error_code ignored;
    std::filesystem::remove_all(checkpoint_dir(run->checkpoints(), step), ignored);
    throw;
  }
  keep_last(run->checkpoints(), static_cast<std::size_t>(job.training.keep_checkpoints));
  saved_step = step;
}

RunSummary run_training_loop(const TrainerOptions& options, const LoopPlan& plan, BatchSource& source,
                             TrainingHooks& hooks) {
  const Distribution& dist = options.distribution;
  const bool chief = dist.chief();
  TRIB_CHECK(plan.total_steps >= 0 && plan.steps_per_epoch >= 0 && plan.report_every > 0 && plan.checkpoint_every > 0,
             InvalidArgument, "training loop: {} steps, {} per epoch, report every {}, checkpoint every {}",
             plan.total_steps, plan.steps_per_epoch, plan.report_every, plan.checkpoint_every);
  std::int64_t total_steps = plan.total_steps > 0 && !plan.source_ends_run
                                  ? plan.total_steps
                                  : std::numeric_limits<std::int64_t>::max();
  // Every setting as it runs; config.yaml gets exactly this. (Reassigned only when the caller
  // continues the run: TrainerOptions::next_job, at the end of the loop below.)
  config::JobConfig job = config::derive_settings(options.job, {dist.workers, plan.total_steps});
  const config::TrainingConfig& tc = job.training;

  EngineContext engine(EngineOptions{job.threads.intra, job.threads.inter});
  ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, tc.seed};
  ModelGraph graph(spec, tc.batch, true, engine);
  // Everything that can be wrong with the input is checked before the run directory is touched.
  std::optional<ValidCheckpoint> resumed;
  const bool taken_back = chief && options.relaunched_chief;  // the run directory is the lost chief's
  if (chief && options.resume) resumed = find_resume_checkpoint(options.output, options.log);
  if (taken_back && !options.resume) resumed = load_latest_valid(options.output / "checkpoints");
  if (chief && !options.resume && !taken_back) RunDirectory::check_new(options.output);
  source.start({options.resume || resumed.has_value(), resumed ? &resumed->checkpoint : nullptr});
  // Where this worker's data starts: a rollback to before the first checkpoint comes back here.
  const std::optional<data::DataPosition> first_position = source.position();

  std::optional<RunDirectory> run;
  if (chief) {
    run.emplace(options.output, options.resume || taken_back);
    run->write_config(job.resolved_yaml);
  }
  const ProgressMode mode = options.progress_lines ? ProgressMode::lines
                            : options.interactive  ? ProgressMode::terminal
                                                   : ProgressMode::plain;
  Progress progress(options.log, mode, plan.total_steps);
  if (chief) progress.message(fmt::format("run directory: {}", run->path().string()));

  std::shared_ptr<const Optimizer> optimizer = make_optimizer(job.optimizer);
  std::shared_ptr<const Schedule> schedule = make_schedule(job.schedule);
  const UpdateInputs inputs{job, trainable_names(graph), optimizer, schedule};
  std::unique_ptr<update::UpdateStrategy> update = dist.make_update ? dist.make_update(inputs) : make_local_update(inputs);

  VariableStore vars;
  initialize_parameters(graph.parameters(), tc.seed, vars);
  LoopContext ctx{job,     dist, spec, engine, vars, *update, source, progress, run ? &*run : nullptr,
                  plan.steps_per_epoch, 0, 0, std::chrono::steady_clock::now(), RunSummary{}, -1, StepTiming{}, false};
  ctx.step = update->start(vars, resumed ? &resumed->checkpoint : nullptr);
  if (resumed) ctx.saved_step = resumed->checkpoint.step();
  if (std::optional<std::string> cursor = update->resume_data_cursor()) {
    const data::DataPosition at = data::DataPosition::parse(*cursor);
    source.resume_at(at);
    progress.message(fmt::format("worker {}: rejoins at step {}, data at {}", dist.worker_index, ctx.step, at.to_string()));
  }
  std::optional<update::Rollback> joined = update->take_rollback();
  if (joined) {
    // This worker joined a running group (a relaunched allreduce worker): its data goes on
    // where the group's stands, in its own shard, and is resharded from the next epoch.
    progress.message(joined->message);
    if (joined->peer_cursor) source.follow(data::DataPosition::parse(*joined->peer_cursor));
    source.reshard(joined->rank, joined->workers);
  }
  // A chief that joined its running group (allreduce) or rejoined the running job (its
  // servers' state: parameter servers) has the job's current state, newer than the checkpoint.
  const bool in_place = joined.has_value() || update->rejoined_running_job();
  if (taken_back)
    progress.message(fmt::format("worker 0: relaunched in place of the lost chief; takes the run back at step {} ({}{})",
                                 ctx.step, joined ? "the group's state; " : in_place ? "the servers' state; " : "",
                                 !resumed   ? "no checkpoint yet"
                                 : in_place ? "newest checkpoint " + resumed->checkpoint.dir().string()
                                            : resumed->checkpoint.dir().string()));
  else if (resumed)
    progress.message(fmt::format("resumed from {} at step {}", resumed->checkpoint.dir().string(), ctx.step));
  hooks.on_start(ctx);
  // A hook whose positions cannot follow the group's (a stream's Kafka offsets) rolls the
  // group back to a step it knows, the joiner with the members (TrainingHooks::on_regroup).
  if (joined)
    if (std::optional<std::int64_t> back = hooks.on_regroup(ctx, *joined)) ctx.step = *back;
  ctx.started = std::chrono::steady_clock::now();

  std::int64_t reported = -1;
  update::UpdateStrategy* u = update.get();
  // Graphs have a fixed batch size. A source may end with a short batch (a stream's last
  // events, an iterator's tail): it runs through a graph of its own size, built once.
  std::map<std::int64_t, std::unique_ptr<ModelGraph>> short_graphs;
  auto graph_for = [&](std::int64_t rows) -> ModelGraph& {
    if (rows == tc.batch) return graph;
    TRIB_CHECK(rows > 0 && rows < tc.batch, ShapeError, "the batch source gave a batch of {} rows; training.batch is {}",
               rows, tc.batch);
    std::unique_ptr<ModelGraph>& g = short_graphs[rows];
    if (!g) g = std::make_unique<ModelGraph>(spec, rows, true, engine);
    return *g;
  };
  for (;;) {  // once, unless the caller continues the run (TrainerOptions::next_job)
    while (ctx.step < total_steps) {
      // A step boundary: the one place a run stops early. It then ends as a finished run
      // does, last checkpoint included, so that --resume continues from here.
      // A worker of a group with fixed shards leaves only between epochs (where the others take
      // its data with nothing left out or read twice): until then it keeps stepping.
      if (options.stop != nullptr && options.stop->stop_at(ctx.step) &&
          !(options.stop->leaves() && options.stop->leaves_between_epochs() && !source.at_epoch_start())) {
        progress.message(fmt::format("step {}: {}: stopping here{}", ctx.step, options.stop->reason(),
                                     chief ? " and writing a checkpoint" : ""));
        ctx.leaving = options.stop->leaves();
        if (ctx.leaving) update->leave();
        break;
      }
      // Where a group admits workers that join beyond its starting ones (allreduce).
      if (source.at_epoch_start()) update->at_epoch_start(ctx.step);
      const auto t0 = std::chrono::steady_clock::now();  // the step's phases, for hooks (ctx.timing)
      std::optional<data::Batch> batch = source.next();
      if (!batch) break;  // the source ended (a stream gone idle)
      const auto t1 = std::chrono::steady_clock::now();
      // The cursor once this batch is applied, given before the pass: an allreduce group that
      // shares the cursors exchanges them while the pass runs.
      if (std::optional<data::DataPosition> p = source.position_after(*batch)) update->set_data_cursor(p->serialize());
      hooks.before_step(ctx, *batch);
      Tensor x = as_model_input(batch->features(), spec.input);
      StepResult r = graph_for(batch->rows()).run(x, batch->labels(), vars, static_cast<std::uint64_t>(ctx.step),
                                                  [u](std::size_t i, const update::GradTensor& g) { u->on_gradient_ready(i, g); });
      const auto t2 = std::chrono::steady_clock::now();
      const bool applied = update->apply(ctx.step, r.grads, vars);
      ctx.timing = {std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count()};
      if (!applied) {
        if (std::optional<update::Rollback> rb = update->take_rollback()) {
          // The workers changed under this step (a lost allreduce worker): go on from where the
          // survivors agreed, with this worker's data where it stood then, reshard from the next epoch.
          progress.message(rb->message);
          ctx.step = rb->step;
          if (std::optional<std::int64_t> back = hooks.on_regroup(ctx, *rb)) {
            ctx.step = *back;  // the hook rolled the group back further, data included
            continue;
          }
          if (rb->data_cursor) source.resume_at(data::DataPosition::parse(*rb->data_cursor));
          source.reshard(rb->rank, rb->workers);
          continue;
        }
        if (std::optional<update::Rewind> back = update->take_rewind()) {
          // The job rolled back (a lost parameter server was restored): this step and those
          // since the checkpoint are taken again, from its data position. (An async worker that
          // was behind the chief's checkpoint moves up to it, and redoes nothing.)
          std::optional<data::DataPosition> at = first_position;
          if (!back->data_position.empty())
            at = data::position_in_shard(data_position_from_json(nlohmann::json::parse(back->data_position)),
                                         dist.worker_index, dist.workers);
          if (at) source.resume_at(*at);
          progress.message(fmt::format("worker {}: {}; back to step {} from step {} ({} steps to redo){}",
                                       dist.worker_index, back->why, back->step, ctx.step, std::max<std::int64_t>(0, ctx.step - back->step),
                                       at ? ", data at " + at->to_string() : ""));
          ctx.step = back->step;
          hooks.on_rewind(ctx, *back);
          continue;
        }
        progress.message(fmt::format("step {}: non-finite gradient, step skipped", ctx.step));
        source.skipped(*batch);
        hooks.on_skip(ctx, *batch);
        continue;
      }
      graph_for(batch->rows()).apply_state_updates(vars);
      ++ctx.step;
      ctx.examples += batch->rows();
      source.applied(*batch);
      hooks.on_step(ctx, *batch, r);
      if (options.on_step) options.on_step(ctx.step, r.loss);
      progress.step(ctx.step, ctx.epoch(), r.loss, batch->rows());
      // The last report comes after update->finish(): a parameter-server chief then holds every
      // worker's updates (a relaunched worker may still be pushing when the chief is done).
      if (ctx.step % plan.report_every == 0 && ctx.step < total_steps) {
        hooks.on_report(ctx);
        reported = ctx.step;
      }
      if (ctx.step % plan.checkpoint_every == 0 && ctx.step < total_steps) hooks.on_checkpoint(ctx, false);
    }
    // Done stepping, before the last checkpoint: a parameter server then stops waiting for this
    // worker, so that a worker with data left can finish its steps.
    hooks.on_last_step(ctx);
    update->finish();
    if (reported != ctx.step) hooks.on_report(ctx);
    hooks.on_checkpoint(ctx, true);
    ctx.summary.wall_s = ctx.seconds();
    ctx.summary.steps = ctx.step;
    ctx.summary.epochs = ctx.epoch();
    ctx.summary.images_per_s = ctx.summary.wall_s > 0 ? double(ctx.examples) / ctx.summary.wall_s : 0;
    if (std::string report = update->report(); !report.empty()) progress.message(report);
    hooks.on_end(ctx);
    // The run is complete here, checkpoint included (a crash from now on resumes at this step).
    // A caller that wants more steps gets them in this process, from this very state: nothing is
    // rebuilt, reloaded or read back, and the steps are those a resumed run would take.
    if (!options.next_job || dist.workers > 1 || !chief || plan.source_ends_run) break;
    std::optional<config::JobConfig> next = options.next_job(ctx.step);
    if (!next || next->training.steps <= ctx.step) break;
    const std::int64_t target = next->training.steps;
    next = config::derive_settings(*next, {dist.workers, target});
    // The optimizer and schedule were built from the first settings: a schedule whose length
    // followed training.steps (cosine without total_steps) would now differ; such a run
    // ends here and is resumed by the caller instead.
    if (next->schedule.total_steps != job.schedule.total_steps) break;
    job = std::move(*next);
    total_steps = target;
    run->write_config(job.resolved_yaml);
    progress.message(fmt::format("continuing in this process to step {}", target));
  }
  return ctx.summary;
}

}  // namespace trib::train
