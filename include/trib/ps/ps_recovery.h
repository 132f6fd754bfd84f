// What a parameter-server worker needs to survive a lost server (docs/fault_tolerance.md,
// "Parameter servers: automatic restore"). The launcher relaunches the server, empty; the
// chief (worker 0) restores every server from its newest checkpoint (or the initial values
// when there is none yet) in a new generation and announces it under kRestoreKey; every
// worker then rewinds its step and data to that checkpoint's and goes on. Requests from
// before the restore carry an older generation and are answered kFlagRolledBack, so no
// update from before the rollback is applied after it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trib/core/error.h"
#include "trib/net/transport.h"
#include "trib/update/update_strategy.h"

namespace trib::ps {

// The chief's announcement: {"generation": G, "step": S, "checkpoint": "<dir>" or "" (the
// initial values), "data_position": the checkpoint's (JSON, null without one), "sections": its
// manifest sections (null without one), "lost": "ps 1"}.
using update::kRestoreKey;
// Where worker w says how many steps it redid after the restore of generation G.
std::string redone_key(std::int64_t generation, int worker);

struct PsRecoveryOptions {
  // Connects to server `ps` as it is now (the address it published last: a relaunched
  // server's), trying until `timeout`. Empty: no recovery, a lost server ends the worker.
  std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> reconnect;
  // The job's rendezvous store.
  std::function<void(const std::string& key, const std::string& value)> publish;
  std::function<std::optional<std::string>(const std::string& key)> lookup;
  // How many workers no process will come back for: the launcher gave up on them
  // (cluster.max_restarts spent, or 0; cluster/membership_keys.h given_up). The chief's
  // finish stops waiting out its grace for lost workers once every one away is such.
  // Empty: none known (under `trib coordinator`, whose supervisors may start one again).
  std::function<int()> given_up_workers;
  // The membership's generation now. A restore continues in a generation newer than every
  // request sent before it: the relaunched server's join started one.
  std::function<std::int64_t()> generation;
  // Chief: the directory its checkpoints are in (RUN_DIR/checkpoints).
  std::string checkpoints;
  // strategy.ps_replicas: 1: connects to the backup of server `ps`, which takes the shard
  // over when a request to `ps` finds its connection closed: the request is sent there
  // instead and the job goes on with no rollback (src/ps/shard_failover.h). The chief's
  // restore also reaches a shard there when the server at its address is gone too (no copy
  // left: the backup takes the shard over from the restore). Empty: none.
  std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> backup;
  // Longest wait for a relaunched server, or (not the chief) for the chief's restore.
  std::chrono::milliseconds timeout{120000};
  // Chief: this process was started in place of a lost chief (cluster/membership_keys.h,
  // kChiefRelaunched). It does not initialize the servers. With `chief_rejoins`, when every
  // server still holds the job's state (none was lost with the chief, or a backup took its
  // shard over), it rejoins the running job as a relaunched worker does: the servers' values,
  // optimizer state, its step and its data cursor, and nothing rolls back
  // (strategy_ps_rejoin.cc). Otherwise (a server relaunched empty, or without
  // `chief_rejoins`) it restores every server from the newest checkpoint in a new
  // generation, as after a server's loss, and every worker rewinds.
  bool chief_relaunched = false;
  // A file job's relaunched chief rejoins in place (above), and so does a parameter-server
  // stream job's whose partitions the job assigns (its share resumes at its cursor). False for
  // a stream job on the consumer group: only a checkpoint holds its offsets for the new chief.
  bool chief_rejoins = false;
  // Where it cannot rejoin: take the job back to the newest checkpoint (above). False for a
  // stream job: the relaunched chief fails instead, and the launcher restarts the job whole
  // (its workers' Kafka positions and the chief's would not follow the same checkpoint).
  bool chief_takes_back = true;

  bool enabled() const { return static_cast<bool>(reconnect); }

  // Server `ps` at its published address; with backups, that address only for `address_try`,
  // then the shard's backup until `timeout`: the server there may be gone with nobody having
  // moved the shard yet (lost with the chief, or lost before a relaunched backup held the copy).
  std::shared_ptr<net::Connection> reconnect_or_backup(int ps, std::chrono::milliseconds timeout,
                                                       std::chrono::milliseconds address_try) const {
    if (!backup) return reconnect(ps, timeout);
    try {
      return reconnect(ps, std::min(timeout, address_try));
    } catch (const Timeout&) {
    } catch (const Unavailable&) {
    }
    return backup(ps, timeout);
  }
};

}  // namespace trib::ps
