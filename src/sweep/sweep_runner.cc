// The sweep's loop: fill the slots, watch the trials, decide at rungs, log, redraw.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine_warmup.h"
#include "sweep_log.h"
#include "sweep_table.h"
#include "trial_metrics.h"
#include "trial_fork.h"
#include "trial_process.h"
#include "trib/config/job_config.h"
#include "trib/core/error.h"
#include "trib/sweep/sweep.h"

namespace trib::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double cpu_s(int who) {
  rusage u{};
  getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The CPU time the sweep has cost so far: the trials (children, once reaped) and this process
// (loading the datasets the forked trials share, and watching them).
double sweep_cpu_s() { return cpu_s(RUSAGE_CHILDREN) + cpu_s(RUSAGE_SELF); }

bool space_sets(const SweepConfig& c, const std::string& prefix) {
  for (const Dimension& d : c.space.dimensions())
    if (d.key.starts_with(prefix)) return true;
  return false;
}

// Whether the trials can be forked from the sweep (trial_fork.h): they need nothing that
// `trib train` adds around the trainer.
bool forkable(const SweepOptions& o, const config::JobConfig& job) {
  const SweepConfig& c = o.config;
  return o.fork_trials && !job.cluster.enabled && !job.data.stream() && !job.data.external() &&
         job.monitoring.port == 0 && !space_sets(c, "cluster.") && !space_sets(c, "monitoring.") &&
         !space_sets(c, "data.format");
}

// Overrides every segment of every trial gets: threads so that slots x threads fit the cores,
// and a cosine schedule's length fixed to the trial's full length (not a segment's).
std::vector<std::string> common_overrides(const SweepConfig& c, const config::JobConfig& job) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = c.threads > 0 ? c.threads : std::max(1, cores / c.slots);
  if (job.cluster.enabled) threads = std::max(1, threads / job.cluster.workers);  // a local cluster's workers share them
  std::vector<std::string> out = {fmt::format("threads.intra={}", threads), "threads.inter=1"};
  if (job.schedule.name == "cosine" && job.schedule.total_steps == 0 && c.steps > 0)
    out.push_back(fmt::format("schedule.total_steps={}", std::max<std::int64_t>(1, c.steps - job.schedule.warmup_steps)));
  return out;
}

class Sweep {
 public:
  explicit Sweep(const SweepOptions& o)
      : o_(o), c_(o.config), dir_(o.output), table_(o.out, o.interactive, c_.metric) {
    job_ = config::load_job_config(c_.job);
    overrides_ = common_overrides(c_, job_);
    fork_ = forkable(o, job_);
    if (c_.search == SearchKind::asha) asha_.emplace(c_.grace_period, c_.steps, c_.reduction_factor, c_.maximize);
    if (o.resume) {
      trials_ = SweepLog::replay(dir_ / "sweep.jsonl", asha_ ? &*asha_ : nullptr);
    } else {
      std::error_code ec;
      TRIB_CHECK(!fs::exists(dir_) || fs::is_empty(dir_, ec), InvalidArgument,
                 "sweep directory '{}' already exists and is not empty: choose another --output, or pass --resume {} "
                 "to continue that sweep",
                 dir_.string(), dir_.string());
    }
    fs::create_directories(dir_ / "trials");
    fs::create_directories(dir_ / "logs");
    // A copy of the sweep file beside its results (trib plot reads the metric from it).
    std::error_code ec;
    if (!fs::equivalent(c_.file, dir_ / "sweep.yaml", ec))
      fs::copy_file(c_.file, dir_ / "sweep.yaml", fs::copy_options::overwrite_existing, ec);
    log_ = std::make_unique<SweepLog>(dir_ / "sweep.jsonl");
    planned_ = planned_trials(c_);
  }

  SweepResult run() {
    const double cpu0 = sweep_cpu_s();
    const auto start = Clock::now();
    bool time_up = false;
    for (;;) {
      if (!time_up && c_.time_s > 0 && std::chrono::duration<double>(Clock::now() - start).count() > c_.time_s) {
        time_up = true;
        table_.event(fmt::format("time budget of {} s spent: stopping the running trials at their next step",
                                 c_.time_s));
        for (auto& [id, p] : running_) p->stop();  // each ends with a checkpoint
      }
      if (!interrupted_ && o_.terminate != nullptr && o_.terminate->received()) {
        interrupted_ = true;
        table_.event("SIGTERM: stopping the running trials with a checkpoint; --resume continues the sweep");
        for (auto& [id, p] : running_) p->stop();
      }
      while (!time_up && !interrupted_ && static_cast<int>(running_.size()) < c_.slots && launch_next()) {
      }
      if (running_.empty()) break;
      for (auto it = running_.begin(); it != running_.end();) {
        if (it->second->poll()) {
          TrialRecord& t = trials_[static_cast<std::size_t>(it->first)];
          // Interrupted mid-segment: nothing is decided; --resume runs the segment on from
          // the trial's checkpoint. A trial paused at its target finished its segment.
          bool goes_on = false;
          if (interrupted_ && !it->second->paused()) t.state = TrialState::pending, release(t, *it->second);
          else goes_on = finish_segment(t, *it->second, time_up);
          it = goes_on ? std::next(it) : running_.erase(it);
        } else {
          ++it;
        }
      }
      refresh_steps();
      table_.draw(trials_);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Promoted trials the time budget left waiting end here, where they stood; so do trials
    // waiting at a rung (the promotion rule) that no free slot promoted: stopped at that rung.
    // A SIGTERM leaves both as they are, for --resume.
    for (TrialRecord& t : trials_)
      if (time_up && t.state == TrialState::pending) {
        t.state = TrialState::stopped;
        t.note = "time budget";
        log_->end(t);
      } else if (!interrupted_ && t.state == TrialState::waiting) {
        t.state = TrialState::stopped;
        t.note = fmt::format("at rung {}, not promoted", t.step);
        log_->end(t);
      }
    running_.clear();  // every trial reaped, its CPU time counted
    return finish(sweep_cpu_s() - cpu0);
  }

 private:
  fs::path run_dir(int id) const { return dir_ / "trials" / trial_name(id); }

  // A promoted or interrupted trial first (lowest id), then (the promotion rule) a trial
  // waiting at a rung that the paper's rule promotes, else a new one while the budget lasts.
  bool launch_next() {
    for (TrialRecord& t : trials_)
      if (t.state == TrialState::pending && !running_.count(t.id)) return launch(t), true;
    if (asha_ && c_.asha_rule == AshaRule::promotion && promote_waiting()) return true;
    if (static_cast<int>(trials_.size()) >= planned_) return false;
    TrialRecord t;
    t.id = static_cast<int>(trials_.size());
    t.params = trial_params(c_, t.id);
    log_->trial(t);
    trials_.push_back(t);
    launch(trials_.back());
    return true;
  }

  // The paper's get_job: the best waiting trial among the top 1/reduction_factor of the highest
  // rung that has one goes on from its rung's checkpoint.
  bool promote_waiting() {
    while (std::optional<std::pair<int, std::int64_t>> next = asha_->next_promotion()) {
      const auto [id, rung] = *next;
      asha_->mark_promoted(id, rung);
      TrialRecord& t = trials_[static_cast<std::size_t>(id)];
      // A trial that no longer waits there (resumed from a log where it was stopped) is passed over.
      if (t.state != TrialState::waiting || t.step != rung) continue;
      log_->result(t, "promote");
      t.note.clear();
      table_.event(fmt::format("{} {}: promoted past rung {} ({} {:.4f}), from its checkpoint", trial_name(id),
                               describe(t.params), rung, c_.metric, t.metric.value_or(0)));
      launch(t);
      return true;
    }
    return false;
  }

  void launch(TrialRecord& t) {
    TrialLaunch l;
    l.executable = o_.executable;
    l.job = c_.job;
    l.run_dir = run_dir(t.id);
    l.log_file = dir_ / "logs" / (trial_name(t.id) + ".log");
    l.params = t.params;
    l.target = asha_ ? asha_->next_stop(t.step) : c_.steps;
    l.extra = overrides_;
    targets_[t.id] = l.target;
    try {
      if (fork_ && !engine_warm_) {  // once, before the first fork: every trial inherits it
        warm_engine(job_);
        engine_warm_ = true;
      }
      if (fork_) running_[t.id] = std::make_unique<ForkedTrial>(l, shared_datasets());
      else running_[t.id] = std::make_unique<TrialProcess>(l);
      t.state = TrialState::running;
    } catch (const Error& e) {
      t.state = TrialState::failed;
      t.note = e.what();
      log_->end(t);
      table_.event(fmt::format("{} failed to start: {}", trial_name(t.id), t.note));
    }
  }

  // The datasets every forked trial reads, loaded on the first fork. Null when the space sets
  // data keys (each trial loads its own) or when they fail to load (each trial then fails
  // with the reason, as a `trib train` would).
  std::shared_ptr<const train::Datasets> shared_datasets() {
    if (data_loaded_ || space_sets(c_, "data.") || space_sets(c_, "model.input")) return data_;
    data_loaded_ = true;
    try {
      data_ = std::make_shared<const train::Datasets>(train::load_datasets(job_.data, job_.model));
    } catch (const Error&) {
    }
    return data_;
  }

  // Decides at the end of a segment; true when the trial goes on in its process (forked and
  // promoted), false when its process is done.
  // The trial's process is done with: its CPU time is added to the trial's.
  void release(TrialRecord& t, Trial& p) {
    p.finish();
    t.cpu_s += p.cpu_s();
  }
  void end(TrialRecord& t, Trial& p) {
    release(t, p);
    log_->end(t);
  }

  bool finish_segment(TrialRecord& t, Trial& p, bool time_up) {
    const std::int64_t target = targets_[t.id];
    std::optional<MetricPoint> m = last_metric(run_dir(t.id), c_.metric, target);
    if (p.succeeded() && !m && time_up) {  // stopped by the budget before its first evaluation
      t.state = TrialState::stopped;
      t.note = "time budget";
      end(t, p);
      table_.event(fmt::format("{} {}: stopped (time budget) before a result", trial_name(t.id), describe(t.params)));
      return false;
    }
    if (!p.succeeded() || !m) {
      t.state = TrialState::failed;
      t.note = !p.succeeded() ? fmt::format("{}: {}", p.describe_exit(), p.last_error())
                              : "the run wrote no evaluation of " + c_.metric;
      end(t, p);
      table_.event(fmt::format("{} {} failed: {} (log: {})", trial_name(t.id), describe(t.params), t.note,
                               (dir_ / "logs" / (trial_name(t.id) + ".log")).string()));
      return false;
    }
    t.step = m->step;
    t.metric = m->value;
    const std::string head = fmt::format("{} {}: step {} {} {:.4f}", trial_name(t.id), describe(t.params), t.step,
                                         c_.metric, *t.metric);
    if (time_up && (target == 0 || t.step < target)) {
      t.state = TrialState::stopped;
      t.note = "time budget";
      log_->result(t, "stop");
      end(t, p);
      table_.event(head + ": stopped (time budget)");
      return false;
    }
    if (asha_ && target < asha_->max_steps() && c_.asha_rule == AshaRule::promotion)
      return wait_at_rung(t, p, target, head, time_up);
    if (asha_ && target < asha_->max_steps()) {
      std::optional<double> cut = asha_->cutoff(target);
      const bool go_on = asha_->on_rung(t.id, target, *t.metric);
      log_->result(t, go_on ? "continue" : "stop");
      if (go_on && p.paused() && !time_up && !interrupted_) {  // on in the same process
        targets_[t.id] = asha_->next_stop(target);
        p.go_on(targets_[t.id]);
        t.state = TrialState::running;
        table_.event(head + fmt::format(": promoted past rung {}", target));
        return true;
      }
      if (go_on) {
        release(t, p);
        t.state = TrialState::pending;
        table_.event(head + fmt::format(": promoted past rung {}", target));
      } else {
        t.state = TrialState::stopped;
        t.note = fmt::format("at rung {}, cut-off {:.4f}", target, cut.value_or(0));
        end(t, p);
        table_.event(head + ": stopped " + t.note);
      }
      return false;
    }
    t.state = TrialState::completed;
    log_->result(t, "done");
    end(t, p);
    table_.event(head + ": completed");
    return false;
  }

  // The promotion rule: the trial's result joins its rung and the trial waits there. The slot
  // it frees goes to the paper's get_job; when that promotes this very trial, a forked trial
  // goes on in its process (as a promoted one does under the stopping rule).
  bool wait_at_rung(TrialRecord& t, Trial& p, std::int64_t rung, const std::string& head, bool time_up) {
    asha_->record(t.id, rung, *t.metric);
    std::optional<std::pair<int, std::int64_t>> next = asha_->next_promotion();
    const bool runnable_first = std::none_of(trials_.begin(), trials_.end(), [&](const TrialRecord& o) {
      return o.state == TrialState::pending && !running_.count(o.id);
    });
    if (next && next->first == t.id && next->second == rung && p.paused() && runnable_first && !time_up &&
        !interrupted_) {
      asha_->mark_promoted(t.id, rung);
      log_->result(t, "continue");
      targets_[t.id] = asha_->next_stop(rung);
      p.go_on(targets_[t.id]);
      t.state = TrialState::running;
      table_.event(head + fmt::format(": promoted past rung {}", rung));
      return true;
    }
    log_->result(t, "wait");
    release(t, p);
    t.state = TrialState::waiting;
    t.note = fmt::format("at rung {}", rung);
    table_.event(head + fmt::format(": waits at rung {}", rung));
    return false;
  }

  // The step column of running trials: their latest evaluation, read at most once a second.
  void refresh_steps() {
    if (!o_.interactive || Clock::now() - last_refresh_ < std::chrono::seconds(1)) return;
    last_refresh_ = Clock::now();
    for (auto& [id, p] : running_) {
      TrialRecord& t = trials_[static_cast<std::size_t>(id)];
      if (std::optional<MetricPoint> m = last_metric(run_dir(id), c_.metric)) t.step = m->step, t.metric = m->value;
    }
  }

  SweepResult finish(double cpu_s) {
    SweepResult r;
    r.cpu_s = cpu_s;
    r.interrupted = interrupted_;
    r.trials = static_cast<int>(trials_.size());
    for (const TrialRecord& t : trials_) {
      r.completed += t.state == TrialState::completed;
      r.stopped += t.state == TrialState::stopped;
      r.failed += t.state == TrialState::failed;
      if (!t.metric || t.state == TrialState::failed) continue;
      const bool better = c_.maximize ? *t.metric > r.best_metric : *t.metric < r.best_metric;
      if (r.best_trial < 0 || better) r.best_trial = t.id, r.best_metric = *t.metric;
    }
    table_.final(trials_, r.best_trial);
    if (r.best_trial >= 0) {
      const TrialRecord& best = trials_[static_cast<std::size_t>(r.best_trial)];
      std::error_code ec;
      fs::copy_file(run_dir(best.id) / "config.yaml", dir_ / "best.yaml", fs::copy_options::overwrite_existing, ec);
      nlohmann::json j = {{"trial", best.id}, {"run_dir", run_dir(best.id).string()}, {"metric", c_.metric},
                          {"value", best.metric.value_or(0)}, {"step", best.step}};
      for (const auto& [k, v] : best.params) j["params"][k] = to_yaml(v);
      std::ofstream(dir_ / "best.json") << j.dump(2) << '\n';
      fmt::print(o_.out, "best: {} {} {} {:.4f} at step {}; its config: {}\n", trial_name(best.id),
                 describe(best.params), c_.metric, r.best_metric, best.step, (dir_ / "best.yaml").string());
    } else {
      fmt::print(o_.out, "no trial produced a result: see the logs in {}\n", (dir_ / "logs").string());
    }
    fmt::print(o_.out, "{} trial(s): {} completed, {} stopped early, {} failed; sweep.jsonl in {}\n", r.trials,
               r.completed, r.stopped, r.failed, dir_.string());
    std::fflush(o_.out);
    return r;
  }

  const SweepOptions& o_;
  const SweepConfig& c_;
  fs::path dir_;
  LiveTable table_;
  config::JobConfig job_;
  std::vector<std::string> overrides_;
  std::optional<Asha> asha_;
  std::vector<TrialRecord> trials_;
  std::unique_ptr<SweepLog> log_;
  int planned_ = 0;
  bool fork_ = false;
  bool engine_warm_ = false;
  bool data_loaded_ = false;
  std::shared_ptr<const train::Datasets> data_;
  std::map<int, std::unique_ptr<Trial>> running_;
  std::map<int, std::int64_t> targets_;
  Clock::time_point last_refresh_{};
  bool interrupted_ = false;
};

}  // namespace

SweepResult run_sweep(const SweepOptions& options) {
  TRIB_CHECK(!options.executable.empty(), InvalidArgument, "run_sweep: no trib executable to run trials with");
  Sweep sweep(options);
  return sweep.run();
}

}  // namespace trib::sweep
