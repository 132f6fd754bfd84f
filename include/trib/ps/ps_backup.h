// The hot backup of one parameter server's shard (strategy.ps_replicas: 1,
// docs/fault_tolerance.md, "Hot backups"). Server (p + 1) mod n holds it for server p, behind
// a listener of its own. Until p is lost it only applies what p forwards (replica frames,
// src/ps/replica_wire.h): the same requests and membership events, in the order p applied
// them, so it holds the same values, optimizer slots, clocks, rounds, roster, push sequence
// numbers and data claims. The first request a worker sends it directly (its connection to
// p closed) makes it the shard's acting primary: it serves pulls and pushes as p did, and
// refuses forwards from then on (a primary cut off rather than dead would otherwise diverge).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "trib/net/transport.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

class PsBackup {
 public:
  // The options of the shard's own server (index p), as p was started with them.
  explicit PsBackup(PsServerOptions options);
  // The backup listener's handler: replica frames from the primary, or (after it is lost)
  // a worker's PS requests.
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  // The backup listener's on_close: after the takeover, a worker's connection closing is its loss.
  void connection_closed(const net::PeerIdentity& peer);
  // Membership from this process's own subscription: ignored while the primary forwards its
  // own (in its order), applied after the takeover.
  void worker_lost(int worker, std::int64_t generation);
  void worker_joined(int worker, std::int64_t incarnation);
  void set_log(std::function<void(const std::string&)> log);

  bool acting() const { return acting_.load(); }
  int shard() const { return shard_; }
  PsServer& server() { return server_; }

 private:
  net::Message apply_frame(const net::Message& m);

  int shard_;
  PsServer server_;
  std::atomic<bool> acting_{false};
  std::function<void(const std::string&)> log_;
};

}  // namespace trib::ps
