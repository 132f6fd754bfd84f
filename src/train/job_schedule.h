// The learning-rate schedule a job asks for, with what the job leaves implicit filled in:
// one place for the file trainer and the stream trainer, so that both read `schedule:` alike.
#pragma once

#include <cstdint>
#include <memory>

#include "trib/config/job_config.h"
#include "trib/optim/schedule_config.h"

namespace trib::train {

// Fills in, where the job left them 0: cosine's total_steps (the run's steps after warm-up;
// total_steps 0 means the run has no known length, a stream without training.steps, and is
// an error for cosine), and the linear scaling rule's global batch (batch x workers) and base
// batch (the per-worker batch).
std::shared_ptr<const Schedule> make_job_schedule(const config::JobConfig& job, int workers, std::int64_t total_steps);

}  // namespace trib::train
