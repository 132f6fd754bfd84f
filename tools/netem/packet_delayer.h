// Delays and drops the packets that iptables hands to one netfilter queue (NFQUEUE): the
// part of `tc netem` (delay, random loss) that kernels built without CONFIG_NET_SCH_NETEM
// lack. Each packet is held for the delay and then accepted, in arrival order, or dropped
// with the loss probability; the kernel keeps the packet meanwhile, so nothing is copied.
// Queue packets where they are forwarded (a bridge's FORWARD chain with
// bridge-nf-call-iptables), not on the sending host's OUTPUT: a packet held there still
// counts against its socket's TCP small-queue budget, which would throttle the sender far
// below what the delay alone allows (netem avoids this by orphaning the packet).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

struct nfq_handle;
struct nfq_q_handle;
struct nfgenmsg;
struct nfq_data;

namespace trib::netem {

struct NetemSettings {
  std::uint16_t queue = 0;
  std::chrono::microseconds delay{0};
  double loss = 0.0;  // probability in [0, 1]
  std::uint64_t seed = 1;
};

class PacketDelayer {
 public:
  // Binds the queue; throws std::runtime_error with one line saying why it cannot.
  explicit PacketDelayer(const NetemSettings& settings);
  ~PacketDelayer();
  PacketDelayer(const PacketDelayer&) = delete;
  PacketDelayer& operator=(const PacketDelayer&) = delete;

  // Serves the queue until `stop` is set, then lets every packet still held through.
  void run(const std::atomic<bool>& stop);

  std::uint64_t packets_seen() const { return seen_; }
  std::uint64_t packets_dropped() const { return dropped_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Held {
    std::uint32_t id;
    Clock::time_point due;
  };

  static int on_packet(nfq_q_handle* queue, nfgenmsg* message, nfq_data* packet, void* self);
  void receive();
  void release_due(Clock::time_point now);
  void accept(std::uint32_t id);

  NetemSettings settings_;
  nfq_handle* handle_ = nullptr;
  nfq_q_handle* queue_ = nullptr;
  int fd_ = -1;
  std::deque<Held> held_;
  std::vector<char> buffer_ = std::vector<char>(1 << 18);
  std::mt19937_64 random_;
  std::bernoulli_distribution drop_;
  std::uint64_t seen_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace trib::netem
