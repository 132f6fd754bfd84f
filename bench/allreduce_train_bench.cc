// End-to-end throughput of the allreduce strategy, 2 workers x 1 thread, beside the ideal
// and the peer, all in the same run:
//   bench=allreduce_train model=cnn ours_images_per_s=N ideal_images_per_s=N efficiency=E peer_images_per_s=N ratio=R
//
// Ours: two forked processes, each a rank of a Group over TcpTransport on 127.0.0.1, each
// training the peer's model (../shared/peers/torch_peer.py: CNN at batch 64, MLP at batch 256
// per worker) on one thread with ModelGraph + AllreduceUpdate (SGD, lr 0.01, 4 MiB buckets,
// gradients reported as backprop produces them). Ideal: the same loop with LocalUpdate in two
// independent processes at once. Peer: two `torch_peer.py --threads 1` processes at once.
// Timing follows the peer: 10 warm-up steps, 7 chunks of equal step counts filling about
// --seconds, the median chunk's step time; images/s are summed over the two processes.
// Ideal, ours and the peer alternate --reps times: images/s are medians; efficiency and
// ratio are medians of each rep's ours/ideal and ours/peer.
//
//   allreduce_train_bench [--models cnn,mlp] [--seconds 3] [--no-peer] [--bucket-mb 4]
//                         [--compression none|bf16|fp16] [--segment-kib K] [--reps 3]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench_process.h"
#include "peer_models.h"
#include "trib/collectives/collectives.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/core/random.h"
#include "trib/engine/context.h"
#include "trib/net/tcp_transport.h"
#include "trib/optim/schedule.h"
#include "trib/optim/sgd.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

using namespace trib;
using Clock = std::chrono::steady_clock;

namespace {

using bench::read_line;
using bench::write_all;

constexpr int kWorkers = 2;

struct Settings {
  double seconds = 3;
  double bucket_mb = 4;
  collectives::Compression compression = collectives::Compression::none;
  std::size_t segment_kib = 0;  // 0: the group's default
  int reps = 3;                 // ideal and ours alternate this many times; medians are printed
};

int batch_of(const std::string& model) { return model == "cnn" ? 64 : 256; }

// One training process; `group` is null for the ideal (independent) runs. Returns images/s.
double train_process(const std::string& model, const std::shared_ptr<collectives::Group>& group, const Settings& st) {
  const int batch = batch_of(model);
  EngineContext engine({.intra_op_threads = 1, .inter_op_threads = 1});
  train::ModelSpec spec{bench::build_peer_model(model), Shape{1, 28, 28}, 10, /*seed=*/0};
  train::ModelGraph graph(spec, batch, /*training=*/true, engine);
  VariableStore vars;
  train::initialize_parameters(graph.parameters(), spec.seed, vars);
  std::vector<std::string> names;
  for (const nn::Parameter& p : graph.trainable_parameters()) names.push_back(p.name);
  auto sgd = std::make_shared<Sgd>();
  auto lr = std::make_shared<ConstantSchedule>(0.01f);
  std::unique_ptr<update::UpdateStrategy> update;
  if (group) {
    update = std::make_unique<collectives::AllreduceUpdate>(
        collectives::AllreduceUpdateOptions{.group = group, .parameters = names, .optimizer = sgd, .schedule = lr,
                                            .bucket_bytes = static_cast<std::size_t>(st.bucket_mb * (1 << 20)),
                                            .compression = st.compression});
  } else {
    update = std::make_unique<update::LocalUpdate>(update::LocalUpdateOptions{names, sgd, lr});
  }
  update->start(vars, nullptr);
  Rng rng(1 + static_cast<std::uint64_t>(group ? group->rank() : 0));
  Tensor x = Tensor::empty(DType::f32, Shape{batch, 1, 28, 28});
  for (float& v : x.span<float>()) v = rng.normal();
  Tensor y = Tensor::empty(DType::i32, Shape{batch});
  for (std::int32_t& v : y.span<std::int32_t>()) v = static_cast<std::int32_t>(rng.below(10));

  std::int64_t step = 0;
  update::UpdateStrategy* u = update.get();
  auto one_step = [&] {
    train::StepResult r = graph.run(x, y, vars, static_cast<std::uint64_t>(step),
                                    [u](std::size_t i, const update::GradTensor& g) { u->on_gradient_ready(i, g); });
    u->apply(step++, r.grads, vars);
  };
  for (int i = 0; i < 10; ++i) one_step();
  auto t0 = Clock::now();
  one_step();
  const double per = std::max(std::chrono::duration<double>(Clock::now() - t0).count(), 1e-6);
  constexpr int kChunks = 7;
  Tensor iters = Tensor::from_vector<std::int64_t>(Shape{1}, {std::max<std::int64_t>(3, static_cast<std::int64_t>(st.seconds / kChunks / per))});
  if (group) collectives::broadcast(*group, iters);  // synchronous workers take the same steps
  std::vector<double> chunk;
  for (int c = 0; c < kChunks; ++c) {
    auto t = Clock::now();
    for (std::int64_t i = 0; i < *iters.data<std::int64_t>(); ++i) one_step();
    chunk.push_back(std::chrono::duration<double>(Clock::now() - t).count() / static_cast<double>(*iters.data<std::int64_t>()));
  }
  std::sort(chunk.begin(), chunk.end());
  update->finish();
  if (group && group->rank() == 0) fmt::print(stderr, "allreduce_train_bench: {}: {}\n", model, update->report());
  return batch / chunk[kChunks / 2];
}

// Runs two processes at once (ranks of one group when `allreduce`); the sum of their images/s.
double run_pair(const std::string& model, bool allreduce, const Settings& st) {
  const std::string secret = net::ClusterSecret::generate().to_hex();
  int down[kWorkers][2], up[kWorkers][2];
  std::vector<pid_t> pids;
  for (int r = 0; r < kWorkers; ++r) {
    if (::pipe(down[r]) != 0 || ::pipe(up[r]) != 0) return 0;
    pid_t pid = ::fork();
    if (pid == 0) {
      double images = 0;
      try {
        std::shared_ptr<collectives::Group> group;
        if (allreduce) {
          auto ctx = net::NetContext::create(net::ClusterSecret::from_hex(secret), {"worker", r, ""}, {},
                                             [](std::string_view) {});
          auto endpoint = collectives::Endpoint::listen(std::make_shared<net::TcpTransport>(ctx), "127.0.0.1:0");
          write_all(up[r][1], endpoint.address() + "\n");
          collectives::GroupOptions go{.rank = r, .size = kWorkers};
          if (st.segment_kib > 0) go.segment_bytes = st.segment_kib << 10;
          for (int k = 0; k < kWorkers; ++k) go.addresses.push_back(read_line(down[r][0]));
          group = collectives::Group::form(std::move(endpoint), go);
        }
        images = train_process(model, group, st);
      } catch (const std::exception& e) {
        fmt::print(stderr, "allreduce_train_bench: worker {}: {}\n", r, e.what());
        std::fflush(nullptr);
        std::_Exit(1);
      }
      write_all(up[r][1], fmt::format("{}\n", images));
      std::fflush(nullptr);
      std::_Exit(0);
    }
    pids.push_back(pid);
  }
  if (allreduce) {
    std::string addresses;
    for (int r = 0; r < kWorkers; ++r) addresses += read_line(up[r][0]) + "\n";
    for (int r = 0; r < kWorkers; ++r) write_all(down[r][1], addresses);
  }
  double total = 0;
  for (int r = 0; r < kWorkers; ++r) {
    std::string line = read_line(up[r][0]);
    total += line.empty() ? 0 : std::stod(line);
  }
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  for (int r = 0; r < kWorkers; ++r) {
    for (int fd : {down[r][0], down[r][1], up[r][0], up[r][1]}) ::close(fd);
  }
  return total;
}

double run_peer(const std::string& model, double seconds) {
  std::string py = fmt::format("/usr/bin/python3 {}/../shared/peers/torch_peer.py --model {} --batch {} --threads 1 --seconds {}",
                               TRIB_SOURCE_DIR, model, batch_of(model), seconds);
  std::string cmd = "(" + py + " & " + py + " & wait) 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  double total = 0;
  std::regex re(R"(images_per_s=([0-9.]+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) total += std::stod((*it)[1]);
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models{"cnn", "mlp"};
  Settings st;
  bool peer = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--models" && i + 1 < argc) {
      models.clear();
      std::stringstream in(argv[++i]);
      for (std::string m; std::getline(in, m, ',');) models.push_back(m);
    } else if (a == "--seconds" && i + 1 < argc) {
      st.seconds = std::stod(argv[++i]);
    } else if (a == "--bucket-mb" && i + 1 < argc) {
      st.bucket_mb = std::stod(argv[++i]);
    } else if (a == "--compression" && i + 1 < argc) {
      st.compression = collectives::parse_compression(argv[++i]);
    } else if (a == "--segment-kib" && i + 1 < argc) {
      st.segment_kib = std::stoull(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      st.reps = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--no-peer") {
      peer = false;
    } else {
      fmt::print(stderr, "allreduce_train_bench: unknown argument {}\n", a);
      return 2;
    }
  }
  peer = peer && std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
  int status = 0;
  for (const std::string& model : models) {
    std::vector<double> ideals, ourses, peers, efficiency, ratio;
    for (int rep = 0; rep < st.reps; ++rep) {  // alternated, so all three see the same machine load
      ideals.push_back(run_pair(model, false, st));
      ourses.push_back(run_pair(model, true, st));
      if (peer) peers.push_back(run_peer(model, st.seconds));
      fmt::print(stderr, "allreduce_train_bench: {} rep {}: ideal {:.0f}, ours {:.0f}, peer {:.0f} images/s\n", model,
                 rep, ideals.back(), ourses.back(), peer ? peers.back() : 0.0);
      // Ratios pair runs made moments apart, which keeps the machine's drifting load out.
      efficiency.push_back(ideals.back() > 0 ? ourses.back() / ideals.back() : 0);
      if (peer && peers.back() > 0) ratio.push_back(ourses.back() / peers.back());
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    const double ideal = median(ideals), ours = median(ourses), theirs = median(peers);
    if (ours <= 0 || ideal <= 0) status = 1;
    fmt::print("bench=allreduce_train model={} ours_images_per_s={:.0f} ideal_images_per_s={:.0f} efficiency={:.2f} "
               "peer_images_per_s={} ratio={}\n",
               model, ours, ideal, median(efficiency), theirs > 0 ? fmt::format("{:.0f}", theirs) : "NA",
               ratio.empty() ? "NA" : fmt::format("{:.2f}", median(ratio)));
    std::fflush(stdout);
  }
  return status;
}
