#include "trib/ps/ps_backup.h"

#include "ps/ps_wire.h"
#include "ps/replica_wire.h"

namespace trib::ps {

PsBackup::PsBackup(PsServerOptions options) : shard_(options.index), server_(std::move(options)) {}

void PsBackup::set_log(std::function<void(const std::string&)> log) {
  log_ = log;
  server_.set_log(std::move(log));
}

net::Message PsBackup::handle(net::Message m, const net::PeerIdentity& from) {
  if (m.method == replica::kReplicaMethod) return apply_frame(m);
  if (!acting_.exchange(true)) {
    server_.take_over();
    if (log_)
      log_(fmt::format("ps {}'s backup: {} came here (its connection to ps {} closed); taking over the shard with "
                       "no rollback",
                       shard_, from.to_string(), shard_));
  }
  return server_.handle(std::move(m), from);
}

net::Message PsBackup::apply_frame(const net::Message& m) {
  TRIB_CHECK(!acting_.load(), InvalidArgument,
             "ps {}'s backup took over the shard: forwards from its former primary are refused", shard_);
  const replica::Frame f = replica::decode(m.body);
  // The worker's connection on the primary stands for it here: the roster sees the same
  // connections come and go as the primary's did.
  const net::PeerIdentity origin{"worker", f.worker, f.address};
  switch (f.kind) {
    case replica::Kind::request: {
      net::Message reply = server_.handle(net::Message{proto::kPsMethod, f.body, m.tensor}, origin);
      (void)reply;  // the primary answered the worker; the backup only follows
      break;
    }
    case replica::Kind::noted: server_.note_forwarded(f.worker, f.address); break;
    case replica::Kind::closed: server_.connection_closed(origin); break;
    case replica::Kind::lost: server_.worker_lost(f.worker, f.number); break;
    case replica::Kind::joined: server_.worker_joined(f.worker, f.number); break;
  }
  return net::Message{replica::kReplicaMethod, std::string(), Tensor()};
}

void PsBackup::connection_closed(const net::PeerIdentity& peer) {
  if (acting_.load()) server_.connection_closed(peer);
}

void PsBackup::worker_lost(int worker, std::int64_t generation) {
  if (acting_.load()) server_.worker_lost(worker, generation);
}

void PsBackup::worker_joined(int worker, std::int64_t incarnation) {
  if (acting_.load()) server_.worker_joined(worker, incarnation);
}

}  // namespace trib::ps
