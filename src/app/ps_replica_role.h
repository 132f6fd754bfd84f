// strategy.ps_replicas: 1 in a cluster (docs/fault_tolerance.md, "Hot backups"). Server i
// also holds the backup of server (i - 1) mod n's shard, so the backup of shard i lives on
// server (i + 1) mod n: never on the shard's own server, every server holds exactly one
// backup (its memory and the forwarding traffic are spread evenly), and a worker finds a
// shard's backup from the shard's index alone. A relaunched server takes no shard of its own:
// it holds the new backups of the shards that lost theirs with it (see PsReplicaSetup).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/backup_attach.h"
#include "trib/cluster/member.h"
#include "trib/config/job_config.h"
#include "trib/net/transport.h"
#include "trib/ps/backup_link.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"

namespace trib::app {

// Where the backup of shard `shard` publishes its address in the rendezvous store.
std::string ps_backup_key(int shard);
// Claims epoch `epoch` of shard `shard` in the store: true for the first caller only
// (BackupLink::Claim, PsBackup::set_claim).
bool claim_shard_epoch(cluster::Member& member, int shard, std::int64_t epoch);

// A ps process's exit status when it was replaced (fenced, or no longer a member once its
// backup took over): the local launcher relaunches it, and it comes back as a backup.
inline constexpr int kReplacedExitStatus = 75;

struct PsReplicaRole {
  // Of shard (index - 1) mod n; a relaunched server's, of its own shard too.
  std::vector<std::unique_ptr<ps::PsBackup>> backups;
  std::vector<std::unique_ptr<net::Listener>> listeners;
  std::shared_ptr<ps::BackupLink> link;                // to the backup of this server's own shard (none when relaunched)
  std::vector<std::shared_ptr<ps::BackupLink>> onward;  // per backup: to a backup of its own, once it took over
  std::unique_ptr<BackupAttach> attach;
  // This process was replaced: its primary, or a shard it took over, is fenced.
  bool fenced() const;
  ~PsReplicaRole();
  // A relaunched server's backup of its own shard, published only once the shard's hot backup
  // took it over (start_ps_replica). Last: stopped before anything above goes.
  std::jthread publish_own;
};

struct PsReplicaSetup {
  int index = 0;    // this server's
  int servers = 1;  // cluster.ps
  // A relaunched server (a primary of its index was serving before): it serves no shard of
  // its own, and holds new backups of shard (index - 1) mod n and of its own shard (now
  // served by the backup that took it over), each a copy sent by the shard's primary. Its own
  // shard's backup is published once the shard was taken over: until then the hot backup's
  // address stays where the shard's workers (a relaunched chief) look for it.
  bool relaunched = false;
  // The options server `index` of the job runs with (the backup runs as that server would).
  std::function<ps::PsServerOptions(int index)> options_for;
  // A transport with these options (the role's identity and secret).
  std::function<std::shared_ptr<net::Transport>(const net::NetOptions&)> transport;
  net::NetOptions net;
  std::string bind;  // host to listen on
  // The address others dial, from the one the listener bound.
  std::function<std::string(const std::string& bound)> published;
  std::chrono::seconds dial_timeout{60};  // longest wait for the backup's address (cluster.join_timeout_s)
  std::function<void(const std::string&)> log;
};

// Starts the backups this server holds and (unless relaunched) points `server`'s forward hook
// at the backup of its own shard. The returned role must outlive serving (and `server` must
// outlive it).
std::unique_ptr<PsReplicaRole> start_ps_replica(cluster::Member& member, ps::PsServer& server,
                                                const PsReplicaSetup& setup);

// PsRecoveryOptions::backup for a worker: dials the address the backup of `ps` published,
// once: every caller of one returned function shares that connection.
std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> ps_backup_dial(
    cluster::Member& member, std::shared_ptr<net::Transport> transport);

// data.assignment: dynamic with backups: claims to server 0, numbered, sent to its backup
// (with the same number) once server 0 is lost.
std::function<std::string(const std::string&)> replicated_claims(
    std::shared_ptr<net::Connection> server0,
    std::function<std::shared_ptr<net::Connection>(int ps, std::chrono::milliseconds timeout)> backup, int worker,
    std::int64_t generation);

}  // namespace trib::app
