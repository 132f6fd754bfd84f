#include "trial_record.h"

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::sweep {

const char* state_name(TrialState s) {
  switch (s) {
    case TrialState::pending: return "pending";
    case TrialState::running: return "running";
    case TrialState::waiting: return "waiting";
    case TrialState::completed: return "completed";
    case TrialState::stopped: return "stopped";
    case TrialState::failed: return "failed";
  }
  return "?";
}

TrialState parse_state(const std::string& name) {
  for (TrialState s : {TrialState::pending, TrialState::running, TrialState::waiting, TrialState::completed, TrialState::stopped,
                       TrialState::failed})
    if (name == state_name(s)) return s;
  throw Corruption(fmt::format("sweep.jsonl: unknown trial state '{}'", name));
}

std::string trial_name(int id) { return fmt::format("trial-{:04d}", id); }

}  // namespace trib::sweep
