// Training-step throughput of the engine beside the PyTorch peer (../shared/peers/torch_peer.py),
// measured in the same run, interleaved per configuration so both see the same machine load:
//   bench=engine model=cnn batch=256 threads=1 ours_images_per_s=N peer_images_per_s=N ratio=R
// and, at batch 256 on one thread, the GFLOP/s of our step beside oneDNN's sgemm:
//   bench=engine_peak model=cnn achieved_gflops=N sgemm_gflops=N fraction=F
//
// Ours is the path a user's training loop takes: trib::train::ModelGraph (forward, loss and
// gradients through the Executor) then LocalUpdate with SGD (lr 0.01), in this process. The
// models, data and timing follow the peer: random inputs and labels, 10 warm-up steps, then 7
// timed chunks of equal step counts filling about --seconds, and the median chunk's step time.
// Ours and the peer run in turn, --rounds times per configuration, and each side's best round
// is reported. threads=T is T intra-op threads for both, nodes run one at a time (as torch
// runs its ops). The peak line times the step and sgemm in alternating chunks.
//
//   engine_bench [--models mlp,cnn] [--batches 64,256] [--threads 1,2] [--seconds 3]
//                [--rounds 2] [--no-peer] [--no-peak] [--cpu-time]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "peer_models.h"
#include "trib/optim/schedule.h"
#include "trib/optim/sgd.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace {

using namespace trib;
using Clock = std::chrono::steady_clock;

bool g_cpu_time = false;

double now_seconds() {
  if (g_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Options {
  std::vector<std::string> models{"mlp", "cnn"};
  std::vector<int> batches{64, 256};
  std::vector<int> threads{1, 2};
  double seconds = 3.0;
  int rounds = 2;
  bool peer = true;
  bool peak = true;
  // Time ours by the process's CPU time rather than the wall clock: for comparing two builds
  // of ours at 1 thread while other work loads the machine. Never for reported figures.
  bool cpu_time = false;
};

// ---- the models, as torch_peer.py defines them ----

// Multiply-adds of one training step per image, counted from the layer shapes. Forward: a
// dense layer in x out costs in*out; a convolution costs OH*OW*O*C*KH*KW (every tap of every
// output cell, padding taps included, as the usual formula counts them; oneDNN skips those,
// and they are 8.4% of conv1's taps at 28x28 and 16.4% of conv2's at 14x14, so about 12% of
// the CNN's count is work no kernel does). Backward: the weight gradient costs as much as
// the forward, and so does the input gradient, except for the first layer, whose input
// gradient is not needed (the images are not trained). Bias, ReLU, pooling, softmax and the
// update are memory-bound and not counted. Per image: MLP 605,696; CNN 41,024,512.
double step_macs_per_image(const std::string& model) {
  struct Layer { double forward; bool first; };
  std::vector<Layer> layers;
  if (model == "mlp") {
    layers = {{784.0 * 256, true}, {256.0 * 256, false}, {256.0 * 10, false}};
  } else {
    layers = {{28.0 * 28 * 32 * 1 * 5 * 5, true},
              {14.0 * 14 * 64 * 32 * 5 * 5, false},
              {3136.0 * 1024, false},
              {1024.0 * 10, false}};
  }
  double macs = 0;
  for (const Layer& l : layers) macs += l.forward * (l.first ? 2 : 3);
  return macs;
}

// ---- timing, as the peer does it ----

// Seconds per call of `step` in each of `chunks` equal chunks filling about `seconds`, after
// `warmup` untimed calls.
template <typename Step>
std::vector<double> chunk_times(Step&& step, double seconds, int chunks = 7, int warmup = 10) {
  for (int i = 0; i < warmup; ++i) step();
  const double t0 = now_seconds();
  step();
  const double per = std::max(now_seconds() - t0, 1e-6);
  const int iters = std::max(3, static_cast<int>(seconds / chunks / per));
  std::vector<double> out;
  for (int c = 0; c < chunks; ++c) {
    const double t = now_seconds();
    for (int i = 0; i < iters; ++i) step();
    out.push_back((now_seconds() - t) / iters);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One training step of ours, as a user's loop runs it: forward, loss and gradients through
// ModelGraph, then the SGD update through LocalUpdate.
class OurStep {
 public:
  OurStep(const std::string& model, int batch, int threads)
      : engine_({.intra_op_threads = threads, .inter_op_threads = 1}),
        spec_{bench::build_peer_model(model), Shape{1, 28, 28}, 10, /*seed=*/0},
        graph_(spec_, batch, /*training=*/true, engine_),
        x_(Tensor::empty(DType::f32, Shape{batch, 1, 28, 28})),
        y_(Tensor::empty(DType::i32, Shape{batch})) {
    train::initialize_parameters(graph_.parameters(), spec_.seed, vars_);
    std::vector<std::string> names;
    for (const nn::Parameter& p : graph_.trainable_parameters()) names.push_back(p.name);
    update_.emplace(update::LocalUpdateOptions{names, std::make_shared<Sgd>(),
                                              std::make_shared<ConstantSchedule>(0.01f)});
    Rng rng(1);
    for (float& v : x_.span<float>()) v = rng.normal();
    for (std::int32_t& v : y_.span<std::int32_t>()) v = static_cast<std::int32_t>(rng.below(10));
  }
  void operator()() {
    train::StepResult r = graph_.run(x_, y_, vars_, static_cast<std::uint64_t>(step_));
    update_->apply(step_++, r.grads, vars_);
  }

 private:
  EngineContext engine_;
  train::ModelSpec spec_;
  train::ModelGraph graph_;
  VariableStore vars_;
  std::optional<update::LocalUpdate> update_;
  Tensor x_, y_;
  std::int64_t step_ = 0;
};

// Our images per second for one configuration: the median chunk, as the peer reports.
double time_ours(const std::string& model, int batch, int threads, double seconds) {
  OurStep step(model, batch, threads);
  return batch / median(chunk_times(step, seconds));
}

// ---- the peer ----

std::string peer_script() { return std::string(TRIB_SOURCE_DIR) + "/../shared/peers/torch_peer.py"; }

bool peer_available() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// The peer's images per second, or nullopt (with the reason on stderr).
std::optional<double> run_peer(const std::string& model, int batch, int threads, double seconds) {
  std::ostringstream cmd;
  cmd << "/usr/bin/python3 " << peer_script() << " --model " << model << " --batch " << batch
      << " --threads " << threads << " --seconds " << seconds << " 2>&1";
  FILE* p = popen(cmd.str().c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  const auto at = out.find("images_per_s=");
  if (rc != 0 || at == std::string::npos) {
    std::cerr << "engine_bench: the peer failed (" << cmd.str() << "): " << out << "\n";
    return std::nullopt;
  }
  return std::strtod(out.c_str() + at + 13, nullptr);
}

// ---- the machine's practical peak ----

struct Peak {
  double achieved_gflops, sgemm_gflops;
};

// The model's training step at batch 256 on one thread beside oneDNN's sgemm on one thread,
// C[1024, 1024] = A[1024, 1024] B[1024, 1024], in alternating chunks (7 of each, about
// `seconds` of each in all) so that both see the same machine load; the median chunk of each.
Peak measure_peak(const std::string& model, double seconds) {
  constexpr dnnl_dim_t n = 1024;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  Rng rng(2);
  for (float& v : a) v = rng.uniform(-1, 1);
  for (float& v : b) v = rng.uniform(-1, 1);
  auto sgemm = [&] {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  OurStep step(model, 256, 1);
  for (int i = 0; i < 10; ++i) step();
  omp_set_num_threads(1);  // as the step left it
  for (int i = 0; i < 3; ++i) sgemm();
  std::vector<double> steps, gemms;
  constexpr int kChunks = 7;
  for (int i = 0; i < kChunks; ++i) {
    steps.push_back(chunk_times(step, seconds / kChunks, 1, 0)[0]);
    gemms.push_back(chunk_times(sgemm, seconds / kChunks, 1, 0)[0]);
  }
  return {2.0 * step_macs_per_image(model) * 256 / median(steps) / 1e9,
          2.0 * n * n * n / median(gemms) / 1e9};
}

template <typename T>
std::vector<T> parse_list(const std::string& s) {
  std::vector<T> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if constexpr (std::is_same_v<T, int>) out.push_back(std::stoi(item));
    else out.push_back(item);
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--models") o.models = parse_list<std::string>(value());
    else if (a == "--batches") o.batches = parse_list<int>(value());
    else if (a == "--threads") o.threads = parse_list<int>(value());
    else if (a == "--seconds") o.seconds = std::stod(value());
    else if (a == "--rounds") o.rounds = std::max(1, std::stoi(value()));
    else if (a == "--no-peer") o.peer = false;
    else if (a == "--no-peak") o.peak = false;
    else if (a == "--cpu-time") o.cpu_time = true;
    else throw std::invalid_argument("unknown argument " + a);
  }
  for (const std::string& m : o.models)
    if (m != "mlp" && m != "cnn") throw std::invalid_argument("unknown model " + m + " (mlp or cnn)");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP workers that sleep while they wait, as the peer's do (context.h says why).
  if (!use_passive_openmp_waits(argv))
    std::cerr << "engine_bench: could not re-run itself with OMP_WAIT_POLICY=passive; "
                 "2-thread figures may suffer\n";
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "engine_bench: " << e.what() << "\n";
    return 2;
  }
  g_cpu_time = o.cpu_time;
  bool peer = o.peer && peer_available();
  if (o.peer && !peer)
    std::cerr << "engine_bench: python3-torch is missing (apt-get install -y python3-torch); "
                 "peer figures are NA\n";

  for (const std::string& model : o.models)
    for (int batch : o.batches)
      for (int threads : o.threads) {
        std::cerr << "engine_bench: " << model << " batch " << batch << " threads " << threads << "\n";
        // Ours and the peer in turn, `rounds` times: each side's best round is reported, so a
        // burst of load from elsewhere on the machine hurts neither side's figure.
        double ours = 0;
        std::optional<double> theirs;
        for (int r = 0; r < o.rounds; ++r) {
          ours = std::max(ours, time_ours(model, batch, threads, o.seconds));
          if (!peer) continue;
          std::optional<double> p = run_peer(model, batch, threads, o.seconds);
          if (p) theirs = std::max(theirs.value_or(0.0), *p);
        }
        char line[256];
        if (theirs)
          std::snprintf(line, sizeof line,
                        "bench=engine model=%s batch=%d threads=%d ours_images_per_s=%.0f "
                        "peer_images_per_s=%.0f ratio=%.2f",
                        model.c_str(), batch, threads, ours, *theirs, ours / *theirs);
        else
          std::snprintf(line, sizeof line,
                        "bench=engine model=%s batch=%d threads=%d ours_images_per_s=%.0f "
                        "peer_images_per_s=NA ratio=NA",
                        model.c_str(), batch, threads, ours);
        std::cout << line << std::endl;
      }

  if (o.peak)
    for (const std::string& model : o.models) {
      std::cerr << "engine_bench: " << model << " batch 256 threads 1 beside sgemm 1024^3\n";
      const Peak p = measure_peak(model, 2 * o.seconds);
      char line[256];
      std::snprintf(line, sizeof line,
                    "bench=engine_peak model=%s achieved_gflops=%.1f sgemm_gflops=%.1f fraction=%.2f",
                    model.c_str(), p.achieved_gflops, p.sgemm_gflops,
                    p.achieved_gflops / p.sgemm_gflops);
      std::cout << line << std::endl;
    }
  return 0;
}
