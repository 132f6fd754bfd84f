// The planner's measured costs: the job's model trained here on one thread for a moment per
// batch size (synthetic data, SGD: compute only), and its variables' size and placement.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step_model.h"
#include "trib/config/job_config.h"

namespace trib::plan {

struct CalibrationOptions {
  std::vector<std::int64_t> batches;  // each gets its own measurement
  std::vector<int> server_counts;     // placement's imbalance for each
  double seconds_per_batch = 1.0;     // timed steps (after warm-up) fill about this long
};

// The job's costs on this machine's one core. Steps are timed in chunks; the median chunk's
// step time is taken, as the benchmarks do.
JobCosts calibrate(const config::JobConfig& job, const CalibrationOptions& options);

// Without measuring: the variables' bytes, the placement's imbalance per server count and
// the allreduce's bucket count (for given step times, as tests and `--step-ms` use).
JobCosts job_shape(const config::JobConfig& job, const std::vector<int>& server_counts);

// For given step times (`--step-ms`): when each gradient is ready within a step, measured
// here for each of those batch sizes (a fraction of the step, so it carries over to hosts of
// another speed).
void measure_gradient_timing(const config::JobConfig& job, JobCosts& costs, double seconds);

}  // namespace trib::plan
