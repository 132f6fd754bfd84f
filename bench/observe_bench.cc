// What monitoring costs a training step, measured in one process (bench/observe.sh measures a
// whole local cluster, whose runs are separate processes and so noisier):
//
//   bench=observe_inprocess: the Fashion-MNIST MLP of examples/fashion_ps.yaml trained alone
//     (examples/fashion_mlp.yaml through trib::train::train, one thread) with monitoring off and on in turn, --rounds times each,
//     the order alternating every round, each timed from its first step to its last. "On" is what a worker of `trib train --metrics-port`
//     runs: the loop's hooks feed a registry (train/observed_hooks.h), its MetricsServer serves
//     it, and a thread scrapes and parses it every second as the launcher's /api/status does
//     for an open dashboard. Reported: the median images/s of each side, the median of the
//     per-round overheads (1 - on/off of the same round) with their min and max, and how far
//     the "off" runs spread (max - min over min): an overhead below that spread is noise. The
//     same for the process's CPU time per step (cpu_overhead: what monitoring adds to each
//     step's work, all threads counted), which a loaded machine disturbs far less.
//   bench=observe_cost: the monitoring code's own cost, timed alone: ns per step of the
//     updates a step makes (the series ObservedHooks feeds: 2 counters, 3 gauges, 3
//     histograms, a clock read), the CPU time of one scrape (render, HTTP, parse, on both
//     sides), and the bound they give on a step of this job (the off runs' CPU time per step):
//     derived_overhead = per_step / step_time + scrape_cpu x scrapes per second.
//
//   observe_bench [--rounds 7] [--steps 4000] [--no-train]
// Only bench= lines go to stdout; progress goes to stderr.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "trib/config/job_config.h"
#include "trib/monitor/cluster_status.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/monitor/metrics_server.h"
#include "train/step_series.h"
#include "trib/train/trainer.h"

namespace {

using namespace trib;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::string load() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

// Scrapes `port` every second, as the launcher does for an open dashboard, until stopped.
class Scraper {
 public:
  explicit Scraper(int port)
      : thread_([this, port] {
          std::unique_lock lock(mu_);
          while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
            lock.unlock();
            monitor::gather_status({{"worker", 0, "127.0.0.1", port}}, "");
            ++scrapes;
            lock.lock();
          }
        }) {}
  ~Scraper() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::atomic<int> scrapes{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// One training run's loop, timed from its first step to its last (the data's loading and
// the final evaluation left out): wall images/s, and the process's CPU seconds per step (every
// thread: the loop's, and with monitoring on the server's and the scraper's). CPU time is what
// monitoring adds work to, and a loaded machine inflates it far less than wall time.
struct Timing {
  double images_per_s = 0;
  double cpu_per_step = 0;
};

Timing run(const config::JobConfig& job, bool on, const fs::path& dir) {
  train::TrainerOptions o;
  o.job = job;
  o.output = dir;
  std::FILE* null = std::fopen("/dev/null", "w");
  o.log = null;
  const std::int64_t last = job.training.steps;
  double c0 = 0, c1 = 0;
  Clock::time_point t0, t1;
  o.on_step = [&](std::int64_t step, double) {
    if (step == 1) c0 = cpu_seconds(), t0 = Clock::now();
    if (step == last) c1 = cpu_seconds(), t1 = Clock::now();
  };
  std::optional<monitor::MetricsRegistry> registry;
  std::unique_ptr<monitor::MetricsServer> server;
  std::unique_ptr<Scraper> scraper;
  if (on) {
    registry.emplace(monitor::Labels{{"role", "worker"}, {"index", "0"}});
    server = std::make_unique<monitor::MetricsServer>(monitor::MetricsServerOptions{}, *registry);
    scraper = std::make_unique<Scraper>(server->port());
    o.metrics = &*registry;
  }
  train::train(o);
  scraper.reset();
  server.reset();
  std::fclose(null);
  fs::remove_all(dir);
  const double steps = double(last - 1), wall = std::chrono::duration<double>(t1 - t0).count();
  return {wall > 0 ? steps * double(job.training.batch) / wall : 0, (c1 - c0) / steps};
}


// ns per step of the updates, median of 5 timings of 1M steps.
double per_step_ns(train::StepSeries& s) {
  std::vector<double> ns;
  volatile std::int64_t sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    constexpr int kSteps = 1'000'000;
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < kSteps; ++i) {
      s.record({128, double(i), 0.5, 0.001, 1e-5 * (i & 7), 0.002, 0.0005});  // what ObservedHooks records
      sink = sink + Clock::now().time_since_epoch().count();  // the rate window's clock read
    }
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kSteps);
  }
  return median(ns);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, steps = 4000;
  bool train_runs = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::stoi(argv[++i]);
    else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
    else if (a == "--no-train") train_runs = false;
    else {
      std::fprintf(stderr, "observe_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const std::string load_before = load();

  // The monitoring code alone.
  monitor::MetricsRegistry reg(monitor::Labels{{"role", "worker"}, {"index", "0"}});
  train::StepSeries series(reg);
  const double step_ns = per_step_ns(series);
  std::vector<double> render_us, scrape_cpu_us;
  for (int i = 0; i < 200; ++i) {
    const Clock::time_point t0 = Clock::now();
    const std::string text = reg.render();
    render_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  {
    monitor::MetricsServer server(monitor::MetricsServerOptions{}, reg);
    for (int i = 0; i < 50; ++i) {
      const double c0 = cpu_seconds();
      monitor::gather_status({{"worker", 0, "127.0.0.1", server.port()}}, "");
      scrape_cpu_us.push_back((cpu_seconds() - c0) * 1e6);
    }
  }
  const double scrape_us = median(scrape_cpu_us);

  // The job with monitoring off and on, interleaved.
  double step_s = 0;
  if (train_runs) {
    // examples/fashion_mlp.yaml: the model of examples/fashion_ps.yaml, as one process on one thread.
    const config::JobConfig job = config::load_job_config(
        std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
        {fmt::format("training.steps={}", steps), "training.eval_every=1000000", "threads.intra=1",
         "monitoring.tensorboard=false"});
    const fs::path dir = fs::temp_directory_path() / fmt::format("trib_observe_bench_{}", ::getpid());
    std::vector<double> off, on, overhead, off_cpu, on_cpu, cpu_overhead;
    for (int r = 0; r < rounds; ++r) {
      Timing a, b;
      if (r % 2 == 0) a = run(job, false, dir), b = run(job, true, dir);
      else b = run(job, true, dir), a = run(job, false, dir);
      off.push_back(a.images_per_s), on.push_back(b.images_per_s);
      overhead.push_back((a.images_per_s - b.images_per_s) / a.images_per_s * 100);
      off_cpu.push_back(a.cpu_per_step), on_cpu.push_back(b.cpu_per_step);
      cpu_overhead.push_back((b.cpu_per_step - a.cpu_per_step) / a.cpu_per_step * 100);
      std::fprintf(stderr,
                   "observe_bench: round %d: off %.0f images/s %.0f us CPU/step, on %.0f images/s %.0f us CPU/step "
                   "(%.1f%%, CPU %.1f%%), load %s\n",
                   r, a.images_per_s, a.cpu_per_step * 1e6, b.images_per_s, b.cpu_per_step * 1e6, overhead.back(),
                   cpu_overhead.back(), load().c_str());
    }
    auto spread = [](const std::vector<double>& v) {
      const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
      return (hi - lo) / lo * 100;
    };
    step_s = median(off_cpu);
    std::printf(
        "bench=observe_inprocess model=fashion_mlp batch=128 steps=%d rounds=%d off_images_per_s=%.0f "
        "on_images_per_s=%.0f overhead=%.2f%% overhead_min=%.2f%% overhead_max=%.2f%% off_spread=%.1f%% "
        "off_cpu_us_per_step=%.0f on_cpu_us_per_step=%.0f cpu_overhead=%.2f%% cpu_overhead_min=%.2f%% "
        "cpu_overhead_max=%.2f%% off_cpu_spread=%.1f%% load=%s-%s target=2%%\n",
        steps, rounds, median(off), median(on), median(overhead), *std::min_element(overhead.begin(), overhead.end()),
        *std::max_element(overhead.begin(), overhead.end()), spread(off), median(off_cpu) * 1e6, median(on_cpu) * 1e6,
        median(cpu_overhead), *std::min_element(cpu_overhead.begin(), cpu_overhead.end()),
        *std::max_element(cpu_overhead.begin(), cpu_overhead.end()), spread(off_cpu), load_before.c_str(),
        load().c_str());
  }
  std::printf("bench=observe_cost per_step_ns=%.0f render_us=%.0f scrape_cpu_us=%.0f scrapes_per_s=1", step_ns,
              median(render_us), scrape_us);
  if (step_s > 0)
    std::printf(" step_cpu_us=%.0f derived_overhead=%.3f%% target=2%%", step_s * 1e6,
                (step_ns * 1e-9 / step_s + scrape_us * 1e-6) * 100);
  std::printf("\n");
  return 0;
}
