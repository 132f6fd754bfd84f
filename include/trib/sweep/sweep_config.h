// A sweep file: a base job, a search space over the job's keys, a search algorithm, a metric
// and a budget. docs/sweeps.md describes every key.
#pragma once

#include <cstdint>
#include <string>

#include "trib/sweep/asha.h"
#include "trib/sweep/search_space.h"

namespace trib::sweep {

enum class SearchKind { grid, random, asha };

struct SweepConfig {
  std::string file;  // the sweep file, for messages
  std::string name = "sweep";
  std::string job;   // the base job file (absolute)
  std::string metric = "accuracy";  // accuracy, loss (test split), train_accuracy, train_loss
  bool maximize = true;
  SearchKind search = SearchKind::random;
  std::uint64_t seed = 1;
  std::int64_t steps = 0;  // each trial's length in steps; 0: the job's own (not with asha)
  int slots = 1;           // trials at once
  int threads = 0;         // threads per trial (threads.intra); 0: cores / slots
  int trials = 0;          // budget.trials; 0: the grid's size (a grid space), else required
  double time_s = 0;       // budget.time_s; 0: no limit
  std::int64_t grace_period = 0;  // asha: first rung, in steps (0: steps / 9)
  double reduction_factor = 3;    // asha
  AshaRule asha_rule = AshaRule::stopping;  // asha.rule: Ray Tune's (decided on arrival) or the paper's
  SearchSpace space;
};

// Reads and checks a sweep file. Every space key is tried on the base job, so that a key
// the job does not have is named with the job parser's suggestion. Throws InvalidArgument.
SweepConfig load_sweep_config(const std::string& path);
SweepConfig parse_sweep_config(const std::string& yaml_text, const std::string& origin, const std::string& base_dir);

// How many trials the sweep runs.
int planned_trials(const SweepConfig& c);
// Trial `index`'s parameters.
Params trial_params(const SweepConfig& c, int index);

}  // namespace trib::sweep
