#include "train/step_series.h"

namespace trib::train {

StepSeries::StepSeries(monitor::MetricsRegistry& r)
      : steps(r.counter("trib_steps_total", "Training steps this worker applied.")),
        skipped(r.counter("trib_skipped_steps_total", "Steps skipped for a non-finite gradient.")),
        examples(r.counter("trib_examples_total", "Examples in the steps this worker applied.")),
        step(r.gauge("trib_step", "The step this worker is at.")),
        loss(r.gauge("trib_loss", "The last step's training loss (batch mean).")),
        lr(r.gauge("trib_learning_rate", "The learning rate of the next step.")),
        rate(r.gauge("trib_images_per_second", "Examples per second over the last second or more.")),
        wait(r.histogram("trib_step_seconds", "Time per step, by phase: wait (for the batch), compute (forward and "
                                              "backward), exchange (the strategy's apply: push/pull or allreduce, and "
                                              "the optimizer).",
                         monitor::seconds_buckets(), {{"phase", "wait"}})),
        compute(r.histogram("trib_step_seconds", "", monitor::seconds_buckets(), {{"phase", "compute"}})),
        exchange(r.histogram("trib_step_seconds", "", monitor::seconds_buckets(), {{"phase", "exchange"}})),
        checkpoint(r.histogram("trib_checkpoint_seconds",
                               "Checkpoint durations (the chief writes; other workers agree on what it holds).",
                               monitor::seconds_buckets())) {}

void StepSeries::record(const StepSample& s) {
  steps.add(1);
  examples.add(s.examples);
  step.set(s.step);
  loss.set(s.loss);
  lr.set(s.learning_rate);
  wait.observe(s.wait_s);
  compute.observe(s.compute_s);
  exchange.observe(s.exchange_s);
}

}  // namespace trib::train
