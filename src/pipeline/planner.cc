#include "trib/pipeline/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "trib/core/error.h"
#include "trib/pipeline/schedule.h"

namespace trib::pipeline {

namespace {

constexpr double kMb = 1024.0 * 1024.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Best cut of layers into `stages`: the smallest largest `cost(range, stage)`, and among cuts
// as good, the fewest bytes crossing the cuts (`cut(i)`: the bytes entering layer i). Returns
// the partition and that largest cost (inf when none is finite).
template <typename Cost, typename Cut>
std::pair<Partition, double> min_max_cut(int layers, int stages, const Cost& cost, const Cut& cut) {
  using Value = std::pair<double, double>;  // (slowest, bytes across the cuts so far)
  const auto L = static_cast<std::size_t>(layers), K = static_cast<std::size_t>(stages);
  // best[k][j]: the first j layers in k stages; from[k][j]: where stage k - 1 begins.
  std::vector<std::vector<Value>> best(K + 1, std::vector<Value>(L + 1, Value{kInf, kInf}));
  std::vector<std::vector<int>> from(K + 1, std::vector<int>(L + 1, -1));
  best[0][0] = {0, 0};
  for (std::size_t k = 1; k <= K; ++k)
    for (std::size_t j = k; j <= L; ++j)
      for (std::size_t i = k - 1; i < j; ++i) {
        if (best[k - 1][i].first == kInf) continue;
        const double c = cost(StageRange{static_cast<int>(i), static_cast<int>(j)}, static_cast<int>(k - 1));
        const Value v{std::max(best[k - 1][i].first, c), best[k - 1][i].second + (i > 0 ? cut(static_cast<int>(i)) : 0)};
        if (v < best[k][j]) best[k][j] = v, from[k][j] = static_cast<int>(i);
      }
  Partition p;
  if (best[K][L].first == kInf) return {p, kInf};
  p.stages.resize(K);
  int end = layers;
  for (std::size_t k = K; k >= 1; --k) {
    const int begin = from[k][static_cast<std::size_t>(end)];
    p.stages[k - 1] = {begin, end};
    end = begin;
  }
  return {p, best[K][L].first};
}

}  // namespace

double stage_ms(const std::vector<LayerCost>& costs, StageRange r, bool last) {
  double ms = 0;
  for (int i = r.begin; i < r.end; ++i) {
    const LayerCost& c = costs[static_cast<std::size_t>(i)];
    ms += last ? c.ms - c.forward_ms : c.ms;
  }
  return ms;
}

double stage_memory_mb(const std::vector<LayerCost>& costs, StageRange r, int stage, const PlanOptions& o) {
  double bytes = 0, work = 0;
  for (int i = r.begin; i < r.end; ++i) {
    const LayerCost& c = costs[static_cast<std::size_t>(i)];
    bytes += 2.0 * static_cast<double>(c.parameter_bytes) + static_cast<double>(c.optimizer_bytes);
    work = std::max(work, static_cast<double>(c.work_bytes));
  }
  const int kept = max_in_flight(stage_tasks(o.schedule, stage, o.stages, o.micro_batches));
  bytes += kept * static_cast<double>(costs[static_cast<std::size_t>(r.begin)].input_bytes) + work;
  return bytes / kMb;
}

Plan estimate(const std::vector<LayerCost>& costs, const Partition& partition, const PlanOptions& o) {
  Plan plan;
  plan.partition = partition;
  for (int s = 0; s < partition.stage_count(); ++s) {
    const StageRange r = partition.stages[static_cast<std::size_t>(s)];
    plan.stages.push_back({r, stage_ms(costs, r, s + 1 == partition.stage_count()), stage_memory_mb(costs, r, s, o)});
    if (s + 1 < partition.stage_count()) plan.cut_bytes.push_back(costs[static_cast<std::size_t>(r.end - 1)].output_bytes);
  }
  return plan;
}

Plan plan_partition(const std::vector<LayerCost>& costs, const PlanOptions& o) {
  const int layers = static_cast<int>(costs.size());
  TRIB_CHECK(o.stages >= 1 && o.stages <= layers, InvalidArgument,
             "pipeline: {} stage(s) for a model of {} layer(s): each stage needs at least one layer", o.stages, layers);
  auto memory = [&](StageRange r, int s) { return stage_memory_mb(costs, r, s, o); };
  auto time = [&](StageRange r, int s) {
    return o.memory_mb > 0 && memory(r, s) > o.memory_mb ? kInf : stage_ms(costs, r, s + 1 == o.stages);
  };
  auto cut = [&](int i) { return static_cast<double>(costs[static_cast<std::size_t>(i)].input_bytes); };
  auto [partition, slowest] = min_max_cut(layers, o.stages, time, cut);
  if (slowest == kInf) {
    const double smallest = min_max_cut(layers, o.stages, memory, cut).second;
    throw InvalidArgument(fmt::format(
        "strategy.memory_mb {} is too small: no cut of the model's {} layers into {} stages fits it; the smallest "
        "limit that works is {:.1f} MB",
        o.memory_mb, layers, o.stages, smallest));
  }
  return estimate(costs, partition, o);
}

Plan plan_partition(const std::vector<LayerCost>& costs, const PlanOptions& o, const StageTimer& timer) {
  const Plan summed = plan_partition(costs, o);
  if (!timer || o.stages < 1) return summed;
  const int layers = static_cast<int>(costs.size());
  // The candidate stages: from a summed cut point moved by up to kRefineShift to the next one
  // moved likewise (the model's ends stay where they are).
  std::vector<int> bounds{0};
  for (const StageEstimate& s : summed.stages) bounds.push_back(s.layers.end);
  std::map<std::pair<int, int>, double> measured;
  for (int k = 0; k < o.stages; ++k)
    for (int db = -kRefineShift; db <= kRefineShift; ++db)
      for (int de = -kRefineShift; de <= kRefineShift; ++de) {
        const int b = k == 0 ? 0 : bounds[static_cast<std::size_t>(k)] + db;
        const int e = k + 1 == o.stages ? layers : bounds[static_cast<std::size_t>(k + 1)] + de;
        // Stage k needs k layers before it and K - 1 - k after it.
        if (b < k || e > layers - (o.stages - 1 - k) || b >= e || measured.count({b, e})) continue;
        measured[{b, e}] = timer(StageRange{b, e}, e == layers);
      }
  auto time = [&](StageRange r, int s) {
    const auto it = measured.find({r.begin, r.end});
    if (it == measured.end() || (o.memory_mb > 0 && stage_memory_mb(costs, r, s, o) > o.memory_mb)) return kInf;
    return it->second;
  };
  auto cut = [&](int i) { return static_cast<double>(costs[static_cast<std::size_t>(i)].input_bytes); };
  const Partition partition = min_max_cut(layers, o.stages, time, cut).first;
  Plan plan = estimate(costs, partition, o);
  for (StageEstimate& s : plan.stages) s.ms = measured.at({s.layers.begin, s.layers.end});
  return plan;
}

std::string Plan::table(const std::vector<LayerCost>& costs) const {
  std::string out = fmt::format("pipeline plan ({}):\n  {:<8} {:<28} {:>10} {:>10}\n",
                                planned ? "planner" : "stage: on layers", "stage", "layers", "est ms", "est MB");
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const StageRange r = stages[s].layers;
    const std::string names = r.size() == 1 ? costs[static_cast<std::size_t>(r.begin)].name
                                            : fmt::format("{}..{}", costs[static_cast<std::size_t>(r.begin)].name,
                                                          costs[static_cast<std::size_t>(r.end - 1)].name);
    out += fmt::format("  stage {:<2} {:<28} {:>10.3f} {:>10.1f}\n", s, fmt::format("{}-{} ({})", r.begin, r.end - 1, names),
                       stages[s].ms, stages[s].mb);
    if (s < cut_bytes.size())
      out += fmt::format("    cut {}|{}: {} bytes per micro-batch forward, as many back\n", s, s + 1, cut_bytes[s]);
  }
  return out;
}

}  // namespace trib::pipeline
