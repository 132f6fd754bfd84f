#include "plan/plan_command.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "plan/calibrate.h"
#include "plan/plan_report.h"
#include "trib/core/error.h"

namespace trib::plan {
namespace {

// "64=29.8" -> {64, 0.0298}; throws naming the text.
std::pair<std::int64_t, double> parse_step_ms(const std::string& text) {
  const std::size_t eq = text.find('=');
  try {
    if (eq != std::string::npos) {
      std::size_t a = 0, b = 0;
      const std::int64_t batch = std::stoll(text.substr(0, eq), &a);
      const double ms = std::stod(text.substr(eq + 1), &b);
      if (a == eq && b == text.size() - eq - 1 && batch > 0 && ms > 0) return {batch, ms / 1e3};
    }
  } catch (const std::exception&) {
  }
  throw InvalidArgument(fmt::format("--step-ms '{}': expected BATCH=MILLISECONDS, e.g. 64=29.8", text));
}

}  // namespace

int run_plan(const PlanArgs& a) {
  if (a.hosts < 1 || a.hosts > 4096) throw InvalidArgument(fmt::format("--hosts {}: expected 1..4096", a.hosts));
  if (!(a.cores_per_host > 0)) throw InvalidArgument(fmt::format("--cores-per-host {}: expected more than 0", a.cores_per_host));
  if (a.latency_us < 0) throw InvalidArgument(fmt::format("--latency-us {}: expected 0 or more", a.latency_us));
  config::JobConfig job = config::load_job_config(a.config, a.overrides);
  PlanOptions o;
  o.hosts = a.hosts;
  o.host.cores = a.cores_per_host;
  if (!(a.goodput > 0 && a.goodput <= 1)) throw InvalidArgument(fmt::format("--goodput {}: expected more than 0, at most 1", a.goodput));
  o.link = {parse_link_rate(a.link), a.latency_us * 1e-6, a.goodput};
  o.link_text = a.link;
  o.behaviour.cpu_s_per_byte = a.cpu_ns_per_byte * 1e-9;
  o.behaviour.ps_pull_ahead = job.strategy.ps_pull_ahead;  // the job's own async ps
  std::vector<int> servers;
  for (int k = 1; k < a.hosts; k *= 2) servers.push_back(k);
  JobCosts costs;
  if (!a.step_ms.empty()) {
    costs = job_shape(job, servers);
    for (const std::string& s : a.step_ms) costs.step_s_one_core.insert(parse_step_ms(s));
    for (const auto& [batch, s] : costs.step_s_one_core) o.batches.push_back(batch);
    // The allreduce's timeline needs when each gradient is ready: a short run per batch.
    if (a.gradient_timing) measure_gradient_timing(job, costs, std::min(a.calibrate_seconds, 0.5));
  } else {
    o.batches = a.batches;
    if (o.batches.empty()) o.batches = {64, 256, job.training.batch};
    std::sort(o.batches.begin(), o.batches.end());
    o.batches.erase(std::unique(o.batches.begin(), o.batches.end()), o.batches.end());
    for (std::int64_t b : o.batches)
      if (b < 1) throw InvalidArgument(fmt::format("--batches: {} is not a batch size", b));
    std::fprintf(stderr, "trib plan: measuring %s's compute on one thread for %zu batch size(s)...\n", job.name.c_str(),
                 o.batches.size());
    costs = calibrate(job, {o.batches, servers, a.calibrate_seconds});
  }
  print_plan(stdout, job.name, costs, o);
  return 0;
}

}  // namespace trib::plan
