#include "app/ps_metrics.h"

namespace trib::app {

void collect_ps_stats(monitor::MetricsRegistry& registry, const ps::PsServer& server) {
  registry.add_collector([&server](monitor::MetricsRegistry& r) {
    const ps::PsStats s = server.stats();
    r.counter("trib_ps_bytes_total", "Bytes this parameter server received and sent, by direction.",
              {{"direction", "in"}})
        .set_total(double(s.bytes_in));
    r.counter("trib_ps_bytes_total", "", {{"direction", "out"}}).set_total(double(s.bytes_out));
    r.counter("trib_ps_requests_total", "Requests served (pulls, pushes, control).").set_total(double(s.requests));
    r.counter("trib_ps_updates_total", "Updates applied.").set_total(double(s.applied));
    r.counter("trib_ps_late_drops_total", "Pushes dropped as too stale (bounded staleness, sync rounds passed).")
        .set_total(double(s.dropped_late));
    r.counter("trib_ps_refused_total", "Requests refused: malformed, oversized, or from a replaced worker.")
        .set_total(double(s.refused));
    r.counter("trib_ps_nonfinite_drops_total", "Pushes of non-finite gradients dropped.")
        .set_total(double(s.dropped_nonfinite));
    r.counter("trib_ps_rollbacks_total", "Rollbacks to a checkpoint (a restore of a newer generation).")
        .set_total(double(s.rollbacks));
    r.gauge("trib_ps_workers_training", "Workers still training (not done, not lost).")
        .set(double(s.workers_training));
    r.gauge("trib_ps_max_clock_gap", "Most steps a pull ran ahead of the slowest worker (bounded staleness).")
        .set(double(s.max_clock_gap));
    // Bins 0..14 are exact; the last holds 15 and more, counted as 15 in the sum.
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;
    double sum = 0;
    for (std::size_t i = 0; i < s.staleness.size(); ++i) {
      if (i + 1 < s.staleness.size()) bounds.push_back(double(i));
      counts.push_back(s.staleness[i]);
      sum += double(i) * double(s.staleness[i]);
    }
    r.histogram("trib_ps_staleness", "Updates applied between a worker's pull and its push's apply (15+: last bucket).",
                bounds)
        .set_counts(counts, sum);
  });
}

}  // namespace trib::app
