// A primary parameter server's link to the backup of its shard (strategy.ps_replicas: 1):
// PsServer's forward hook. Each frame is sent and its acknowledgement awaited before the
// server answers the request that caused it (chain replication: what a worker was told is
// on both). The connection is dialled at the first frame (the backup's server may start
// later).
//
// Fencing (docs/fault_tolerance/parameter_servers.md, "Hot backups"): a backup that took the
// shard over refuses its former primary's frames, naming the shard's new epoch; the link is
// then fenced, and the server acknowledges nothing more. A backup that cannot be reached is
// given up only once this primary has claimed the shard's next epoch (Claim: one winner per
// epoch, in the coordinator's store): if the backup took over first, the claim fails and this
// primary is fenced instead; if the claim wins, the backup can no longer take over, and the
// shard goes on without one until a new backup attaches (a relaunched server, attach()).
// Thread-safe; the server calls it under its own lock, so frames go in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "trib/net/transport.h"

namespace trib::ps {

class BackupLink {
 public:
  struct Dialled {
    std::shared_ptr<net::Connection> connection;
    std::string address;
  };
  // `dial` connects to the backup, or throws. Empty: the link starts without a backup (an
  // acting primary's, until a new backup attaches).
  using Dial = std::function<Dialled()>;
  // The shard moves on to `epoch`; true if this caller was the first to claim it.
  using Claim = std::function<bool(std::int64_t epoch)>;
  BackupLink(int shard, Dial dial, std::function<void(const std::string&)> log);
  // Without one, a lost backup is given up at once (no coordinator to ask: tests, one host).
  void set_claim(Claim claim);

  // PsServer::Forward. Never throws; `epoch` is the shard's, moved on when this primary goes
  // on alone. False: fenced (this primary was replaced).
  bool forward(const net::Message& frame, std::int64_t& epoch);
  // A new backup at `d` joins: `snapshot` (PsServer::send_state's frame) goes first, and the
  // frames after it follow. False if the backup could not be reached (nothing changes) or
  // refused it as a newer holder of the shard (this primary is then fenced).
  bool attach(Dialled d, const net::Message& snapshot);
  // A backup receives the frames (or will, once dialled).
  bool has_backup() const;
  bool fenced() const;
  // The backup's address: the one frames go to, or the last one given up.
  std::string address() const;

 private:
  // Under mu_: the backup refused a frame as a newer holder of the shard.
  void fence_locked(std::int64_t epoch);

  int shard_;
  Dial dial_;
  Claim claim_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::shared_ptr<net::Connection> connection_;
  std::string address_;
  bool given_up_ = false;
  bool fenced_ = false;
};

}  // namespace trib::ps
