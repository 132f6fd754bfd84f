// trib-netem: `tc netem`'s delay and random loss for kernels without it, on the packets that
// iptables sends to an NFQUEUE. Run it in the network namespace whose rules queue them; for
// the hosts on a bridge, in the bridge's namespace:
//   sysctl net.bridge.bridge-nf-call-iptables=1
//   iptables -A FORWARD -m physdev --physdev-in v3 -j NFQUEUE --queue-num 0
//   trib-netem --queue 0 --delay-ms 100 --loss 5
// scripts/trib-emulate and the bad-network test (RELIABILITY.md row 6) use it this way.
#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "packet_delayer.h"

namespace {
std::atomic<bool> stop_requested{false};
void request_stop(int) { stop_requested = true; }
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Delays and drops the packets of one netfilter queue, like tc netem", "trib-netem"};
  int queue = 0;
  double delay_ms = 0;
  double loss_percent = 0;
  std::uint64_t seed = 1;
  app.add_option("--queue", queue, "NFQUEUE number that iptables sends packets to")->check(CLI::Range(0, 65535));
  app.add_option("--delay-ms", delay_ms, "how long each packet is held")->check(CLI::Range(0.0, 60000.0));
  app.add_option("--loss", loss_percent, "percentage of packets dropped")->check(CLI::Range(0.0, 100.0));
  app.add_option("--seed", seed, "seed of the loss draws");
  CLI11_PARSE(app, argc, argv);

  trib::netem::NetemSettings settings;
  settings.queue = static_cast<std::uint16_t>(queue);
  settings.delay = std::chrono::microseconds(static_cast<long>(delay_ms * 1000));
  settings.loss = loss_percent / 100.0;
  settings.seed = seed;
  try {
    trib::netem::PacketDelayer delayer(settings);
    std::signal(SIGTERM, request_stop);
    std::signal(SIGINT, request_stop);
    std::printf("trib-netem: queue %d: delay %g ms, loss %g%%\n", queue, delay_ms, loss_percent);
    std::fflush(stdout);
    delayer.run(stop_requested);
    std::printf("trib-netem: queue %d: %llu packets, %llu dropped\n", queue,
                static_cast<unsigned long long>(delayer.packets_seen()),
                static_cast<unsigned long long>(delayer.packets_dropped()));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
