#include "trib/sweep/sweep_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "config/config_reader.h"
#include "trib/config/job_config.h"
#include "trib/core/error.h"
#include "trib/sweep/asha.h"

namespace trib::sweep {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMetrics = {"accuracy", "loss", "train_accuracy", "train_loss"};

ParamValue scalar_value(const YAML::Node& n) {
  std::int64_t i;
  double d;
  if (YAML::convert<std::int64_t>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  return n.Scalar();
}

std::string nearest(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const std::string& k : known)
    if (std::size_t d = config::edit_distance(word, k); d < best_d) best_d = d, best = k;
  return best_d <= 3 ? fmt::format("; did you mean '{}'?", best) : "";
}

// `key: {loguniform: [1e-4, 1e-2]}` or `key: [a, b, c]` (a choice list).
Dimension read_dimension(const std::string& key, const YAML::Node& n, const std::string& file) {
  Dimension d;
  d.key = key;
  auto fail = [&](const std::string& what) {
    return InvalidArgument(fmt::format("sweep {}: space.{}: {}", file, key, what));
  };
  YAML::Node values = n;
  std::string kind = "choice";
  if (n.IsMap()) {
    if (n.size() != 1) throw fail("give one of choice, uniform, loguniform or int, e.g. {loguniform: [1.0e-4, 1.0e-2]}");
    kind = n.begin()->first.as<std::string>();
    values = n.begin()->second;
  }
  if (!values.IsSequence() || values.size() == 0) throw fail(fmt::format("{} needs a list of values", kind));
  if (kind == "choice") {
    d.kind = DimensionKind::choice;
    for (const auto& v : values) {
      if (!v.IsScalar()) throw fail("choice values must be scalars");
      d.choices.push_back(scalar_value(v));
    }
    return d;
  }
  const std::vector<std::string> kinds = {"choice", "uniform", "loguniform", "int"};
  if (kind == "uniform") d.kind = DimensionKind::uniform;
  else if (kind == "loguniform") d.kind = DimensionKind::log_uniform;
  else if (kind == "int") d.kind = DimensionKind::integer;
  else throw fail(fmt::format("unknown distribution '{}'{}; expected choice, uniform, loguniform or int", kind, nearest(kind, kinds)));
  if (values.size() != 2) throw fail(fmt::format("{} needs [low, high]", kind));
  try {
    d.low = values[0].as<double>();
    d.high = values[1].as<double>();
  } catch (const YAML::Exception&) {
    throw fail(fmt::format("{} needs two numbers [low, high]", kind));
  }
  if (!(d.low < d.high)) throw fail(fmt::format("{} needs low < high, got [{}, {}]", kind, d.low, d.high));
  if (d.kind == DimensionKind::log_uniform && d.low <= 0) throw fail("loguniform needs low > 0");
  if (d.kind == DimensionKind::integer && (d.low != std::floor(d.low) || d.high != std::floor(d.high)))
    throw fail("int needs whole numbers");
  return d;
}

// The values a dimension can take at its edges: each is tried on the base job.
std::vector<ParamValue> edge_values(const Dimension& d) {
  switch (d.kind) {
    case DimensionKind::choice: return d.choices;
    case DimensionKind::integer:
      return {static_cast<std::int64_t>(d.low), static_cast<std::int64_t>(d.high)};
    default: return {d.low, d.high};
  }
}

// The job parser knows every key and names an unknown one with a suggestion: the space's
// keys are checked by setting each on the base job, as `--set` would.
void check_on_job(const SweepConfig& c, const std::string& job_text) {
  for (const Dimension& d : c.space.dimensions()) {
    for (const ParamValue& v : edge_values(d)) {
      try {
        config::parse_job_config(job_text, c.job, {d.key + "=" + to_yaml(v)});
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(fmt::format("sweep {}: space.{} = {}: {}", c.file, d.key, to_yaml(v), e.what()));
      }
    }
  }
}

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  TRIB_CHECK(in.good(), NotFound, "{} '{}' not found", what, path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

SweepConfig parse_sweep_config(const std::string& yaml_text, const std::string& origin, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InvalidArgument(fmt::format("sweep {}: not valid YAML: {}", origin, e.what()));
  }
  config::ConfigReader r(root, origin);
  SweepConfig c;
  c.file = origin;
  c.name = r.get<std::string>("name", c.name);
  std::string job = r.required<std::string>("job");
  c.job = fs::path(job).is_absolute() ? job : (fs::path(base_dir) / job).lexically_normal().string();
  c.metric = r.get<std::string>("metric", c.metric);
  TRIB_CHECK(std::find(kMetrics.begin(), kMetrics.end(), c.metric) != kMetrics.end(), InvalidArgument,
             "sweep {}: unknown metric '{}'{}; expected accuracy, loss, train_accuracy or train_loss", origin, c.metric,
             nearest(c.metric, kMetrics));
  std::string mode = r.get<std::string>("mode", c.metric.ends_with("loss") ? "min" : "max");
  TRIB_CHECK(mode == "max" || mode == "min", InvalidArgument, "sweep {}: mode must be max or min, got '{}'", origin, mode);
  c.maximize = mode == "max";
  std::string search = r.get<std::string>("search", "random");
  if (search == "grid") c.search = SearchKind::grid;
  else if (search == "random") c.search = SearchKind::random;
  else if (search == "asha") c.search = SearchKind::asha;
  else
    throw InvalidArgument(fmt::format("sweep {}: unknown search '{}'{}; expected grid, random or asha", origin, search,
                                      nearest(search, {"grid", "random", "asha"})));
  c.seed = r.get<std::uint64_t>("seed", c.seed);
  c.steps = r.get<std::int64_t>("steps", c.steps);
  c.slots = r.get<int>("slots", c.slots);
  c.threads = r.get<int>("threads", c.threads);
  TRIB_CHECK(c.steps >= 0 && c.slots >= 1 && c.threads >= 0, InvalidArgument,
             "sweep {}: steps and threads must be >= 0, slots >= 1", origin);
  config::ConfigReader budget = r.child("budget");
  c.trials = budget.get<int>("trials", 0);
  c.time_s = budget.get<double>("time_s", 0);
  TRIB_CHECK(c.trials >= 0 && c.time_s >= 0, InvalidArgument, "sweep {}: budget.trials and budget.time_s must be >= 0",
             origin);
  budget.finish();
  config::ConfigReader asha = r.child("asha");
  c.grace_period = asha.get<std::int64_t>("grace_period", 0);
  c.reduction_factor = asha.get<double>("reduction_factor", c.reduction_factor);
  const std::string rule = asha.get<std::string>("rule", "stopping");
  if (rule == "stopping") c.asha_rule = AshaRule::stopping;
  else if (rule == "promotion") c.asha_rule = AshaRule::promotion;
  else
    throw InvalidArgument(fmt::format("sweep {}: unknown asha.rule '{}'{}; expected stopping or promotion", origin,
                                      rule, nearest(rule, {"stopping", "promotion"})));
  asha.finish();
  TRIB_CHECK(r.has("space"), InvalidArgument, "sweep {}: space is required: the job keys to search", origin);
  YAML::Node space = root["space"];
  TRIB_CHECK(space.IsMap() && space.size() > 0, InvalidArgument,
             "sweep {}: space must map job keys to values, e.g. optimizer.lr: {{loguniform: [1.0e-4, 1.0e-2]}}", origin);
  r.finish();
  std::vector<Dimension> dims;
  for (const auto& kv : space) dims.push_back(read_dimension(kv.first.as<std::string>(), kv.second, origin));
  c.space = SearchSpace(std::move(dims));

  if (c.search == SearchKind::grid)
    TRIB_CHECK(c.space.is_grid(), InvalidArgument,
               "sweep {}: search: grid needs every space key to be a choice list; use random or asha for ranges", origin);
  if (c.search == SearchKind::random)
    TRIB_CHECK(c.trials > 0, InvalidArgument, "sweep {}: search: random needs budget.trials", origin);
  if (c.search == SearchKind::asha) {
    TRIB_CHECK(c.trials > 0 || c.space.is_grid(), InvalidArgument,
               "sweep {}: search: asha over ranges needs budget.trials", origin);
    TRIB_CHECK(c.steps > 0, InvalidArgument, "sweep {}: search: asha needs steps (each trial's most steps)", origin);
    if (c.grace_period == 0) c.grace_period = std::max<std::int64_t>(1, c.steps / 9);
    Asha check_asha(c.grace_period, c.steps, c.reduction_factor, c.maximize);  // throws for bad settings
  }
  check_on_job(c, read_text(c.job, fmt::format("sweep {}: job", origin)));
  return c;
}

SweepConfig load_sweep_config(const std::string& path) {
  std::string text = read_text(path, "sweep file");
  return parse_sweep_config(text, path, fs::absolute(path).parent_path().string());
}

int planned_trials(const SweepConfig& c) {
  if (c.search == SearchKind::random) return c.trials;
  if (c.search == SearchKind::asha && (c.trials > 0 || !c.space.is_grid())) return c.trials;
  const auto grid = static_cast<int>(c.space.grid_size());
  return c.trials > 0 ? std::min(c.trials, grid) : grid;
}

Params trial_params(const SweepConfig& c, int index) {
  if (c.search == SearchKind::grid) return c.space.grid_point(index);
  // asha over a grid: the grid's points, so that it searches what a grid search would, in a
  // seeded random order: in grid order the first trials (which a rung always promotes) would
  // all come from one corner of the space.
  if (c.search == SearchKind::asha && c.space.is_grid() && c.trials == 0) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(c.space.grid_size()));
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(c.seed);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    return c.space.grid_point(order[static_cast<std::size_t>(index)]);
  }
  return c.space.sample(c.seed, index);
}

}  // namespace trib::sweep
