// PsServer's part in strategy.ps_replicas: 1 (docs/fault_tolerance.md, "Hot backups"): a
// primary hands every state change to its backup before it answers; a push retried after a
// failover applies once; a backup taking over forgets the primary's connections.
#include <algorithm>

#include "ps/ps_wire.h"
#include "ps/replica_wire.h"
#include "ps/worker_roster.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

void PsServer::forward_locked(std::uint8_t kind, int worker, std::int64_t number, const std::string& address,
                              const net::Message* request) {
  if (!forward_) return;
  replica::Frame f;
  f.kind = static_cast<replica::Kind>(kind);
  f.worker = worker;
  f.number = number;
  f.address = address.substr(0, replica::kMaxAddressBytes);
  if (request != nullptr) f.body = request->body;
  if (fenced_.load()) return;
  const net::Message frame{replica::kReplicaMethod, replica::encode(f), request != nullptr ? request->tensor : Tensor()};
  if (!forward_(frame, epoch_)) {
    // handle() answers the request Unavailable; membership events need no answer.
    fenced_.store(true);
    if (log_)
      log_(fmt::format("ps {}: fenced (its link to the backup says why): it applies and answers nothing more",
                       o_.index));
    return;
  }
  stats_.forwarded++;
}

bool PsServer::duplicate_locked(const proto::Header& h) {
  if (h.seq == 0) return false;
  const auto w = static_cast<std::size_t>(h.worker);
  // A newer incarnation (relaunched, or rewound by a restore) counts from 1 again.
  if (h.generation > seq_generation_[w]) {
    seq_generation_[w] = h.generation;
    last_seq_[w] = 0;
  }
  if (h.generation == seq_generation_[w] && h.seq <= last_seq_[w]) {
    stats_.duplicate_pushes++;
    return true;
  }
  last_seq_[w] = std::max(last_seq_[w], h.seq);
  return false;
}

void PsServer::note_forwarded(int worker, const std::string& address) {
  note_worker(worker, proto::Type::pull, net::PeerIdentity{"worker", worker, address});
}

std::int64_t PsServer::epoch() const {
  std::lock_guard lock(mu_);
  return epoch_;
}

void PsServer::set_epoch(std::int64_t epoch) {
  std::lock_guard lock(mu_);
  epoch_ = epoch;
}

bool PsServer::send_state(const std::function<bool(const net::Message&)>& send) {
  std::lock_guard lock(mu_);
  replica::Frame f;
  f.kind = replica::Kind::snapshot;
  f.number = epoch_;
  // The state is written after the frame's fixed part, in place (one copy of a large shard).
  return send(net::Message{replica::kReplicaMethod, encode_state_locked(replica::encode(f)), Tensor()});
}

void PsServer::take_over() {
  std::lock_guard lock(mu_);
  roster_->forget_connections();
  stats_.takeovers++;
  changed_.notify_all();
}

}  // namespace trib::ps
