#include "packet_delayer.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

namespace trib::netem {
namespace {

// Packets the kernel may hold for us before it drops new ones: 200 ms of a 1 Gbit/s link in
// full-size packets is about 17,000.
constexpr std::uint32_t kQueueLength = 65536;
// The netlink socket's receive buffer: a burst of notifications must not overflow it, or
// their packets would wait for a verdict that never comes.
constexpr int kReceiveBuffer = 16 << 20;

std::runtime_error failure(const NetemSettings& s, const std::string& what) {
  return std::runtime_error("trib-netem: netfilter queue " + std::to_string(s.queue) + ": " + what);
}

}  // namespace

PacketDelayer::PacketDelayer(const NetemSettings& settings)
    : settings_(settings), random_(settings.seed), drop_(settings.loss) {
  handle_ = nfq_open();
  if (handle_ == nullptr)
    throw failure(settings_, std::string("cannot open netlink (") + std::strerror(errno) +
                                 "); needs root (CAP_NET_ADMIN) and a kernel with NETFILTER_NETLINK_QUEUE");
  queue_ = nfq_create_queue(handle_, settings_.queue, &PacketDelayer::on_packet, this);
  if (queue_ == nullptr) {
    nfq_close(handle_);
    throw failure(settings_, "cannot bind it (is another program serving it?)");
  }
  // Only the packet's metadata (its id) comes to us: the verdict needs nothing else.
  // GSO: a large segment is queued whole instead of cut into packets first, so a fast link
  // costs a few thousand verdicts a second, not a hundred thousand.
  if (nfq_set_mode(queue_, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(queue_, kQueueLength) < 0 ||
      nfq_set_queue_flags(queue_, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) {
    nfq_destroy_queue(queue_);
    nfq_close(handle_);
    throw failure(settings_, "cannot configure it");
  }
  fd_ = nfq_fd(handle_);
  nfnl_rcvbufsiz(nfq_nfnlh(handle_), kReceiveBuffer);
  int on = 1;
  ::setsockopt(fd_, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);
}

PacketDelayer::~PacketDelayer() {
  nfq_destroy_queue(queue_);
  nfq_close(handle_);
}

int PacketDelayer::on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* packet, void* self_ptr) {
  auto* self = static_cast<PacketDelayer*>(self_ptr);
  nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(packet);
  if (header == nullptr) return 0;
  std::uint32_t id = ntohl(header->packet_id);
  ++self->seen_;
  if (self->drop_(self->random_)) {
    ++self->dropped_;
    nfq_set_verdict(self->queue_, id, NF_DROP, 0, nullptr);
    return 0;
  }
  if (self->settings_.delay.count() == 0) {
    self->accept(id);
    return 0;
  }
  self->held_.push_back({id, Clock::now() + self->settings_.delay});
  return 0;
}

void PacketDelayer::accept(std::uint32_t id) { nfq_set_verdict(queue_, id, NF_ACCEPT, 0, nullptr); }

void PacketDelayer::receive() {
  for (;;) {
    ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN: drained (ENOBUFS is switched off above)
    }
    nfq_handle_packet(handle_, buffer_.data(), static_cast<int>(n));
  }
}

// Every packet has the same delay, so the held ones fall due in arrival order.
void PacketDelayer::release_due(Clock::time_point now) {
  while (!held_.empty() && held_.front().due <= now) {
    accept(held_.front().id);
    held_.pop_front();
  }
}

void PacketDelayer::run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    // Wake for the next packet due, and at least every 100 ms to notice `stop`.
    auto wait = std::chrono::milliseconds(100);
    if (!held_.empty()) {
      auto until_due = std::chrono::ceil<std::chrono::milliseconds>(held_.front().due - Clock::now());
      wait = std::clamp(until_due, std::chrono::milliseconds(0), wait);
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) > 0) receive();
    release_due(Clock::now());
  }
  for (const Held& h : held_) accept(h.id);
  held_.clear();
}

}  // namespace trib::netem
