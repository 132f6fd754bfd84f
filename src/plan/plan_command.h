// `trib plan CONFIG --link 1gbit --hosts 32 [--cores-per-host 8]`: calibrates the job's
// compute here (or takes it from --step-ms) and prints the planner's report (plan_report.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trib::plan {

struct PlanArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string link = "1gbit";
  int hosts = 8;
  double cores_per_host = 1;
  double latency_us = 50;
  std::vector<std::int64_t> batches;  // empty: 64, 256 and the job's batch
  std::vector<std::string> step_ms;   // "BATCH=MS": measured compute on one core; skips calibration
  double cpu_ns_per_byte = 1.1;  // measured with the default encrypted wire (docs/scaling_exchange_cpu.md)
  double goodput = 0.95;  // Link::goodput
  double calibrate_seconds = 1.0;
  bool gradient_timing = true;  // with --step-ms: still measure when gradients are ready
};

int run_plan(const PlanArgs& args);

}  // namespace trib::plan
