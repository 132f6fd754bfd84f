#include "train/job_schedule.h"

#include <algorithm>

#include "trib/core/error.h"

namespace trib::train {

std::shared_ptr<const Schedule> make_job_schedule(const config::JobConfig& job, int workers, std::int64_t total_steps) {
  ScheduleConfig sc = job.schedule;
  if (sc.name == "cosine" && sc.total_steps == 0) {
    TRIB_CHECK(total_steps > 0, InvalidArgument,
               "schedule 'cosine' needs a length: set schedule.total_steps, or training.steps for a stream");
    sc.total_steps = std::max<std::int64_t>(1, total_steps - sc.warmup_steps);
  }
  if (sc.linear_scaling && sc.global_batch == 0) sc.global_batch = job.training.batch * workers;
  if (sc.linear_scaling && sc.base_batch == 0) sc.base_batch = job.training.batch;
  return make_schedule(sc, job.optimizer.lr);
}

}  // namespace trib::train
