// Settings a run derives from its job and from what only the run knows (how many workers
// share it, how many steps it takes). Each derived value applies only where the job left
// its key out, and is written into the result's resolved_yaml, so that the run directory's
// config.yaml is exactly what ran: reading it back gives the same settings.
//
// What is derived (keys the job sets are never changed):
//   - strategy allreduce with several workers: schedule.linear_scaling true (Goyal et al.),
//     and with it schedule.warmup_steps 100 and schedule.warmup_start_factor
//     base_batch / global_batch (the warm-up starts from the single-worker rate);
//   - linear scaling on: schedule.global_batch batch x workers, schedule.base_batch batch;
//   - schedule cosine: schedule.total_steps, the run's steps after the warm-up.
#pragma once

#include <cstdint>

#include "trib/config/job_config.h"

namespace trib::config {

struct RunFacts {
  int workers = 1;
  // The run's length in steps; 0: not known in advance (a stream without training.steps),
  // which a cosine schedule without schedule.total_steps refuses.
  std::int64_t total_steps = 0;
};

// The job as it runs. Idempotent: a job it returned derives nothing more.
JobConfig derive_settings(const JobConfig& job, const RunFacts& facts);

}  // namespace trib::config
