// What the sweep knows of one trial: its parameters, its results at each stop, its state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trib/sweep/search_space.h"

namespace trib::sweep {

enum class TrialState {
  pending,    // created, or promoted at a rung: waits for a slot
  running,
  waiting,    // at its rung, with its checkpoint, until promoted (ASHA's promotion rule)
  completed,  // ran all its steps
  stopped,    // stopped at a rung by ASHA, or by the time budget
  failed,
};

const char* state_name(TrialState s);
TrialState parse_state(const std::string& name);  // throws Corruption for an unknown one

struct TrialRecord {
  int id = 0;
  Params params;
  TrialState state = TrialState::pending;
  std::int64_t step = 0;          // the step of the last result (live: of the last evaluation)
  std::optional<double> metric;   // the last result
  std::string note;               // why it stopped or failed
  double cpu_s = 0;               // CPU time (user + system) of its processes that have ended
  bool finished() const {
    return state == TrialState::completed || state == TrialState::stopped || state == TrialState::failed;
  }
};

// "trial-0007"
std::string trial_name(int id);

}  // namespace trib::sweep
