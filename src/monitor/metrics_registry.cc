#include "trib/monitor/metrics_registry.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::monitor {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  TRIB_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()) &&
                 std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
             InvalidArgument, "histogram bounds must increase strictly");
}

void Histogram::observe(double v) {
  const std::size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard lock(mu_);
  ++counts_[bucket];
  sum_ += v;
}

void Histogram::set_counts(const std::vector<std::uint64_t>& counts, double sum) {
  TRIB_CHECK(counts.size() == counts_.size(), InvalidArgument, "a histogram of {} buckets was given {} counts",
             counts_.size(), counts.size());
  std::lock_guard lock(mu_);
  counts_ = counts;
  sum_ = sum;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard lock(mu_);
  std::uint64_t running = 0;
  for (std::uint64_t c : counts_) s.cumulative.push_back(running += c);
  s.sum = sum_;
  return s;
}

std::vector<double> seconds_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricsRegistry::MetricsRegistry(Labels constant) : constant_(std::move(constant)) {}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, Type type, const std::string& help) {
  auto [it, fresh] = families_.try_emplace(name);
  if (fresh) {
    it->second.type = type;
    it->second.help = help;
  }
  TRIB_CHECK(it->second.type == type, InvalidArgument, "metric {} was registered before with another type", name);
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Type::counter, help);
  const std::string key = format_labels(labels);
  f.labels.try_emplace(key, labels);
  std::unique_ptr<Counter>& c = f.counters[key];
  if (!c) c = std::make_unique<Counter>();
  return *c;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Type::gauge, help);
  const std::string key = format_labels(labels);
  f.labels.try_emplace(key, labels);
  std::unique_ptr<Gauge>& g = f.gauges[key];
  if (!g) g = std::make_unique<Gauge>();
  return *g;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Type::histogram, help);
  const std::string key = format_labels(labels);
  f.labels.try_emplace(key, labels);
  std::unique_ptr<Histogram>& h = f.histograms[key];
  if (!h) h = std::make_unique<Histogram>(bounds);
  return *h;
}

void MetricsRegistry::add_collector(std::function<void(MetricsRegistry&)> collect) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collect));
}

namespace {

std::string escape_help(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

Labels merged(const Labels& constant, const Labels& own, const Labels& extra = {}) {
  Labels all = constant;
  all.insert(all.end(), own.begin(), own.end());
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

}  // namespace

std::string format_labels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    for (char c : labels[i].second) {
      if (c == '\\') out += "\\\\";
      else if (c == '"') out += "\\\"";
      else if (c == '\n') out += "\\n";
      else out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string MetricsRegistry::render() {
  std::lock_guard render_lock(render_mu_);
  std::vector<std::function<void(MetricsRegistry&)>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (auto& collect : collectors) collect(*this);
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(f.help), name, kTypes[int(f.type)]);
    for (const auto& [key, own] : f.labels) {
      switch (f.type) {
        case Type::counter:
          out += fmt::format("{}{} {}\n", name, format_labels(merged(constant_, own)),
                             format_value(f.counters.at(key)->value()));
          break;
        case Type::gauge:
          out += fmt::format("{}{} {}\n", name, format_labels(merged(constant_, own)),
                             format_value(f.gauges.at(key)->value()));
          break;
        case Type::histogram: {
          const Histogram::Snapshot s = f.histograms.at(key)->snapshot();
          for (std::size_t b = 0; b <= s.bounds.size(); ++b) {
            const std::string le = b < s.bounds.size() ? format_value(s.bounds[b]) : "+Inf";
            out += fmt::format("{}_bucket{} {}\n", name, format_labels(merged(constant_, own, {{"le", le}})),
                               s.cumulative[b]);
          }
          const std::string labels = format_labels(merged(constant_, own));
          out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, labels, format_value(s.sum), name, labels,
                             s.cumulative.back());
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace trib::monitor
