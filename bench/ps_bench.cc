// Parameter-server benchmarks, ours beside the peer in the same run:
//   bench=ps: one server and two workers on loopback pushing gradients and pulling values of
//     a 16 MiB variable as fast as they can (async SGD); bytes in plus bytes out per second,
//     beside iperf3's single-stream loopback figure.
//   bench=ps_replicas: the same loop with strategy.ps_replicas 0 and 1 in one run: with 1,
//     every push is forwarded to a backup (another listener on loopback) before it is
//     answered; the ratio is what the hot backup costs. bench=ps_train_replicas: images/s of
//     a 2-server, 2-worker training with ps_replicas 0 and 1.
//   bench=ps_overlap: the bench=ps loop with each pull asked behind its push (both in flight,
//     as strategy.ps_overlap does) against asked after the push's reply, in one run; and
//     bench=ps_train_overlap: images/s of the 2-worker training with ps_overlap false and true.
//     `ps_bench overlap` prints only these.
//   bench=ps_train: images/s of 2 workers x 1 thread with 1 server (sync and async), against
//     the ideal (two independent single-process trainings at once) and the peer (two
//     torch_peer.py --threads 1 processes at once).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_process.h"
#include "ps/ps_wire.h"
#include "trib/core/allocator.h"
#include "trib/net/net_context.h"
#include "trib/net/tcp_transport.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/backup_link.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"

namespace {

using namespace trib;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double sum_matches(const std::string& text, const std::string& pattern) {
  double total = 0;
  std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    total += std::stod((*it)[1]);
  return total;
}

net::Message ps_request(ps::proto::Type type, int worker, std::int64_t step, Tensor tensor = {}) {
  ps::proto::Body b = ps::proto::make_body(type);
  b.header.worker = worker;
  b.header.step = step;
  b.header.wait_ms = 5000;
  ps::proto::set_lr(b.header, 1e-6f);
  return {ps::proto::kPsMethod, ps::proto::encode(b), std::move(tensor)};
}

// With `replicas`, the server forwards every change to a backup behind its own listener, as
// `trib ps` does with strategy.ps_replicas: 1.
// `overlap`: each step's pull leaves right behind its push, before the push's reply.
double ps_throughput(double seconds, int replicas = 0, bool overlap = false) {
  const std::int64_t n = 4 << 20;  // 16 MiB of f32
  std::vector<ps::VariableInfo> vars{{"w", Shape{n}}};
  ps::Placement placement = ps::place(vars, 1, ps::PlacementStrategy::greedy, 1 << 30);
  ps::PsServer server({0, 2, ps::Mode::async, 2, 0, vars, placement, make_optimizer({.name = "sgd"})});
  auto secret = net::ClusterSecret::generate();
  std::unique_ptr<ps::PsBackup> backup;
  std::shared_ptr<net::Transport> backup_serving;
  std::unique_ptr<net::Listener> backup_listener;
  std::shared_ptr<ps::BackupLink> link;
  if (replicas > 0) {
    backup = std::make_unique<ps::PsBackup>(
        ps::PsServerOptions{0, 2, ps::Mode::async, 2, 0, vars, placement, make_optimizer({.name = "sgd"})});
    auto pool = std::make_shared<PoolAllocator>();
    net::NetOptions o;
    o.allocator = pool.get();
    o.max_frame_bytes = backup->server().max_request_bytes() + 4096;
    backup_serving = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 1, ""}, o));
    ps::PsBackup* b = backup.get();
    backup_listener = backup_serving->listen(
        "127.0.0.1:0", {[b, pool](net::Message m, const net::PeerIdentity& f) { return b->handle(std::move(m), f); }});
    auto out = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 0, ""}));
    const std::string address = backup_listener->address();
    link = std::make_shared<ps::BackupLink>(
        0, [out, address] { return ps::BackupLink::Dialled{out->connect(address), address}; }, nullptr);
    server.set_forward([link](const net::Message& frame, std::int64_t& epoch) { return link->forward(frame, epoch); });
  }
  // As `trib ps` serves: pushed gradients land in pooled buffers (no page faults per push).
  auto receive_pool = std::make_shared<PoolAllocator>();
  net::NetOptions serving_options;
  serving_options.allocator = receive_pool.get();
  serving_options.max_frame_bytes = server.max_request_bytes();
  auto serving = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 0, ""}, serving_options));
  auto listener = serving->listen("127.0.0.1:0", {[&](net::Message m, const net::PeerIdentity& f) { return server.handle(std::move(m), f); }});
  {
    auto t = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"worker", 0, ""}));
    t->connect(listener->address())->call(ps_request(ps::proto::Type::init, 0, 0, Tensor::zeros(DType::f32, Shape{n})));
  }
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<bool> stop{false};
  auto worker = [&](int w) {
    auto t = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"worker", w, ""}));
    auto c = t->connect(listener->address());
    Tensor grad = Tensor::full(Shape{n}, 1.0f);
    Tensor into = Tensor::empty(DType::f32, Shape{n});
    for (std::int64_t step = 0; !stop; ++step) {
      net::RequestOptions ro;
      ro.reply_into = into;
      if (overlap) {
        auto pushed = c->request(ps_request(ps::proto::Type::push, w, step, grad));
        auto pulled = c->request(ps_request(ps::proto::Type::pull, w, step + 1), ro);
        pushed.get();
        pulled.get();
      } else {
        c->call(ps_request(ps::proto::Type::push, w, step, grad));
        c->call(ps_request(ps::proto::Type::pull, w, step + 1), ro);
      }
      bytes += 2 * grad.nbytes();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // warm up
  std::uint64_t start_bytes = bytes;
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  double rate = (bytes - start_bytes) / std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  a.join();
  b.join();
  if (link && !link->has_backup()) return 0;  // the backup was lost: no figure
  return rate;
}

// strategy.ps_replicas: how long a relaunched server's new backup takes to receive its copy
// of a 16 MiB shard trained with Adam (values, the round's sum and two slots: 64 MiB in one
// frame over loopback), during which the primary applies nothing. Median of 5, in ms.
double backup_copy_ms() {
  const std::int64_t n = 4 << 20;
  std::vector<ps::VariableInfo> vars{{"w", Shape{n}}};
  ps::Placement placement = ps::place(vars, 1, ps::PlacementStrategy::greedy, 1 << 30);
  auto options = [&] {
    return ps::PsServerOptions{0, 2, ps::Mode::async, 2, 0, vars, placement, make_optimizer({.name = "adam"})};
  };
  ps::PsServer server(options());
  server.handle(ps_request(ps::proto::Type::init, 0, 0, Tensor::zeros(DType::f32, Shape{n})), {"worker", 0, "w:0"});
  server.handle(ps_request(ps::proto::Type::push, 0, 0, Tensor::full(Shape{n}, 1.0f)), {"worker", 0, "w:0"});
  auto secret = net::ClusterSecret::generate();
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    ps::PsBackup late(options(), /*copy_first=*/true);
    net::NetOptions o;
    o.max_frame_bytes = 6 * late.server().max_request_bytes() + (16u << 20);
    auto serving = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 1, ""}, o));
    auto listener = serving->listen(
        "127.0.0.1:0", {[&late](net::Message m, const net::PeerIdentity& f) { return late.handle(std::move(m), f); }});
    auto out = std::make_shared<net::TcpTransport>(net::NetContext::create(secret, {"ps", 0, ""}, o));
    ps::BackupLink link(0, ps::BackupLink::Dial(), nullptr);
    auto c = out->connect(listener->address());
    const auto start = Clock::now();
    const bool attached = server.send_state(
        [&](const net::Message& snapshot) { return link.attach({c, listener->address()}, snapshot); });
    ms.push_back(attached ? std::chrono::duration<double, std::milli>(Clock::now() - start).count() : -1);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string trib_binary() {
  return (fs::read_symlink("/proc/self/exe").parent_path() / "trib").string();
}

std::string train_args(const std::string& model, int batch, int steps) {
  return fmt::format(
      " --set training.batch={} --set training.steps={} --set training.eval_every=100000 --set training.train_metrics=false"
      " --set data.test_subset=100 --set threads.intra=1 --set optimizer.name=sgd --set optimizer.lr=0.01"
      " --output {}/trib_psbench_{}_{}",
      batch, steps, fs::temp_directory_path().string(), model, ::getpid() + std::rand());
}

// The example job for the model, made into the peer's exact model (its MLP's second hidden
// layer has 256 units; the CNN example is the peer's CNN already).
std::string config_for(const std::string& model) {
  std::string path = fmt::format("{}/examples/fashion_{}.yaml", TRIB_SOURCE_DIR, model);
  return model == "mlp" ? path + " --set model.layers.2.units=256" : path;
}

double ours_cluster(const std::string& model, int batch, int steps, const std::string& mode, int servers = 1,
                    int replicas = 0, bool overlap = true) {
  std::string cmd = trib_binary() + " train " + config_for(model) + train_args(model, batch, steps) +
                    fmt::format(" --set cluster.ps={} --set strategy.ps_replicas={} --set strategy.ps_overlap={}",
                                servers, replicas, overlap) +
                    " --set cluster.workers=2 --set strategy.name=ps --set strategy.mode=" + mode + " 2>&1";
  return sum_matches(bench::run_command(cmd), R"(worker \d+ throughput: ([0-9.]+) images/s)");
}

double ideal(const std::string& model, int batch, int steps) {
  std::string one = trib_binary() + " train " + config_for(model) + train_args(model, batch, steps);
  std::string cmd = "(" + one + " & " + trib_binary() + " train " + config_for(model) + train_args(model, batch, steps) +
                    " & wait) 2>&1";
  return sum_matches(bench::run_command(cmd), R"(, ([0-9.]+) images/s)");
}

double peer(const std::string& model, int batch) {
  std::string py = fmt::format("/usr/bin/python3 {}/../shared/peers/torch_peer.py --model {} --batch {} --threads 1",
                               TRIB_SOURCE_DIR, model, batch);
  return sum_matches(bench::run_command("(" + py + " & " + py + " & wait) 2>/dev/null"), R"(images_per_s=([0-9.]+))");
}

}  // namespace

// Before and after strategy.ps_overlap in one run, interleaved (the machine's load drifts).
void overlap_lines() {
  double off = 0, on = 0;
  for (int r = 0; r < 3; ++r) {
    off += ps_throughput(2.0, 0, false);
    on += ps_throughput(2.0, 0, true);
  }
  fmt::print("bench=ps_overlap ps_overlap=false GBps={:.2f} ps_overlap=true GBps={:.2f} ratio={:.2f}\n", off / 3e9,
             on / 3e9, off > 0 ? on / off : 0);
  std::fflush(stdout);
  for (const char* mode : {"sync", "async"}) {
    // Off, on, on, off: a load that rises or falls during the runs weighs on both alike.
    double a = ours_cluster("cnn", 64, 60, mode, 1, 0, false), b = ours_cluster("cnn", 64, 60, mode, 1, 0, true);
    b += ours_cluster("cnn", 64, 60, mode, 1, 0, true);
    a += ours_cluster("cnn", 64, 60, mode, 1, 0, false);
    fmt::print("bench=ps_train_overlap model=cnn mode={} ps=1 workers=2 ps_overlap=false images_per_s={:.0f} "
               "ps_overlap=true images_per_s={:.0f} ratio={:.2f}\n",
               mode, a / 2, b / 2, a > 0 ? b / a : 0);
    std::fflush(stdout);
  }
}

// `ps_bench replicas`: only the bench=ps_replicas and bench=ps_train_replicas lines;
// `ps_bench overlap`: only the bench=ps_overlap and bench=ps_train_overlap lines.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "overlap") {
    overlap_lines();
    return 0;
  }
  const bool replicas_only = argc > 1 && std::string(argv[1]) == "replicas";
  double ours = replicas_only ? 0 : ps_throughput(3.0);
  if (!replicas_only) {
    auto theirs = bench::iperf3_bytes_per_s(5201 + ::getpid() % 1000, 3.0);
    fmt::print("bench=ps ours_GBps={:.2f} peer=iperf3 peer_GBps={} ratio={}\n", ours / 1e9,
               theirs ? fmt::format("{:.2f}", *theirs / 1e9) : "NA",
               theirs ? fmt::format("{:.2f}", ours / *theirs) : "NA");
  }
  std::fflush(stdout);
  {
    // Same loop, same run: without a backup, then with one.
    const double none = ps_throughput(3.0, 0), one = ps_throughput(3.0, 1);
    fmt::print("bench=ps_replicas ps_replicas=0 GBps={:.2f} ps_replicas=1 GBps={:.2f} ratio={:.2f}\n", none / 1e9,
               one / 1e9, none > 0 ? one / none : 0);
    const double train0 = ours_cluster("mlp", 256, 300, "async", 2, 0);
    const double train1 = ours_cluster("mlp", 256, 300, "async", 2, 1);
    fmt::print("bench=ps_train_replicas model=mlp mode=async ps=2 workers=2 ps_replicas=0 images_per_s={:.0f} "
               "ps_replicas=1 images_per_s={:.0f} ratio={:.2f}\n",
               train0, train1, train0 > 0 ? train1 / train0 : 0);
    fmt::print("bench=ps_backup_join shard_MiB=16 optimizer=adam state_MiB=64 copy_ms={:.0f}\n", backup_copy_ms());
    std::fflush(stdout);
  }
  if (replicas_only) return 0;
  struct Case {
    std::string model;
    int batch, steps;
  };
  for (const Case& c : {Case{"mlp", 256, 300}, Case{"cnn", 64, 60}}) {
    double id = ideal(c.model, c.batch, c.steps);
    double pe = peer(c.model, c.batch);
    for (const char* mode : {"sync", "async"}) {
      double o = ours_cluster(c.model, c.batch, c.steps, mode);
      fmt::print("bench=ps_train model={} mode={} ours_images_per_s={:.0f} ideal_images_per_s={:.0f} efficiency={:.2f} "
                 "peer_images_per_s={:.0f} ratio={:.2f}\n",
                 c.model, mode, o, id, id > 0 ? o / id : 0, pe, pe > 0 ? o / pe : 0);
      std::fflush(stdout);
    }
  }
  std::system(fmt::format("rm -rf {}/trib_psbench_*", fs::temp_directory_path().string()).c_str());
  return 0;
}
