// bench=sweep: grid search and ASHA over the same 90 configurations of a Fashion-MNIST MLP
// (learning rate 5 ways, batch 3, width 3, dropout 2), the same maximum of steps per trial;
// compares the best test accuracy each finds and the CPU time (user + system, of every trial
// process and of the sweep's own) each spends. Target (issue 18): ASHA within 0.005 of grid's
// best in at most 1/3 of grid's CPU time.
// ASHA runs the grid's points in a seeded random order, with rungs at steps/27, /9 and /3
// (reduction factor 3). --seeds runs ASHA once per seed against the one grid run: the order
// decides which trials a rung lets through unconditionally (the first to arrive there).
// Trials are forked from the sweep with the data loaded once (sweep/trial_fork.h); --exec 1
// runs every segment as a `trib train` process instead. --rules runs ASHA with each rule
// (asha.rule: stopping, Ray Tune's; promotion, the paper's) for every seed.
//   sweep_bench [--steps N] [--slots N] [--seeds 1,2,..] [--rules stopping,promotion] [--train-subset N]
//               [--keep DIR] [--exec 1]
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trib/sweep/sweep.h"

namespace fs = std::filesystem;
using namespace trib;

namespace {

std::string job_yaml(int train_subset) {
  const std::string d = "/usr/share/datasets/fashion-mnist/";
  return fmt::format(
      "name: sweep_bench_mlp\n"
      "model:\n  input: [1, 28, 28]\n  classes: 10\n  layers:\n"
      "    - {{type: flatten}}\n    - {{type: dense, units: 256, activation: relu, init: he_uniform}}\n"
      "    - {{type: dropout, rate: 0.2}}\n    - {{type: dense, units: 10}}\n"
      "data:\n  format: idx\n  train_subset: {}\n"
      "  train: {{images: {}train-images-idx3-ubyte.gz, labels: {}train-labels-idx1-ubyte.gz}}\n"
      "  test: {{images: {}t10k-images-idx3-ubyte.gz, labels: {}t10k-labels-idx1-ubyte.gz}}\n"
      "optimizer: {{name: adam, lr: 0.001}}\n"
      // One evaluation (of the 10,000 test images) per segment, at its end: the rungs are the
      // segments' ends.
      "training: {{batch: 128, eval_every: 1000000, train_metrics: false}}\n",
      train_subset, d, d, d, d);
}

// 5 x 3 x 3 x 2 = 90 points: Adam's learning rate about a factor 3 apart over the range of the
// sample sweep file in docs/sweeps.md (1e-4 to 1e-2), the batch and the hidden width each over
// a factor 4, dropout off or on.
const char* kSpace =
    "space:\n"
    "  optimizer.lr: [0.0001, 0.0003, 0.001, 0.003, 0.01]\n"
    "  training.batch: [32, 64, 128]\n"
    "  model.layers.1.units: [128, 256, 512]\n"
    "  model.layers.2.rate: [0.0, 0.3]\n";

sweep::SweepResult run(const fs::path& dir, const std::string& name, const std::string& body, int slots, bool fork) {
  fs::path file = dir / (name + ".yaml");
  std::ofstream(file) << fmt::format("name: {}\njob: job.yaml\nmetric: accuracy\nslots: {}\nthreads: 1\n{}{}", name,
                                     slots, body, kSpace);
  sweep::SweepOptions o;
  o.config = sweep::load_sweep_config(file.string());
  o.output = (dir / name).string();
  o.executable = TRIB_BINARY;
  o.out = stderr;
  o.fork_trials = fork;
  return sweep::run_sweep(o);
}

// The training steps a sweep ran: every trial starts at step 0, so its last step is its work.
long long trial_steps(const fs::path& sweep_dir) {
  std::ifstream in(sweep_dir / "sweep.jsonl");
  long long steps = 0;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == "end") steps += j.value("step", 0LL);
  }
  return steps;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string s; std::getline(in, s, ',');) out.push_back(s);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 2700, slots = 2, train_subset = 0;
  bool fork = true;
  std::string keep, seeds_text = "1,2,3", rules_text = "stopping,promotion";
  CLI::App app{"bench=sweep: grid search against ASHA over the same 90 configurations"};
  app.add_option("--steps", steps, "a trial's maximum of steps (rungs at steps/27, /9, /3)")->check(CLI::PositiveNumber);
  app.add_option("--slots", slots, "trials at once")->check(CLI::PositiveNumber);
  app.add_option("--seeds", seeds_text, "ASHA's orders, comma-separated");
  app.add_option("--rules", rules_text, "asha.rule values, comma-separated (stopping, promotion)");
  app.add_option("--train-subset", train_subset, "training images (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--keep", keep, "keep the sweeps in this directory");
  int exec = 0;
  app.add_option("--exec", exec, "1: run each segment as a `trib train` process instead of a fork");
  CLI11_PARSE(app, argc, argv);
  fork = exec == 0;
  fs::path dir = keep.empty() ? fs::temp_directory_path() / fmt::format("trib_sweep_bench_{}", ::getpid()) : fs::path(keep);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "job.yaml") << job_yaml(train_subset);
  const std::int64_t grace = steps / 27;
  try {
    sweep::SweepResult grid = run(dir, "grid", fmt::format("search: grid\nsteps: {}\n", steps), slots, fork);
    const long long grid_steps = trial_steps(dir / "grid");
    for (const std::string& seed_text : split(seeds_text)) {
      const int seed = std::atoi(seed_text.c_str());
      for (const std::string& rule : split(rules_text)) {
        const std::string name = fmt::format("asha-{}-{}", rule, seed);
        sweep::SweepResult asha = run(dir, name,
                                      fmt::format("search: asha\nseed: {}\nsteps: {}\nasha: {{grace_period: {}, "
                                                  "reduction_factor: 3, rule: {}}}\n",
                                                  seed, steps, grace, rule),
                                      slots, fork);
        const long long asha_steps = trial_steps(dir / name);
        fmt::print("bench=sweep trials={} steps={} rungs={},{},{} slots={} trials_as={} rule={} seed={} grid_best={:.4f} "
                   "asha_best={:.4f} grid_cpu_s={:.1f} asha_cpu_s={:.1f} ratio={:.3f} step_ratio={:.3f} target_met={}\n",
                   grid.trials, steps, grace, grace * 3, grace * 9, slots, fork ? "fork" : "exec", rule, seed,
                   grid.best_metric, asha.best_metric, grid.cpu_s, asha.cpu_s, asha.cpu_s / grid.cpu_s,
                   double(asha_steps) / double(grid_steps),
                   (grid.best_metric - asha.best_metric <= 0.005 && asha.cpu_s <= grid.cpu_s / 3) ? "yes" : "no");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sweep_bench: {}\n", e.what());
    return 1;
  }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
