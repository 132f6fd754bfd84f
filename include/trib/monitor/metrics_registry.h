// A process's metrics, in the Prometheus text format (version 0.0.4): counters, gauges and
// histograms, each a family named trib_* with its own labels, and labels common to the whole
// process (role and index). The training loop's hooks, a parameter server's stats and the
// launcher feed it; a MetricsServer (metrics_server.h) serves render() at /metrics.
//
//   MetricsRegistry reg({{"role", "worker"}, {"index", "0"}});
//   Counter& steps = reg.counter("trib_steps_total", "Steps applied.");
//   steps.add(1);
//   reg.add_collector([&](MetricsRegistry& r) { r.gauge("trib_x", "..").set(read_x()); });
//   std::string text = reg.render();
//
// Updates are cheap (an atomic, or a short lock for a histogram) so that the loop can feed
// it every step; what costs more (a server's stats under its own lock) is read by collectors,
// at scrape time only.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace trib::monitor {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void add(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  // For a count kept elsewhere (a server's stats): the total as that source has it.
  void set_total(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, increasing; +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // For a histogram kept elsewhere (a server's staleness bins): per-bucket counts (not
  // cumulative), one per bound plus the +Inf bucket, and the sum of the observations.
  void set_counts(const std::vector<std::uint64_t>& counts, double sum);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket, the last +Inf
  double sum_ = 0;
};

// Bucket bounds for durations in seconds, 1 ms to 60 s.
std::vector<double> seconds_buckets();

class MetricsRegistry {
 public:
  explicit MetricsRegistry(Labels constant = {});
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The series of family `name` with `labels`, created on first use; the same reference
  // afterwards. A name used before with another type throws InvalidArgument.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                       const Labels& labels = {});

  // Run at every render(), in the order added, before the text is made.
  void add_collector(std::function<void(MetricsRegistry&)> collect);

  // The text exposition: every family with its HELP and TYPE lines, series in label order.
  std::string render();
  const Labels& constant_labels() const { return constant_; }

 private:
  enum class Type { counter, gauge, histogram };
  struct Family {
    Type type;
    std::string help;
    std::map<std::string, Labels> labels;  // key: the rendered label set
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, Type type, const std::string& help);

  const Labels constant_;
  std::mutex mu_;          // families_ and collectors_
  std::mutex render_mu_;   // one render at a time: collectors are not reentrant
  std::map<std::string, Family> families_;
  std::vector<std::function<void(MetricsRegistry&)>> collectors_;
};

// `{role="worker",index="0"}` for a label set, values escaped as the format wants; "" for none.
std::string format_labels(const Labels& labels);
// A sample value as the format writes it: shortest round-trip decimal, +Inf, -Inf, NaN.
std::string format_value(double v);

}  // namespace trib::monitor
