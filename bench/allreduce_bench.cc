// Allreduce bandwidth over TCP loopback beside Open MPI's, in the same run:
//   bench=allreduce np=2 bytes=16777216 ours_busbw_GBps=N peer=openmpi peer_busbw_GBps=N ratio=R
//   bench=allreduce_shm_reference np=2 bytes=16777216 peer=openmpi_shm peer_busbw_GBps=N
//
// Ours: NP forked processes, each a rank of a trib::collectives::Group over the
// authenticated TcpTransport on 127.0.0.1, timed as the peer (../shared/peers/mpi_allreduce.c)
// times MPI_Allreduce: f32 sum, 3 warm-up calls, then per iteration a barrier, the call, and
// the slowest rank's time; the median over 20 iterations (200 at 1 MiB and below).
// busbw = 2(N-1)/N * bytes / t. Ours and the peer alternate --reps times; medians are printed.
//
//   allreduce_bench [--np 2,4] [--bytes 1048576,16777216,67108864] [--reps 3] [--no-peer]
//                   [--segment-kib K] [--depth D] [--algorithm ring|direct] [--verbose] [--iters N]
//                   [--mac-only]
// --mac-only: frames authenticated (GMAC) but not encrypted (security.encryption: false), to
// separate the cipher's cost from the rest (docs/scaling_limits.md).
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_process.h"
#include "trib/collectives/collectives.h"
#include "trib/net/tcp_transport.h"

using namespace trib;
using namespace trib::collectives;
using Clock = std::chrono::steady_clock;

namespace {

using bench::read_line;
using bench::write_all;

struct Options {
  std::vector<int> np{2, 4};
  std::vector<std::size_t> bytes{1 << 20, 16 << 20, 64 << 20};
  int reps = 3;
  bool peer = true;
  std::size_t segment_kib = 0;  // 0: the group's default
  std::size_t depth = 0;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic;
  bool verbose = false;
  int iters = 0;  // 0: as the peer does
  bool mac_only = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ---- one rank (a forked child) ----

// Seconds of the slowest rank per call, median over the iterations.
double time_allreduce(Group& group, std::size_t bytes, const Options& o) {
  Tensor t = Tensor::full(Shape{static_cast<std::int64_t>(bytes / 4)}, static_cast<float>(group.rank() + 1));
  AllreduceOptions ar{.algorithm = o.algorithm};
  const int iters = o.iters > 0 ? o.iters : bytes <= (1u << 20) ? 200 : 20;
  for (int w = 0; w < 3; ++w) allreduce(group, t, ar);
  std::vector<double> slowest;
  for (int i = 0; i < iters; ++i) {
    barrier(group);
    auto t0 = Clock::now();
    allreduce(group, t, ar);
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    Tensor all = allgather(group, Tensor::scalar(static_cast<float>(dt)));
    slowest.push_back(*std::max_element(all.data<float>(), all.data<float>() + all.numel()));
    if (o.verbose && group.rank() == 0) fmt::print(stderr, "  bytes={} iteration {}: {:.3f} ms\n", bytes, i, slowest.back() * 1e3);
  }
  return median(slowest);
}

[[noreturn]] void run_rank(int rank, int np, int to_parent, int from_parent, const Options& o) {
  try {
    auto secret = net::ClusterSecret::from_hex(read_line(from_parent));
    auto ctx = net::NetContext::create(secret, net::PeerIdentity{"worker", rank, ""}, net::NetOptions{.encryption = !o.mac_only},
                                       [](std::string_view) {});
    auto transport = std::make_shared<net::TcpTransport>(ctx);
    Endpoint endpoint = Endpoint::listen(transport, "127.0.0.1:0");
    write_all(to_parent, endpoint.address() + "\n");
    GroupOptions go{.rank = rank, .size = np};
    for (int r = 0; r < np; ++r) go.addresses.push_back(read_line(from_parent));
    if (o.segment_kib) go.segment_bytes = o.segment_kib << 10;
    if (o.depth) go.pipeline_depth = o.depth;
    auto group = Group::form(std::move(endpoint), go);
    std::string results;
    for (std::size_t bytes : o.bytes) {
      double t = time_allreduce(*group, bytes, o);
      results += fmt::format("{} {:.9f}\n", bytes, t);
    }
    barrier(*group);
    group.reset();  // leaves the group cleanly before the process ends
    if (rank == 0) write_all(to_parent, results + "done\n");
    std::fflush(nullptr);
    std::_Exit(0);
  } catch (const std::exception& e) {
    fmt::print(stderr, "allreduce_bench: rank {}: {}\n", rank, e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

// ---- the parent ----

// Seconds per call by size, from NP forked ranks; empty on failure.
std::map<std::size_t, double> run_ours(int np, const Options& o) {
  auto secret = net::ClusterSecret::generate().to_hex();
  std::vector<int> to_child(np), from_child(np);
  std::vector<pid_t> pids;
  for (int r = 0; r < np; ++r) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      run_rank(r, np, up[1], down[0], o);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_child[r] = down[1];
    from_child[r] = up[0];
    pids.push_back(pid);
  }
  for (int r = 0; r < np; ++r) write_all(to_child[r], secret + "\n");
  std::string addresses;
  for (int r = 0; r < np; ++r) addresses += read_line(from_child[r]) + "\n";
  for (int r = 0; r < np; ++r) write_all(to_child[r], addresses);
  std::map<std::size_t, double> out;
  for (std::string line = read_line(from_child[0]); !line.empty() && line != "done"; line = read_line(from_child[0])) {
    std::istringstream in(line);
    std::size_t bytes;
    double seconds;
    in >> bytes >> seconds;
    out[bytes] = seconds;
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (int r = 0; r < np; ++r) {
    ::close(to_child[r]);
    ::close(from_child[r]);
  }
  if (!ok) out.clear();
  return out;
}

// busbw (GB/s) by size from ../shared/peers/mpi_allreduce.sh; empty if it failed.
std::map<std::size_t, double> run_peer(int np, const std::string& transport, const Options& o) {
  std::string cmd = fmt::format("bash {}/../shared/peers/mpi_allreduce.sh {} {}", TRIB_SOURCE_DIR, np, transport);
  for (std::size_t b : o.bytes) cmd += fmt::format(" {}", b);
  cmd += " 2>&1";
  std::map<std::size_t, double> out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[1024];
  std::string all;
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    std::string line = buf;
    all += line;
    auto b = line.find(" bytes="), bw = line.find("busbw_GBps=");
    if (line.rfind("peer=openmpi", 0) != 0 || b == std::string::npos || bw == std::string::npos) continue;
    out[std::stoull(line.substr(b + 7))] = std::stod(line.substr(bw + 11));
  }
  if (::pclose(p) != 0 || out.empty()) {
    fmt::print(stderr, "allreduce_bench: the peer failed ({}): {}\n", cmd, all);
    out.clear();
  }
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--np") {
      o.np.clear();
      for (auto& v : split(value())) o.np.push_back(std::stoi(v));
    } else if (a == "--bytes") {
      o.bytes.clear();
      for (auto& v : split(value())) o.bytes.push_back(std::stoull(v));
    } else if (a == "--reps") {
      o.reps = std::max(1, std::stoi(value()));
    } else if (a == "--iters") {
      o.iters = std::stoi(value());
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a == "--mac-only") {
      o.mac_only = true;
    } else if (a == "--no-peer") {
      o.peer = false;
    } else if (a == "--segment-kib") {
      o.segment_kib = std::stoull(value());
    } else if (a == "--depth") {
      o.depth = std::stoull(value());
    } else if (a == "--algorithm") {
      std::string v = value();
      o.algorithm = v == "ring" ? AllreduceAlgorithm::ring : v == "direct" ? AllreduceAlgorithm::direct
                                                                            : AllreduceAlgorithm::automatic;
    } else {
      fmt::print(stderr, "allreduce_bench: unknown argument {}\n", a);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  bool peer = o.peer && std::system("command -v mpirun >/dev/null 2>&1") == 0;
  if (o.peer && !peer) fmt::print(stderr, "allreduce_bench: mpirun not found; no peer\n");
  int status = 0;
  for (int np : o.np) {
    std::map<std::size_t, std::vector<double>> ours, theirs;
    for (int rep = 0; rep < o.reps; ++rep) {
      auto t = run_ours(np, o);
      if (t.empty()) {
        fmt::print(stderr, "allreduce_bench: np={} failed\n", np);
        status = 1;
      }
      for (auto [bytes, seconds] : t) {
        double busbw = 2.0 * (np - 1) / np * static_cast<double>(bytes) / seconds / 1e9;
        ours[bytes].push_back(busbw);
        fmt::print(stderr, "allreduce_bench: np={} bytes={} rep {}: ours {:.3f} ms busbw {:.3f} GB/s\n", np, bytes,
                   rep, seconds * 1e3, busbw);
      }
      if (peer) {
        for (auto [bytes, busbw] : run_peer(np, "tcp", o)) {
          theirs[bytes].push_back(busbw);
          fmt::print(stderr, "allreduce_bench: np={} bytes={} rep {}: openmpi tcp busbw {:.3f} GB/s\n", np, bytes,
                     rep, busbw);
        }
      }
    }
    for (std::size_t bytes : o.bytes) {
      if (ours[bytes].empty()) continue;
      double us = median(ours[bytes]);
      std::string line = fmt::format("bench=allreduce np={} bytes={} ours_busbw_GBps={:.3f} peer=openmpi ", np, bytes, us);
      if (theirs[bytes].empty()) {
        line += "peer_busbw_GBps=NA ratio=NA";
      } else {
        double them = median(theirs[bytes]);
        line += fmt::format("peer_busbw_GBps={:.3f} ratio={:.2f}", them, us / them);
      }
      fmt::print("{}\n", line);
    }
    if (peer) {
      for (auto [bytes, busbw] : run_peer(np, "shm", o)) {
        fmt::print("bench=allreduce_shm_reference np={} bytes={} peer=openmpi_shm peer_busbw_GBps={:.3f}\n", np,
                   bytes, busbw);
      }
    }
    std::fflush(stdout);
  }
  return status;
}
