// Loopback throughput of the TCP transport beside iperf3, measured in the same run and
// interleaved, so both see the same machine load, and its round-trip latency:
//   bench=transport bytes=16777216 cipher=aes-256-gcm ours_GBps=N peer=iperf3 peer_GBps=N ratio=R
//   bench=transport bytes=16777216 mac=gmac-aes256 ours_GBps=N peer=iperf3 peer_GBps=N ratio=R
//   bench=transport_rtt bytes=64 cipher=aes-256-gcm ours_us=N
// (one throughput line per frame protection: the default, encryption, first, then the
// MAC-only mode of security.encryption: false; the latency with the default).
//
// Ours: a client streams one-way messages, each carrying one tensor, to a server on
// 127.0.0.1 (TCP supplies the back-pressure); a final request/reply proves every byte was
// received, authenticated and handed to the handler. The server receives into pooled
// buffers, as a parameter server would. The peer: iperf3 -c 127.0.0.1 for as long.
// Round trip: call() with a 64-byte body and an empty reply, the median of 2000 after 200
// warm-up calls.
//
//   transport_bench [--mib 16] [--seconds 3] [--reps 3] [--macs aes-256-gcm,gmac-aes256,...]
//                   [--no-peer]
// Only bench= lines go to stdout; progress and notes go to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_process.h"
#include "trib/core/allocator.h"
#include "trib/net/tcp_transport.h"

using namespace trib;
using namespace trib::net;

namespace {

struct Options {
  std::size_t mib = 16;
  double seconds = 3;
  int reps = 3;
  std::vector<MacAlgorithm> macs{MacAlgorithm::aes256_gcm, MacAlgorithm::gmac_aes256};
  bool peer = true;
};

// "cipher=aes-256-gcm" or "mac=gmac-aes256".
std::string protection_field(MacAlgorithm mac) {
  return fmt::format("{}={}", encrypts(mac) ? "cipher" : "mac", mac_algorithm_name(mac));
}

// Bytes per second of protected tensor payload.
double run_ours(MacAlgorithm mac, std::size_t tensor_bytes, double seconds) {
  auto pool = std::make_shared<PoolAllocator>();
  NetOptions server_options;
  server_options.allocator = pool.get();
  server_options.encryption = encrypts(mac);  // a MAC-only client needs a MAC-only server
  auto secret = ClusterSecret::generate();
  auto quiet = [](std::string_view) {};
  auto server_ctx = NetContext::create(secret, {"ps", 0, ""}, server_options, quiet);
  TcpTransport server(server_ctx);
  std::atomic<std::uint64_t> received{0};
  auto listener = server.listen("127.0.0.1:0", {[&](Message m, const PeerIdentity&) {
    received += m.tensor.defined() ? m.tensor.nbytes() : 0;
    return Message{};
  }});
  auto client_ctx = NetContext::create(secret, {"worker", 0, ""}, NetOptions{}, quiet);
  TcpTransport client(client_ctx);
  ConnectOptions connect_options;
  connect_options.mac = mac;
  auto conn = client.connect(listener->address(), {}, connect_options);

  Tensor tensor = Tensor::full(Shape{static_cast<std::int64_t>(tensor_bytes / 4)}, 1.0f);
  for (int i = 0; i < 3; ++i) conn->notify(Message{1, "", tensor});  // fills the pool
  conn->call(Message{});
  std::uint64_t before = received.load();

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::uint64_t sent = 0;
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    conn->notify(Message{1, "", tensor});
    sent += tensor.nbytes();
  }
  conn->call(Message{});  // served after every notify: handlers run in order
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (received.load() - before != sent) {
    fmt::print(stderr, "transport_bench: sent {} bytes, received {}\n", sent,
               received.load() - before);
    std::exit(1);
  }
  return static_cast<double>(sent) / elapsed;
}

// Median microseconds of a request/reply with a 64-byte body, under the default MAC.
double run_rtt(std::size_t body_bytes, int calls) {
  auto secret = ClusterSecret::generate();
  auto quiet = [](std::string_view) {};
  TcpTransport server(NetContext::create(secret, {"ps", 0, ""}, NetOptions{}, quiet));
  auto listener = server.listen("127.0.0.1:0", {[](Message, const PeerIdentity&) { return Message{}; }});
  TcpTransport client(NetContext::create(secret, {"worker", 0, ""}, NetOptions{}, quiet));
  auto conn = client.connect(listener->address());
  const std::string body(body_bytes, 'x');
  using Clock = std::chrono::steady_clock;
  std::vector<double> us;
  for (int i = 0; i < calls + 200; ++i) {
    auto start = Clock::now();
    conn->call(Message{1, body, Tensor()});
    if (i >= 200) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--mib") o.mib = std::stoul(value());
    else if (a == "--seconds") o.seconds = std::stod(value());
    else if (a == "--reps") o.reps = std::max(1, std::stoi(value()));
    else if (a == "--no-peer") o.peer = false;
    else if (a == "--macs") {
      o.macs.clear();
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');) {
        for (auto m : {MacAlgorithm::aes256_gcm, MacAlgorithm::poly1305,
                       MacAlgorithm::gmac_aes256, MacAlgorithm::hmac_sha256}) {
          if (name == mac_algorithm_name(m)) o.macs.push_back(m);
        }
      }
    } else {
      fmt::print(stderr, "transport_bench: unknown argument {}\n", a);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  bool peer = o.peer && std::system("iperf3 --version >/dev/null 2>&1") == 0;
  if (o.peer && !peer) fmt::print(stderr, "transport_bench: iperf3 not found; no peer\n");
  int port = 15201;
  for (MacAlgorithm mac : o.macs) {
    std::vector<double> ours, theirs;
    for (int rep = 0; rep < o.reps; ++rep) {
      ours.push_back(run_ours(mac, o.mib << 20, o.seconds));
      if (peer) {
        if (auto t = bench::iperf3_bytes_per_s(port++, o.seconds)) theirs.push_back(*t);
        else fmt::print(stderr, "transport_bench: iperf3 gave no result\n");
      }
      fmt::print(stderr, "transport_bench: {} rep {}: ours {:.2f} GB/s{}\n",
                 mac_algorithm_name(mac), rep, ours.back() / 1e9,
                 theirs.empty() ? "" : fmt::format(", iperf3 {:.2f} GB/s", theirs.back() / 1e9));
    }
    const double us = median(ours) / 1e9;
    std::string line = fmt::format("bench=transport bytes={} {} ours_GBps={:.2f} ", o.mib << 20,
                                   protection_field(mac), us);
    if (theirs.empty()) {
      line += "peer=iperf3 peer_GBps=NA ratio=NA";
    } else {
      const double them = median(theirs) / 1e9;
      line += fmt::format("peer=iperf3 peer_GBps={:.2f} ratio={:.2f}", them, us / them);
    }
    fmt::print("{}\n", line);
    std::fflush(stdout);
  }
  fmt::print("bench=transport_rtt bytes=64 {} ours_us={:.1f}\n", protection_field(frame_protection(NetOptions{})),
             run_rtt(64, 2000));
}
