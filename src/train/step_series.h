// The metrics registry's series a worker's step feeds, looked up once: a step then costs a few
// atomics and three short histogram locks. ObservedHooks records every applied step here;
// bench/observe_bench times the same call to bound the monitoring's own cost.
#pragma once

#include "trib/monitor/metrics_registry.h"

namespace trib::train {

// What one applied step reports.
struct StepSample {
  double examples = 0;
  double step = 0;
  double loss = 0;
  double learning_rate = 0;
  double wait_s = 0, compute_s = 0, exchange_s = 0;  // the step's phases
};

struct StepSeries {
  explicit StepSeries(monitor::MetricsRegistry& r);
  void record(const StepSample& s);

  monitor::Counter &steps, &skipped, &examples;
  monitor::Gauge &step, &loss, &lr, &rate;
  monitor::Histogram &wait, &compute, &exchange, &checkpoint;
};

}  // namespace trib::train
