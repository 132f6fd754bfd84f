// Where a worker sends a shard's requests (strategy.ps_replicas: 1, docs/fault_tolerance.md,
// "Hot backups"): to its primary, and once that primary's connection is lost, to its backup,
// which has applied everything the primary acknowledged and takes over. The request that
// found the primary gone is sent to the backup as it was: a push the primary applied and
// forwarded before dying carries the sequence number the backup has already seen, and is
// answered without being applied twice. A shard fails over again when its acting primary is
// lost in turn (a relaunched server holds the new copy, published under the same key), or
// answers Unavailable because it was fenced (replaced while cut off). A backup that holds no
// copy yet (the shard lost again before a relaunched server received it) is a lost server:
// the request fails, saying the shard falls back to PsUpdate's restore, in which the chief
// restores the shard at such a backup from the newest checkpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trib/net/transport.h"

namespace trib::ps {

class ShardFailover {
 public:
  using Dial = std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)>;
  // `servers`: the worker's connections by server index, replaced in place on a failover.
  // `backup` empty: no backups (requests fail as the connection does).
  ShardFailover(std::vector<std::shared_ptr<net::Connection>>* servers, Dial backup, int worker,
                std::function<void(const std::string&)> log);

  // servers[ps]->call(m, options), failing over to the shard's backup if its server is lost.
  // Calls for different servers may run concurrently; one server's are not.
  net::Message call(int ps, const net::Message& m, const net::RequestOptions& options = {});
  // The next push sequence number for server `ps` (from 1).
  std::uint32_t next_seq(int ps) { return ++seq_[static_cast<std::size_t>(ps)]; }
  // Shards now served by their backup.
  int failovers() const;
  // Whether server `ps`'s requests now go to its backup (a series of requests begun on the
  // primary, such as a save's parts, starts over there).
  bool failed_over(int ps) const { return failed_over_[static_cast<std::size_t>(ps)] != 0; }

 private:
  std::vector<std::shared_ptr<net::Connection>>* servers_;
  Dial backup_;
  int worker_;
  std::function<void(const std::string&)> log_;
  std::vector<char> failed_over_;  // per server; each touched by that server's calls only
  std::vector<std::uint32_t> seq_;
};

}  // namespace trib::ps
