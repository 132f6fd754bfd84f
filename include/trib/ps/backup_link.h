// A primary parameter server's link to the backup of its shard (strategy.ps_replicas: 1):
// PsServer's forward hook. Each frame is sent and its acknowledgement awaited before the
// server answers the request that caused it (chain replication: what a worker was told is
// on both). The connection is dialled at the first frame (the backup's server may start
// later). A backup that cannot be reached, or refuses (it took over: this primary was cut
// off), is given up with one line: the shard then goes on without a backup, as with
// ps_replicas: 0. Thread-safe; the server calls it under its own lock, so frames go in order.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "trib/net/transport.h"

namespace trib::ps {

class BackupLink {
 public:
  // `dial` connects to the backup, or throws.
  using Dial = std::function<std::shared_ptr<net::Connection>()>;
  BackupLink(int shard, Dial dial, std::function<void(const std::string&)> log);

  // Never throws: see above.
  void forward(const net::Message& frame);
  bool has_backup() const;

 private:
  int shard_;
  Dial dial_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::shared_ptr<net::Connection> connection_;
  bool given_up_ = false;
};

}  // namespace trib::ps
