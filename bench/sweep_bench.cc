// bench=sweep: grid search and ASHA over the same 16 configurations of the Fashion-MNIST MLP
// (lr, batch, width, dropout), each trial a `trib train` process; compares the best test
// accuracy each finds and the CPU time (user + system, of every trial process) each spends.
// Target (issue 18): ASHA within 0.005 of grid's best in at most 1/3 of grid's CPU time.
// Trials are forked from the sweep with the data loaded once (sweep/trial_fork.h); --exec runs
// every segment as a `trib train` process instead, the baseline to compare with.
//   sweep_bench [--steps N] [--slots N] [--train-subset N] [--keep DIR] [--exec 1]
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

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
      // One evaluation per segment (at its end): the rungs are the segments' ends.
      "training: {{batch: 128, eval_every: 100000, train_metrics: false}}\n",
      train_subset, d, d, d, d);
}

const char* kSpace =
    "space:\n"
    "  optimizer.lr: [0.0003, 0.003]\n"
    "  training.batch: [64, 128]\n"
    "  model.layers.1.units: [128, 512]\n"
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

}  // namespace

int main(int argc, char** argv) {
  int steps = 2700, slots = 2, train_subset = 0;
  bool fork = true;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--slots")) slots = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--train-subset")) train_subset = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep")) keep = argv[i + 1];
    else if (!std::strcmp(argv[i], "--exec")) fork = std::atoi(argv[i + 1]) == 0;
  }
  fs::path dir = keep.empty() ? fs::temp_directory_path() / fmt::format("trib_sweep_bench_{}", ::getpid()) : fs::path(keep);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "job.yaml") << job_yaml(train_subset);
  try {
    sweep::SweepResult grid = run(dir, "grid", fmt::format("search: grid\nsteps: {}\n", steps), slots, fork);
    sweep::SweepResult asha = run(
        dir, "asha", fmt::format("search: asha\nsteps: {}\nasha: {{grace_period: {}, reduction_factor: 3}}\n", steps, steps / 9),
        slots, fork);
    fmt::print("bench=sweep trials={} steps={} slots={} trials_as={} grid_best={:.4f} asha_best={:.4f} grid_cpu_s={:.1f} "
               "asha_cpu_s={:.1f} ratio={:.3f} target_met={}\n",
               grid.trials, steps, slots, fork ? "fork" : "exec", grid.best_metric, asha.best_metric, grid.cpu_s, asha.cpu_s,
               asha.cpu_s / grid.cpu_s,
               (grid.best_metric - asha.best_metric <= 0.005 && asha.cpu_s <= grid.cpu_s / 3) ? "yes" : "no");
  } catch (const std::exception& e) {
    fmt::print(stderr, "sweep_bench: {}\n", e.what());
    return 1;
  }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
