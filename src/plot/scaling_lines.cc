#include "plot/scaling_lines.h"

#include <charconv>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::plot {

namespace {

using Fields = std::map<std::string, std::string>;

const std::string& field(const Fields& f, const std::string& key, const std::string& where) {
  auto it = f.find(key);
  TRIB_CHECK(it != f.end() && !it->second.empty(), InvalidArgument,
             "{}: a bench=scaling line without {}=: expected bench/scaling.sh's lines", where, key);
  return it->second;
}

double number(const Fields& f, const std::string& key, const std::string& where) {
  const std::string& s = field(f, key, where);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  TRIB_CHECK(ec == std::errc() && end == s.data() + s.size() && v >= 0, InvalidArgument,
             "{}: {}={} is not a number >= 0", where, key, s);
  return v;
}

// The name bench/scaling.sh's --strategies gave the point, rebuilt from its line's fields.
std::string strategy_of(const Fields& f, const std::string& where) {
  const std::string& name = field(f, "strategy", where);
  if (name == "ps") return fmt::format("ps{}_{}", field(f, "ps", where), field(f, "mode", where));
  auto c = f.find("compression");
  return c == f.end() || c->second == "none" ? name : name + "_" + c->second;
}

}  // namespace

std::vector<ScalingPoint> read_scaling_lines(std::istream& in, const std::string& source) {
  std::vector<ScalingPoint> points;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first != "bench=scaling") continue;
    Fields f;
    for (std::string word; words >> word;)
      if (auto eq = word.find('='); eq != std::string::npos) f[word.substr(0, eq)] = word.substr(eq + 1);
    const std::string where = fmt::format("{} line {}", source, n);
    ScalingPoint p;
    p.model = field(f, "model", where);
    p.strategy = strategy_of(f, where);
    p.link_gbps = number(f, "link_gbps", where);
    p.batch = int(number(f, "batch", where));
    p.workers = int(number(f, "workers", where));
    p.images_per_s = number(f, "ours_images_per_s", where);
    auto peer = f.find("peer_images_per_s");
    if (peer != f.end() && peer->second != "NA") p.peer_images_per_s = number(f, "peer_images_per_s", where);
    if (f.contains("cpus_per_host")) p.cpus_per_host = number(f, "cpus_per_host", where);
    TRIB_CHECK(p.cpus_per_host > 0, InvalidArgument, "{}: cpus_per_host=0: expected a share of a core above 0", where);
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<Panel> scaling_panels(const std::vector<ScalingPoint>& points) {
  // model -> curve key -> workers -> images/s. A key sorts ours by strategy, then DDP's.
  using Key = std::tuple<bool, std::string, double, int>;  // (peer, strategy, link, batch)
  std::map<std::string, std::map<Key, std::map<int, double>>> by_model;
  std::map<std::string, std::set<int>> workers;
  for (const ScalingPoint& p : points) {
    const double link = p.link_gbps;
    workers[p.model].insert(p.workers);
    // A failed run prints 0 (docs/scaling.md): no point rather than a drop to the floor.
    if (p.images_per_s > 0) by_model[p.model][{false, p.strategy, link, p.batch}][p.workers] = p.images_per_s / p.cpus_per_host;
    if (p.peer_images_per_s > 0)
      by_model[p.model][{true, "torch DDP", link, p.batch}][p.workers] = p.peer_images_per_s / p.cpus_per_host;
  }
  std::vector<Panel> panels;
  for (const auto& [model, curves] : by_model) {
    Panel panel{fmt::format("{}: images/s (one-core machines)", model), "workers", {}};
    panel.y_from_zero = panel.markers = true;
    for (int w : workers[model]) panel.xticks.push_back(w);
    for (const auto& [key, pts] : curves) {
      const auto& [peer, strategy, link, batch] = key;
      Curve c{fmt::format("{}, {:g} Gbit/s, batch {}", strategy, link, batch), {}, peer};
      for (const auto& [w, v] : pts) c.xy.emplace_back(w, v);
      panel.curves.push_back(std::move(c));
    }
    panels.push_back(std::move(panel));
  }
  return panels;
}

}  // namespace trib::plot
