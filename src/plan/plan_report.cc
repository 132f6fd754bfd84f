#include "plan/plan_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace trib::plan {
namespace {

std::vector<int> worker_counts(int hosts) {
  std::vector<int> out;
  for (int w = 1; w <= hosts; w *= 2) out.push_back(w);
  if (out.back() != hosts) out.push_back(hosts);
  return out;
}

std::string describe(const Candidate& c) {
  std::string s = c.strategy == Strategy::allreduce ? fmt::format("allreduce{}", c.bf16 ? " with bf16 gradients" : "")
                                                    : fmt::format("{} with {} server(s)", to_string(c.strategy), c.servers);
  return fmt::format("{} on {} worker(s) at batch {}", s, c.workers, c.batch);
}

// The fields naming a kind of cluster, without its worker count.
std::string kind_fields(const Candidate& c) {
  return fmt::format("strategy={} compression={} ps={} batch={}", to_string(c.strategy), c.bf16 ? "bf16" : "none",
                     c.servers, c.batch);
}

std::string line_fields(const Candidate& c) { return fmt::format("workers={} {}", c.workers, kind_fields(c)); }

}  // namespace

std::vector<PlanEntry> enumerate(const JobCosts& costs, const PlanOptions& o) {
  std::vector<PlanEntry> out;
  for (std::int64_t batch : o.batches) {
    for (int w : worker_counts(o.hosts)) {
      for (bool bf16 : {false, true}) {
        Candidate c{Strategy::allreduce, bf16, w, 0, batch};
        out.push_back({c, predict(costs, o.host, o.link, c, o.behaviour)});
      }
      for (Strategy s : {Strategy::ps_sync, Strategy::ps_async}) {
        for (int k = 1; k <= w && w + k <= o.hosts; k *= 2) {
          Candidate c{s, false, w, k, batch};
          out.push_back({c, predict(costs, o.host, o.link, c, o.behaviour)});
        }
      }
    }
  }
  return out;
}

int saturation_workers(const JobCosts& costs, const PlanOptions& o, Candidate c) {
  for (int w = 1; w <= o.hosts; ++w) {
    if (c.strategy != Strategy::allreduce && w + c.servers > o.hosts) break;
    c.workers = w;
    const Prediction p = predict(costs, o.host, o.link, c, o.behaviour);
    if (std::max(p.worker_link_s, p.server_link_s) > p.compute_s) return w;
  }
  return 0;
}

Recommendation recommend(const std::vector<PlanEntry>& entries, const PlanOptions& o) {
  // Within 2% of each other's images/s, fewer hosts win.
  auto better = [](const PlanEntry& a, const PlanEntry& b) {
    const double ia = a.prediction.images_per_s, ib = b.prediction.images_per_s;
    const int ha = a.candidate.workers + a.candidate.servers, hb = b.candidate.workers + b.candidate.servers;
    if (ia > ib * 1.02) return true;
    if (ib > ia * 1.02) return false;
    return ha != hb ? ha < hb : ia > ib;
  };
  const PlanEntry* best = nullptr;
  bool efficient = false;
  for (const PlanEntry& e : entries) {
    const bool ok = e.prediction.efficiency >= o.min_efficiency;
    if (best == nullptr || (ok && !efficient) || (ok == efficient && better(e, *best))) {
      best = &e;
      efficient = ok;
    }
  }
  Recommendation r{*best, ""};
  const Prediction& p = best->prediction;
  r.reason = fmt::format("{}: {:.0f} images/s at efficiency {:.2f}", describe(best->candidate), p.images_per_s, p.efficiency);
  if (!efficient) r.reason += fmt::format(" (nothing reaches efficiency {:.2f} on this link)", o.min_efficiency);
  // What the next larger cluster of the same kind would give, and what holds it back.
  const PlanEntry* next = nullptr;
  for (const PlanEntry& e : entries) {
    const Candidate &a = e.candidate, &b = best->candidate;
    if (a.strategy == b.strategy && a.bf16 == b.bf16 && a.batch == b.batch && a.servers == b.servers &&
        a.workers > b.workers && (next == nullptr || a.workers < next->candidate.workers))
      next = &e;
  }
  if (next != nullptr)
    r.reason += fmt::format("; {} workers would give {:.0f} images/s at efficiency {:.2f}, limited by {}",
                            next->candidate.workers, next->prediction.images_per_s, next->prediction.efficiency,
                            next->prediction.bottleneck);
  else
    r.reason += fmt::format("; limited by {}", p.bottleneck);
  return r;
}

void print_plan(std::FILE* out, const std::string& job_name, const JobCosts& costs, const PlanOptions& o) {
  fmt::print(out, "plan job={} parameter_bytes={} hosts={} cores_per_host={:g} link={} link_bytes_per_s={:.0f} latency_us={:g}\n",
             job_name, costs.parameter_bytes, o.hosts, o.host.cores, o.link_text, o.link.bytes_per_s,
             o.link.latency_s * 1e6);
  for (const auto& [batch, s] : costs.step_s_one_core)
    fmt::print(out, "plan compute batch={} step_ms_one_core={:.2f} step_ms_per_host={:.2f}\n", batch, s * 1e3,
               s / o.host.cores * 1e3);
  // When backprop hands each gradient over (a fraction of the step; the allreduce's timeline).
  for (const auto& [batch, grads] : costs.gradients) {
    std::vector<std::string> at;
    for (const GradientTiming& g : grads) at.push_back(fmt::format("{}:{:.2f}", g.bytes, g.ready));
    fmt::print(out, "plan gradients batch={} bytes_ready_at={}\n", batch, fmt::join(at, ","));
  }
  for (const auto& [k, imbalance] : costs.server_imbalance)
    fmt::print(out, "plan placement ps={} max_over_mean={:.2f}\n", k, imbalance);
  std::vector<PlanEntry> entries = enumerate(costs, o);
  for (const PlanEntry& e : entries) {
    const Prediction& p = e.prediction;
    fmt::print(out,
               "plan {} step_ms={:.1f} images_per_s={:.0f} efficiency={:.2f} bound_images_per_s={:.0f} "
               "bottleneck={}\n",
               line_fields(e.candidate), p.step_s * 1e3, p.images_per_s, p.efficiency, p.bound_images_per_s, p.bottleneck);
  }
  for (std::int64_t batch : o.batches) {
    std::vector<Candidate> kinds{{Strategy::allreduce, false, 1, 0, batch}, {Strategy::allreduce, true, 1, 0, batch}};
    for (int k = 1; k <= 2 && k < o.hosts; ++k) kinds.push_back({Strategy::ps_async, false, 1, k, batch});
    for (const Candidate& c : kinds) {
      const int w = saturation_workers(costs, o, c);
      fmt::print(out, "plan saturation {} link={} saturates_at_workers={}\n", kind_fields(c), o.link_text,
                 w == 0 ? fmt::format("none_up_to_{}", o.hosts) : std::to_string(w));
    }
  }
  Recommendation r = recommend(entries, o);
  const Prediction& p = r.entry.prediction;
  fmt::print(out, "plan recommend {} images_per_s={:.0f} efficiency={:.2f} reason=\"{}\"\n", line_fields(r.entry.candidate),
             p.images_per_s, p.efficiency, r.reason);
  // The fastest of all, when the sweet spot gave some of it up for efficiency.
  const PlanEntry* fastest = &entries.front();
  for (const PlanEntry& e : entries)
    if (e.prediction.images_per_s > fastest->prediction.images_per_s) fastest = &e;
  if (fastest->prediction.images_per_s > p.images_per_s * 1.02)
    fmt::print(out, "plan fastest {} images_per_s={:.0f} efficiency={:.2f}\n", line_fields(fastest->candidate),
               fastest->prediction.images_per_s, fastest->prediction.efficiency);
}

}  // namespace trib::plan
