// Every combination of strategy, workers, servers and batch a cluster of `hosts` allows,
// predicted by the step model; the sweet spot and where each link saturates.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "plan/step_model.h"

namespace trib::plan {

struct PlanOptions {
  int hosts = 8;
  Hosts host;
  Link link;
  std::string link_text = "1gbit";  // as the user wrote it, for the report
  std::vector<std::int64_t> batches;
  Behaviour behaviour;
  // The sweet spot keeps each added worker worth at least this much of a worker alone.
  double min_efficiency = 0.75;
};

struct PlanEntry {
  Candidate candidate;
  Prediction prediction;
};

// Workers 1, 2, 4, ... and `hosts` itself; parameter servers 1, 2, 4, ... up to the workers,
// each on its own host (workers + servers <= hosts); allreduce with f32 and bf16.
std::vector<PlanEntry> enumerate(const JobCosts& costs, const PlanOptions& options);

struct Recommendation {
  PlanEntry entry;
  std::string reason;
};

// The most images/s among entries at least min_efficiency efficient (fewer hosts on a tie),
// else the most images/s; with why, and what limits a larger cluster.
Recommendation recommend(const std::vector<PlanEntry>& entries, const PlanOptions& options);

// The fewest workers at which the link, not compute, sets the pace of `c` (its workers
// ignored) even with perfect overlap; 0 when none up to options.hosts.
int saturation_workers(const JobCosts& costs, const PlanOptions& options, Candidate c);

// The report `trib plan` prints: one `plan ...` line per fact, then the recommendation.
void print_plan(std::FILE* out, const std::string& job_name, const JobCosts& costs, const PlanOptions& options);

}  // namespace trib::plan
