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

namespace {

// An allreduce step as the code runs it (collectives/gradient_exchange.h): gradients fill
// buckets from the last variable back (strategy.bucket_mb); a bucket's ring starts once its
// last gradient is ready and the link is free of the bucket before it, in order, so the
// exchange overlaps the rest of backprop; the update waits for the last bucket. Nothing
// overlaps the next forward pass, which needs the updated variables. Returns the time from
// the step's start until the last bucket is averaged.
double allreduce_timeline(const std::vector<GradientTiming>& grads, std::int64_t bucket_bytes, double compute_s,
                          double seconds_per_byte, double latency_per_bucket_s) {
  double link_free = 0;
  std::int64_t bytes = 0;
  double ready = 0;
  auto send = [&] {
    if (bytes == 0) return;
    link_free = std::max(link_free, ready * compute_s) + static_cast<double>(bytes) * seconds_per_byte +
                latency_per_bucket_s;
    bytes = 0;
    ready = 0;
  };
  for (auto g = grads.rbegin(); g != grads.rend(); ++g) {
    if (bytes > 0 && bytes + g->bytes > bucket_bytes) send();
    bytes += g->bytes;
    ready = std::max(ready, g->ready);
  }
  send();
  return link_free;
}

}  // namespace

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
  const double rate = link.bytes_per_s * std::clamp(link.goodput, 1e-3, 1.0);
  if (ps) {
    const int k = c.servers;
    auto imb = costs.server_imbalance.find(k);
    const double max_server_share = s / k * (imb == costs.server_imbalance.end() ? 1.0 : imb->second);
    // A worker pushes every gradient and pulls every value: s out and s in. Pushed before the
    // pull, the two take turns on the link instead of using both directions at once.
    const bool serial = b.ps_push_pull_serial && !(b.ps_pull_ahead && c.strategy == Strategy::ps_async);
    p.worker_link_s = (serial ? 2 * s : s) / rate;
    // Every worker's push to and pull from the busiest server cross that server's link. With
    // each worker's push and pull taking turns, synchronous workers push together and pull
    // together, so the server's two directions take turns too (2n transfers a step); async
    // workers drift apart and one worker's pull overlaps another's push, all but one
    // transfer (n + 1; fitted to the emulation, docs/scaling.md).
    const double transfers = !serial ? n : c.strategy == Strategy::ps_sync ? 2 * n : n + 1;
    p.server_link_s = transfers * max_server_share / rate;
    p.server_cpu_s = 2 * n * max_server_share * b.cpu_s_per_byte / hosts.cores;
    worker_bytes = 2 * s;
    overlap = b.ps_overlap;
    latency = 2 * link.latency_s * (b.ps_pull_behind_push ? 1 : 2);  // round trips: one, or push's then pull's
  } else if (c.workers > 1) {
    // Ring allreduce: reduce-scatter then all-gather, 2(n-1)/n of the tensor each way.
    const double wire = 2 * (n - 1) / n * s * (c.bf16 ? 0.5 : 1.0);
    p.worker_link_s = wire / rate;
    worker_bytes = 2 * wire;
    overlap = b.allreduce_overlap;
    latency = 2 * (n - 1) * link.latency_s * std::max(1, costs.allreduce_buckets);
  }
  const double compute = it->second / hosts.cores;
  const double exchange_cpu = worker_bytes * b.cpu_s_per_byte / hosts.cores;
  p.compute_s = compute + exchange_cpu;
  // A server's CPU: synchronous workers wait while it takes every push and then sends every
  // pull, so it is part of their exchange; asynchronous workers compute while it serves the
  // others, so it only caps the rate (a floor under the step, below).
  const bool server_cpu_in_exchange = c.strategy == Strategy::ps_sync;
  const double comm =
      std::max({p.worker_link_s, p.server_link_s, server_cpu_in_exchange ? p.server_cpu_s : 0.0}) + latency;
  // The exchange's CPU (encryption, copies) runs while its bytes stream over the link, so
  // the step pays the longer of the two, not their sum; either way it is at least all the
  // CPU the host spends (docs/scaling_exchange_cpu.md).
  auto timing = costs.gradients.find(c.batch);
  if (!ps && c.workers > 1 && timing != costs.gradients.end() && !timing->second.empty()) {
    double grads_done = 0;
    for (const GradientTiming& g : timing->second) grads_done = std::max(grads_done, g.ready);
    const double per_byte = 2 * (n - 1) / n * (c.bf16 ? 0.5 : 1.0) / rate;
    const double averaged =
        allreduce_timeline(timing->second, costs.bucket_bytes, compute, per_byte, 2 * (n - 1) * link.latency_s);
    // The update follows the last bucket.
    const double timeline = std::max(grads_done * compute, averaged) + (1 - grads_done) * compute;
    p.step_s = b.exchange_cpu_overlaps_wire ? std::max(p.compute_s, timeline) : timeline + exchange_cpu;
  } else {
    // Communication hides behind backprop up to the overlap's share of it; the rest adds on.
    const double hidden = std::min(comm, overlap * b.backprop_fraction * p.compute_s);
    p.step_s = b.exchange_cpu_overlaps_wire ? compute + std::max(exchange_cpu, comm - hidden)
                                            : p.compute_s + comm - hidden;
    if (!server_cpu_in_exchange) p.step_s = std::max(p.step_s, p.server_cpu_s);
  }
  p.hidden_s = std::max(0.0, p.compute_s + comm - p.step_s);
  p.images_per_s = n * static_cast<double>(c.batch) / p.step_s;
  p.efficiency = p.images_per_s / (n * static_cast<double>(c.batch) / compute);
  // Issue 14's bound: perfect overlap on the link's full rate.
  const double nominal = std::max(p.worker_link_s, p.server_link_s) * rate / link.bytes_per_s + latency;
  p.bound_images_per_s = n * static_cast<double>(c.batch) / std::max({compute, nominal});
  // What the exposed time waits on, once it costs more than a quarter of the compute.
  p.bottleneck = p.step_s - p.compute_s <= 0.25 * p.compute_s                              ? "compute"
                 : p.server_cpu_s > std::max(p.server_link_s, p.worker_link_s) ? "server_cpu"
                 : p.server_link_s > p.worker_link_s                           ? "server_link"
                                                                               : "worker_link";
  return p;
}

}  // namespace trib::plan
