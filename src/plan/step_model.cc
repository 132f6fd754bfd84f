#include "plan/step_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::plan {

std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::ps_sync: return "ps_sync";
    case Strategy::ps_async: return "ps_async";
    case Strategy::allreduce: return "allreduce";
  }
  return "?";
}

double parse_link_rate(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  const std::string unit = text.substr(digits);
  double scale = unit == "bit" ? 1 : unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : unit == "gbit" ? 1e9 : 0;
  double value = 0;
  try {
    std::size_t used = 0;
    value = digits == 0 ? 0 : std::stod(text.substr(0, digits), &used);
    if (used != digits) value = 0;  // "1.2.3"
  } catch (const std::exception&) {
    value = 0;
  }
  if (scale == 0 || !(value > 0))
    throw InvalidArgument(fmt::format("link rate '{}': expected a number and bit, kbit, mbit or gbit, e.g. 1gbit", text));
  return value * scale / 8;
}

Prediction predict(const JobCosts& costs, const Hosts& hosts, const Link& link, const Candidate& c,
                   const Behaviour& b) {
  if (c.workers < 1) throw InvalidArgument(fmt::format("plan: workers {}: expected at least 1", c.workers));
  if (!(hosts.cores > 0)) throw InvalidArgument(fmt::format("plan: cores per host {}: expected more than 0", hosts.cores));
  if (!(link.bytes_per_s > 0)) throw InvalidArgument("plan: the link's rate must be more than 0");
  const bool ps = c.strategy != Strategy::allreduce;
  if (ps && c.servers < 1) throw InvalidArgument(fmt::format("plan: {} needs at least 1 server", to_string(c.strategy)));
  auto it = costs.step_s_one_core.find(c.batch);
  if (it == costs.step_s_one_core.end())
    throw InvalidArgument(fmt::format("plan: no measured compute for batch {}", c.batch));

  const double n = c.workers;
  const double s = static_cast<double>(costs.parameter_bytes);
  Prediction p;
  double worker_bytes = 0;  // sent plus received by one worker: CPU for frames and copies
  double overlap = 0;
  double latency = 0;
  if (ps) {
    const int k = c.servers;
    auto imb = costs.server_imbalance.find(k);
    const double max_server_share = s / k * (imb == costs.server_imbalance.end() ? 1.0 : imb->second);
    // A worker pushes every gradient and pulls every value: s out and s in. Pushed before the
    // pull, the two take turns on the link instead of using both directions at once.
    p.worker_link_s = (b.ps_push_pull_serial ? 2 * s : s) / link.bytes_per_s;
    // Every worker's push to and pull from the busiest server cross that server's link. With
    // each worker's push and pull taking turns, synchronous workers push together and pull
    // together, so the server's two directions take turns too (2n transfers a step); async
    // workers drift apart and one worker's pull overlaps another's push, all but one
    // transfer (n + 1; fitted to the emulation, docs/scaling.md).
    const double transfers = !b.ps_push_pull_serial ? n : c.strategy == Strategy::ps_sync ? 2 * n : n + 1;
    p.server_link_s = transfers * max_server_share / link.bytes_per_s;
    worker_bytes = 2 * s;
    overlap = b.ps_overlap;
    latency = 2 * link.latency_s * (b.ps_pull_behind_push ? 1 : 2);  // round trips: one, or push's then pull's
  } else if (c.workers > 1) {
    // Ring allreduce: reduce-scatter then all-gather, 2(n-1)/n of the tensor each way.
    const double wire = 2 * (n - 1) / n * s * (c.bf16 ? 0.5 : 1.0);
    p.worker_link_s = wire / link.bytes_per_s;
    worker_bytes = 2 * wire;
    overlap = b.allreduce_overlap;
    latency = 2 * (n - 1) * link.latency_s * std::max(1, costs.allreduce_buckets);
  }
  const double compute = it->second / hosts.cores;
  p.compute_s = compute + worker_bytes * b.cpu_s_per_byte / hosts.cores;
  const double comm = std::max(p.worker_link_s, p.server_link_s) + latency;
  // Communication hides behind backprop up to the overlap's share of it; the rest adds on.
  const double hidden = std::min(comm, overlap * b.backprop_fraction * p.compute_s);
  p.step_s = p.compute_s + comm - hidden;
  p.images_per_s = n * static_cast<double>(c.batch) / p.step_s;
  p.efficiency = p.images_per_s / (n * static_cast<double>(c.batch) / compute);
  p.bound_images_per_s = n * static_cast<double>(c.batch) / std::max({compute, comm});
  // The link whose exposed time costs more than a quarter of the compute names the limit.
  p.bottleneck = comm - hidden <= 0.25 * p.compute_s         ? "compute"
                 : p.server_link_s > p.worker_link_s ? "server_link"
                                                     : "worker_link";
  return p;
}

}  // namespace trib::plan
