// The hot backup of one parameter server's shard (strategy.ps_replicas: 1,
// docs/fault_tolerance/parameter_servers.md, "Hot backups"). Server (p + 1) mod n holds it for
// server p, behind a listener of its own. Until p is lost it only applies what p forwards
// (replica frames, src/ps/replica_wire.h): the same requests and membership events, in the
// order p applied them, so it holds the same values, optimizer slots, clocks, rounds, roster,
// push sequence numbers and data claims. The first request a worker sends it directly (its
// connection to p closed) makes it the shard's acting primary, in the shard's next epoch: it
// serves pulls and pushes as p did, and refuses p's frames from then on, naming that epoch
// (fencing: p, cut off rather than dead, learns it was replaced and acknowledges nothing).
// A backup that joins late (a relaunched server, `copy_first`) holds nothing until its
// primary's snapshot frame (PsServer::send_state), and refuses to take over before it, except
// from the chief's restore (its primary was lost before the copy arrived: the shard falls
// back to the automatic restore from the newest checkpoint, and the backup serves it).
// Once acting, its changes go to a backup of its own through set_forward (none until a new
// one attaches).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "trib/net/transport.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

class PsBackup {
 public:
  // The options of the shard's own server (index p), as p was started with them.
  explicit PsBackup(PsServerOptions options, bool copy_first = false);
  // The backup listener's handler: replica frames from the primary, or (after it is lost)
  // a worker's PS requests. A takeover that is not allowed (no copy yet, or the primary went
  // on alone in the epoch it would take) is answered Unavailable.
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  // The backup listener's on_close: after the takeover, a worker's connection closing is its loss.
  void connection_closed(const net::PeerIdentity& peer);
  // Membership from this process's own subscription: ignored while the primary forwards its
  // own (in its order), applied after the takeover.
  void worker_lost(int worker, std::int64_t generation);
  void worker_joined(int worker, std::int64_t incarnation);
  void set_log(std::function<void(const std::string&)> log);
  // Set before serving. `claim` (BackupLink::Claim) moves the shard to the next epoch at the
  // takeover; without one the takeover always wins. `taken_over` runs once the takeover won,
  // before the first request is served (publish this listener as the shard's address).
  // `forward`: where the acting primary's changes go.
  void set_claim(std::function<bool(std::int64_t epoch)> claim) { claim_ = std::move(claim); }
  void set_taken_over(std::function<void()> taken_over) { taken_over_ = std::move(taken_over); }
  void set_forward(PsServer::Forward forward) { forward_ = std::move(forward); }

  bool acting() const { return acting_.load(); }
  bool holds_copy() const { return copied_.load(); }
  int shard() const { return shard_; }
  PsServer& server() { return server_; }

 private:
  net::Message apply_frame(const net::Message& m);
  // Under takeover_mu_: becomes the acting primary, or throws Unavailable.
  void take_over_locked(const net::PeerIdentity& from);
  // Under takeover_mu_, with no copy: the chief's restore makes it the acting primary.
  void take_over_from_restore_locked(const net::PeerIdentity& from);
  static bool is_restore(const net::Message& m);

  int shard_;
  PsServer server_;
  std::atomic<bool> acting_{false};
  std::atomic<bool> copied_{true};
  // Frames and the takeover, one at a time: no frame is applied once the takeover began.
  std::mutex takeover_mu_;
  std::function<bool(std::int64_t)> claim_;
  std::function<void()> taken_over_;
  PsServer::Forward forward_;
  std::function<void(const std::string&)> log_;
};

}  // namespace trib::ps
