#include "trib/ps/ps_backup.h"

#include "ps/ps_wire.h"
#include "ps/replica_wire.h"

namespace trib::ps {

PsBackup::PsBackup(PsServerOptions options, bool copy_first)
    : shard_(options.index), server_(std::move(options)), copied_(!copy_first) {}

void PsBackup::set_log(std::function<void(const std::string&)> log) {
  log_ = log;
  server_.set_log(std::move(log));
}

net::Message PsBackup::handle(net::Message m, const net::PeerIdentity& from) {
  if (m.method == replica::kReplicaMethod) return apply_frame(m);
  if (!acting_.load()) {
    std::lock_guard lock(takeover_mu_);
    if (!acting_.load()) {
      if (!copied_.load() && is_restore(m))
        take_over_from_restore_locked(from);
      else
        take_over_locked(from);
    }
  }
  return server_.handle(std::move(m), from);
}

void PsBackup::take_over_locked(const net::PeerIdentity& from) {
  TRIB_CHECK(copied_.load(), Unavailable,
             "ps {}'s backup joined late and holds no copy of the shard yet: it cannot take the shard over", shard_);
  const std::int64_t next = server_.epoch() + 1;
  TRIB_CHECK(!claim_ || claim_(next), Unavailable,
             "ps {}'s backup cannot take the shard over: its primary went on without it (epoch {} is taken)", shard_,
             next);
  server_.set_epoch(next);
  // No request of this server runs yet (each waits at the gate above), so the hook is set
  // before any change could use it.
  if (forward_) server_.set_forward(forward_);
  server_.take_over();
  acting_.store(true);
  if (log_)
    log_(fmt::format("ps {}'s backup: {} came here (its connection to ps {} closed); taking over the shard with "
                     "no rollback (epoch {})",
                     shard_, from.to_string(), shard_, next));
  if (taken_over_) taken_over_();
}

bool PsBackup::is_restore(const net::Message& m) {
  if (m.method != proto::kPsMethod) return false;
  try {
    return proto::decode(m.body).type() == proto::Type::restore;
  } catch (const Error&) {
    return false;  // malformed: refused as any request before the copy
  }
}

void PsBackup::take_over_from_restore_locked(const net::PeerIdentity& from) {
  // The shard's primary was lost before this backup received its copy, and the shard's
  // other copy with it: the chief restores the shard here from its newest checkpoint (in a
  // generation newer than every request, so the whole job rolls back to it). The shard's
  // next free epoch: earlier takeovers may have claimed the ones after this backup's.
  std::int64_t next = server_.epoch() + 1;
  constexpr int kMaxEpochTries = 64;
  for (int tries = 1; claim_ && !claim_(next); ++tries, ++next)
    TRIB_CHECK(tries < kMaxEpochTries, Unavailable, "ps {}'s backup cannot claim an epoch of the shard (up to {})",
               shard_, next);
  server_.set_epoch(next);
  if (forward_) server_.set_forward(forward_);
  server_.take_over();
  copied_.store(true);
  acting_.store(true);
  if (log_)
    log_(fmt::format("ps {}'s backup: holds no copy of the shard (its primary was lost before the copy arrived); "
                     "{} restores the shard here from the newest checkpoint: taking the shard over with the job's "
                     "rollback (epoch {})",
                     shard_, from.to_string(), next));
  if (taken_over_) taken_over_();
}

net::Message PsBackup::apply_frame(const net::Message& m) {
  std::lock_guard lock(takeover_mu_);
  std::string_view body;  // a view: a snapshot's state is large
  const replica::Frame f = replica::decode_head(m.body, body);
  const net::Message ack{replica::kReplicaMethod, std::string(), Tensor()};
  if (acting_.load()) {
    // This backup holds the shard now: its former primary was replaced.
    return net::Message{replica::kReplicaMethod, replica::encode_refusal(server_.epoch()), Tensor()};
  }
  if (f.kind == replica::Kind::snapshot) {
    // A primary in an older epoch than the copy held (replaced, but not told yet) is refused.
    if (copied_.load() && f.number < server_.epoch())
      return net::Message{replica::kReplicaMethod, replica::encode_refusal(server_.epoch()), Tensor()};
    server_.load_state(body);
    copied_.store(true);
    if (log_)
      log_(fmt::format("ps {}'s backup: holds a copy of the shard (epoch {}, {} updates applied); it takes over if "
                       "the shard's primary is lost",
                       shard_, f.number, server_.stats().applied));
    return ack;
  }
  TRIB_CHECK(copied_.load(), InvalidArgument, "ps {}'s backup: a frame of kind {} before the shard's copy", shard_,
             static_cast<int>(f.kind));
  // The worker's connection on the primary stands for it here: the roster sees the same
  // connections come and go as the primary's did.
  const net::PeerIdentity origin{"worker", f.worker, f.address};
  switch (f.kind) {
    case replica::Kind::request: {
      net::Message reply = server_.handle(net::Message{proto::kPsMethod, std::string(body), m.tensor}, origin);
      (void)reply;  // the primary answered the worker; the backup only follows
      break;
    }
    case replica::Kind::noted: server_.note_forwarded(f.worker, f.address); break;
    case replica::Kind::closed: server_.connection_closed(origin); break;
    case replica::Kind::lost: server_.worker_lost(f.worker, f.number); break;
    case replica::Kind::joined: server_.worker_joined(f.worker, f.number); break;
    case replica::Kind::snapshot: break;  // handled above
  }
  return ack;
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
