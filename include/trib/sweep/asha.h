// Asynchronous successive halving (Li et al., "A System for Massively Parallel
// Hyperparameter Tuning"), the rule of Ray Tune's AsyncHyperBandScheduler with one bracket:
// rungs at grace_period * reduction_factor^k steps below max_steps. A trial reaching a rung
// continues only if its metric is at least the (1 - 1/reduction_factor) quantile of the
// metrics recorded at that rung before it; otherwise it stops there. Nothing waits for a
// rung to fill: the first trials at a rung always continue (AshaRule::stopping).
// The paper's own rule (its Algorithm 2, AshaRule::promotion) decides when a slot frees
// instead: a trial waits at its rung, and a free slot promotes the best not-yet-promoted trial
// among the top floor(n / reduction_factor) of the n results at the highest rung that has one,
// else starts a new trial (next_promotion).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace trib::sweep {

// stopping: Ray Tune's (decided once, on arrival); promotion: Li et al.'s (trials wait).
enum class AshaRule { stopping, promotion };

const char* rule_name(AshaRule r);

class Asha {
 public:
  // Throws InvalidArgument unless 0 < grace_period <= max_steps and reduction_factor > 1.
  Asha(std::int64_t grace_period, std::int64_t max_steps, double reduction_factor, bool maximize);

  // The rungs' steps, ascending, each below max_steps.
  const std::vector<std::int64_t>& rungs() const { return rungs_; }
  // Where a trial at `step` stops next: the first rung above it, else max_steps.
  std::int64_t next_stop(std::int64_t step) const;
  std::int64_t max_steps() const { return max_steps_; }

  // A trial reached rung step `rung` with `metric`: records it and says whether it goes on.
  bool on_rung(int trial, std::int64_t rung, double metric);
  // Records a result without deciding (the promotion rule; replaying a sweep's log on
  // --resume). A NaN (a diverged trial) is recorded as the worst result.
  void record(int trial, std::int64_t rung, double metric);

  // The promotion rule: the trial a free slot continues, and the rung it continues from:
  // the highest rung whose top floor(n / reduction_factor) results hold a trial not yet
  // promoted from it, the best such trial (ties: the lowest id). Nothing: start a new trial.
  std::optional<std::pair<int, std::int64_t>> next_promotion() const;
  // The trial goes on past `rung` (promoted, or continued under the stopping rule).
  void mark_promoted(int trial, std::int64_t rung) { promoted_[rung].insert(trial); }
  bool promoted(int trial, std::int64_t rung) const;
  // The cut-off a new result at `rung` must reach (in "larger is better" terms), or nothing
  // while the rung is empty.
  std::optional<double> cutoff(std::int64_t rung) const;

  // numpy's percentile with linear interpolation, q in [0, 100]; `values` not empty.
  static double percentile(std::vector<double> values, double q);

 private:
  std::int64_t max_steps_;
  double reduction_factor_;
  bool maximize_;
  std::vector<std::int64_t> rungs_;
  std::map<std::int64_t, std::map<int, double>> recorded_;  // rung -> trial -> metric (maximised)
  std::map<std::int64_t, std::set<int>> promoted_;          // rung -> trials gone on past it
};

}  // namespace trib::sweep
