#include "config/derived_settings.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::config {

JobConfig derive_settings(const JobConfig& job, const RunFacts& facts) {
  TRIB_CHECK(facts.workers >= 1 && facts.total_steps >= 0, InvalidArgument,
             "derive_settings: {} workers, {} steps", facts.workers, facts.total_steps);
  ScheduleConfig s = job.schedule;
  std::vector<std::string> derived;  // as overrides: "key=value"
  auto derive = [&](const std::string& key, const auto& value) {
    derived.push_back(fmt::format("schedule.{}={}", key, value));
  };
  const bool allreduce = job.strategy.name == StrategyName::allreduce && facts.workers > 1;
  if (allreduce && !job.has("schedule.linear_scaling")) {
    s.linear_scaling = true;
    derive("linear_scaling", "true");
  }
  if (s.linear_scaling) {
    if (s.global_batch == 0) derive("global_batch", s.global_batch = job.training.batch * facts.workers);
    if (s.base_batch == 0) derive("base_batch", s.base_batch = job.training.batch);
    if (allreduce && !job.has("schedule.warmup_steps")) derive("warmup_steps", s.warmup_steps = 100);
    if (allreduce && !job.has("schedule.warmup_start_factor"))
      derive("warmup_start_factor", static_cast<float>(static_cast<double>(s.base_batch) / s.global_batch));
  }
  if (s.name == "cosine" && s.total_steps == 0) {
    TRIB_CHECK(facts.total_steps > 0, InvalidArgument,
               "config {}: schedule 'cosine' needs a length: set schedule.total_steps, or training.steps for a stream",
               job.source_file);
    derive("total_steps", std::max<std::int64_t>(1, facts.total_steps - s.warmup_steps));
  }
  if (derived.empty()) return job;
  return parse_job_config(job.resolved_yaml, job.source_file, derived);
}

}  // namespace trib::config
