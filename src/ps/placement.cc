#include "trib/ps/placement.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::ps {

std::int64_t VariableInfo::row_elements() const {
  return shape.rank() == 0 ? 1 : (shape[0] == 0 ? 0 : shape.numel() / shape[0]);
}

std::string Slice::key() const { return whole ? variable : fmt::format("{}@{}", variable, row_begin); }

PlacementStrategy parse_placement(const std::string& name) {
  if (name == "round_robin") return PlacementStrategy::round_robin;
  if (name == "greedy") return PlacementStrategy::greedy;
  if (name == "partitioned") return PlacementStrategy::partitioned;
  if (name == "balanced") return PlacementStrategy::balanced;
  throw InvalidArgument(
      fmt::format("unknown placement '{}': expected balanced, greedy, partitioned or round_robin", name));
}

std::vector<std::int64_t> Placement::bytes_per_ps() const {
  std::vector<std::int64_t> b(num_ps, 0);
  for (const Slice& s : slices) b[s.ps] += s.elements * 4;
  return b;
}

double Placement::max_mean_ratio() const {
  auto b = bytes_per_ps();
  double total = std::accumulate(b.begin(), b.end(), 0.0);
  if (total == 0) return 1.0;
  return *std::max_element(b.begin(), b.end()) / (total / num_ps);
}

std::vector<Slice> Placement::slices_of(int ps) const {
  std::vector<Slice> out;
  for (const Slice& s : slices)
    if (s.ps == ps) out.push_back(s);
  return out;
}

std::string Placement::table(const std::vector<VariableInfo>& vars) const {
  std::string out = fmt::format("{:<28} {:<14} {:>12} {:>6} {}\n", "variable", "shape", "bytes", "ps", "rows");
  for (const Slice& s : slices) {
    Shape shape;
    for (const auto& v : vars)
      if (v.name == s.variable) shape = v.shape;
    std::string rows = s.whole ? "all" : fmt::format("{}-{}", s.row_begin, s.row_end);
    out += fmt::format("{:<28} {:<14} {:>12} {:>6} {}\n", s.variable, shape.to_string(), s.elements * 4, s.ps, rows);
  }
  auto b = bytes_per_ps();
  for (int p = 0; p < num_ps; ++p) out += fmt::format("ps {}: {} bytes\n", p, b[p]);
  out += fmt::format("max/mean load: {:.3f}", max_mean_ratio());
  return out;
}

Placement place(const std::vector<VariableInfo>& vars, int num_ps, PlacementStrategy strategy,
                std::int64_t partition_bytes) {
  TRIB_CHECK(num_ps >= 1, InvalidArgument, "placement needs at least one parameter server, got {}", num_ps);
  Placement p;
  p.num_ps = num_ps;
  std::vector<std::int64_t> load(num_ps, 0);
  auto whole = [&](const VariableInfo& v, int ps) {
    p.slices.push_back({v.name, ps, 0, v.rows(), v.shape.numel(), true});
    load[ps] += v.bytes();
  };
  auto least_loaded = [&] { return static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin()); };

  if (strategy == PlacementStrategy::round_robin) {
    for (std::size_t i = 0; i < vars.size(); ++i) whole(vars[i], static_cast<int>(i % num_ps));
    return p;
  }
  // Big variables first: the classic greedy bin-packing order.
  std::vector<std::size_t> order(vars.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return vars[a].bytes() > vars[b].bytes(); });
  std::int64_t total = 0;
  for (const VariableInfo& v : vars) total += v.bytes();
  // balanced: greedy packing leaves a server at most one whole variable above the mean, so
  // every variable above a twentieth of a server's share is split: max/mean at most 1.05.
  const std::int64_t split_above = strategy == PlacementStrategy::partitioned ? partition_bytes
                                   : strategy == PlacementStrategy::balanced  ? total / num_ps / 20
                                                                              : total;
  for (std::size_t i : order) {
    const VariableInfo& v = vars[i];
    bool split = strategy != PlacementStrategy::greedy && num_ps > 1 && v.bytes() > split_above && v.rows() >= num_ps;
    if (!split) {
      whole(v, least_loaded());
      continue;
    }
    // Rows split as evenly as whole rows allow; the first servers take the extra rows.
    std::int64_t rows = v.rows(), begin = 0;
    for (int s = 0; s < num_ps; ++s) {
      std::int64_t n = rows / num_ps + (s < rows % num_ps ? 1 : 0);
      p.slices.push_back({v.name, s, begin, begin + n, n * v.row_elements(), false});
      load[s] += n * v.row_elements() * 4;
      begin += n;
    }
  }
  // Declaration order, so that every process packs messages identically.
  std::vector<std::size_t> rank(vars.size());
  for (std::size_t i = 0; i < vars.size(); ++i) rank[i] = i;
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < vars.size(); ++i)
      if (vars[i].name == name) return i;
    return vars.size();
  };
  std::stable_sort(p.slices.begin(), p.slices.end(), [&](const Slice& a, const Slice& b) {
    std::size_t ia = index_of(a.variable), ib = index_of(b.variable);
    return ia != ib ? ia < ib : a.row_begin < b.row_begin;
  });
  return p;
}

}  // namespace trib::ps
