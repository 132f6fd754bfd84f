// The coordinator: hosts the rendezvous store, admits roles (assigning each an index and
// handing it the job), keeps the membership in a Registry, watches the members' connections,
// and tells everyone to stop when the job is over. Parameter servers and workers need only
// its address and the cluster secret.
//
// Every change of membership (a join, a clean leave, a loss) starts a new generation: the
// coordinator publishes the roster under membership_keys.h and pushes it to every connected
// member (kMembershipChanged). A member whose connection is lost (killed, or silent past the
// heartbeat timeout: SIGSTOP) is evicted. Whether the job goes on without it is the policy
// below; when it does, its index is free for a new member (a new incarnation).
//
// The coordinator is not on the data plane, and it can be restarted: with a journal
// (CoordinatorOptions::journal, in the run directory) a new coordinator process takes the
// running job back. It starts in a later generation, holds the indices of the journal's
// members open for them, and takes each back when it reconnects (Member does, with backoff)
// with the incarnation it holds; one that does not come back within rejoin_grace is lost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trib/cluster/registry.h"
#include "trib/cluster/roster.h"
#include "trib/cluster/store.h"
#include "trib/net/handler_gate.h"
#include "trib/net/transport.h"

namespace trib::cluster {

struct CoordinatorOptions {
  std::string listen = "127.0.0.1:0";
  std::string job_yaml;   // the resolved job, handed to every role that joins
  std::string run_dir;    // where the chief writes metrics and checkpoints
  bool resume = false;    // continue the run in run_dir from its newest checkpoint
  int ps = 0;
  int workers = 1;
  // Workers the job admits while it runs (cluster.max_workers; 0: `workers`). A member that
  // joins without asking for an index takes the lowest free one below it, and starts in a
  // new generation like every join; one beyond it is refused.
  int max_workers = 0;
  // The strategy can go on without a lost worker (parameter servers: the others keep
  // training). Worker 0, the chief, is never optional: it initializes the servers, writes
  // checkpoints and the run's report. A lost parameter server ends the job, unless:
  bool workers_may_be_lost = false;
  // A lost parameter server does not end the job either: a launcher relaunches it and the
  // chief restores the job from its newest checkpoint (trib/ps/ps_recovery.h).
  bool servers_may_be_lost = false;
  // The chief (worker 0) is optional too: a launcher relaunches it in place, and the new
  // process takes the run back (LocalClusterOptions::relaunch_chief). Needs workers_may_be_lost.
  // Each loss sets membership_key::kChiefRelaunched, which tells the next worker 0 so.
  bool chief_may_be_lost = false;
  // Whether this coordinator waits for a lost chief itself, and how long (chief_may_be_lost):
  // under `trib coordinator` no launcher relaunches it, the node's supervisor starts the same
  // `trib worker --index 0 ...` again (cluster.join_timeout_s). The job is not over while it is
  // away; past this, or a chief that said it failed with an error (kChiefFailed: a restart
  // would fail the same way), or lost more than chief_returns times (cluster.max_restarts),
  // ends the job with the resume line. 0: no wait of its own (a local launcher relaunches the
  // chief at once, or ends the job).
  Millis chief_wait{0};
  int chief_returns = 0;
  // Why a lost chief is not waited for when chief_may_be_lost is false, said in the job's
  // failure after "which is not relaunched in place" (" in a stream job (...)"); may be empty.
  std::string chief_not_relaunched = "";
  // Where membership is kept; a MemoryRegistry when null.
  std::shared_ptr<Registry> registry = nullptr;
  // How long the registry keeps a silent member (only a registry in another process, such
  // as etcd, uses it: here the connection's heartbeat timeout decides).
  Millis member_ttl{10000};
  // Where the membership is journaled (coordinator_journal.h); empty: nowhere, and a
  // restarted coordinator knows only what reconnecting members tell it.
  std::string journal = "";
  // After a restart, how long a member of the journal has to reconnect before it is lost.
  Millis rejoin_grace{30000};
  // Where a member lost without ending the job is reported (one line each), so that an
  // operator sees the membership change; nowhere when unset (a local launcher reports its
  // processes itself).
  std::function<void(const std::string&)> info = nullptr;
};

// What a coordinator took over from its journal when it started.
struct Restart {
  bool running = false;         // the journal's job was still running: its members are awaited
  std::int64_t generation = 0;  // the journal's generation (0: no journal)
  int awaiting = 0;             // members to reconnect
  std::string from;             // where the journal was read: its file, or cluster.store
};

// How a job ended, from the coordinator's view.
struct Outcome {
  bool ok = false;
  std::string failure;  // "worker 1 at 127.0.0.1:4567: connection lost (peer timed out)"
};

class RosterPublisher;
class LatestWriter;
struct JournalState;

class Coordinator {
 public:
  Coordinator(std::shared_ptr<net::Transport> transport, CoordinatorOptions options);
  ~Coordinator();

  std::string address() const { return listener_->address(); }
  MemoryStore& store() { return store_; }

  // Blocks until every worker has left cleanly (ok) or a member was lost (not ok), or the
  // deadline passes (Timeout).
  Outcome wait(Millis timeout);
  // Records a failure seen from outside (a launcher seeing a child die) and wakes wait().
  void fail(const std::string& why);
  // A launcher saw the process holding `role` `index` end (killed, crashed): it is evicted
  // as if its connection had been lost. True when the job goes on without it (the policy
  // above; also when it had already been evicted); false when the job failed.
  bool member_lost(const std::string& role, int index, const std::string& why);
  // Tells every connected member to exit cleanly.
  void shutdown_members();
  // The membership now (what membership/roster holds).
  RosterView roster();
  const Restart& restart() const { return restart_; }

 private:
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  // `requested`: the index the member asked for, or -1 for the lowest free one.
  net::Message join(const std::string& role, int requested, const net::PeerIdentity& from);
  void on_close(const net::PeerIdentity& peer, std::string_view reason);
  // Under mu_: evicts the member at `address`; returns the failure to report ("" when the
  // job goes on without it).
  std::string evict_locked(const std::string& address, const std::string& reason);
  void leave(const std::string& role, int index, const std::string& from);
  // Under mu_: the roster of the current generation; publishes it (store and pushes).
  void publish_locked();
  net::Message join_reply(int index, std::int64_t incarnation);
  // Under mu_: whether the job goes on without server `index` (servers_may_be_lost): only
  // once it has served (published its address). One lost before that failed to start (a port
  // in use, a bad address), and a relaunch would fail the same way.
  bool server_may_be_lost_locked(int index);
  // The job's failure when a member the policy cannot do without is lost; for the chief it
  // says that the job ends, why (`why_chief`, or options_.chief_not_relaunched when empty) and
  // how to go on (--resume from its newest checkpoint).
  std::string loss_failure(const std::string& role, int index, const std::string& address,
                           const std::string& reason, const std::string& why_chief = "") const;

  // The wait for a lost chief (chief_wait; coordinator_chief_wait.cc).
  // Under mu_, at the chief's eviction: "" when it is waited for (says so through options_.info),
  // else why not (it failed with an error; its returns are spent).
  std::string await_chief_locked(const std::string& address, const std::string& reason);
  // Under mu_: the rest of the line that reports the chief's loss while it is waited for.
  std::string chief_waited_for_locked() const;
  // Under mu_: a new worker 0 (from `address`) joined; the chief is no longer awaited.
  void chief_back_locked(const std::string& address);
  // Under mu_: a chief away past chief_wait fails the job.
  void expire_chief_locked();

  // The restart path (coordinator_restart.cc).
  // Takes over the journal's job, if there is one; before the first publish.
  void restore_locked();
  // Under mu_: the journal's file, else the one a durable registry kept (restart_.from says which).
  std::optional<JournalState> read_journal_locked();
  // Under mu_: writes the journal (when there is one): its file, and hands it to journal_keeper_.
  void journal_locked();
  // On journal_keeper_'s thread: the journal into the durable registry.
  void keep_journal(const std::string& text);
  // A member that lost its coordinator comes back with the incarnation it holds.
  net::Message rejoin(const std::string& role, int index, std::int64_t incarnation, std::int64_t generation,
                      const net::PeerIdentity& from);
  // Under mu_: the journal's members that did not come back within rejoin_grace are lost.
  void expire_awaiting_locked();

  // One admitted member, by the address of its connection.
  struct Entry {
    std::string role;
    int index = 0;
    std::int64_t incarnation = 0;
    std::unique_ptr<Registration> registration;
  };

  std::shared_ptr<net::Transport> transport_;
  CoordinatorOptions options_;
  MemoryStore store_;
  std::unique_ptr<net::Listener> listener_;
  // Pushes each new roster to the members, outside mu_ (roster_publisher.h says why).
  std::unique_ptr<RosterPublisher> publisher_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Registry> registry_;
  // Members by the address their connection comes from: the handshake happens before a
  // member knows its index, so the connection's address is what identifies it.
  std::map<std::string, Entry> members_;
  std::map<std::string, std::set<int>> taken_;  // role -> indices held (or finished); a lost one is freed
  std::map<std::string, LostEntry> lost_;       // "worker/1" -> its loss, until taken again
  int workers_left_ = 0;
  // After a restart: the journal's members not reconnected yet, by name ("worker/1").
  std::map<std::string, RosterEntry> awaiting_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Restart restart_;
  bool ended_ = false;  // the journal says the job is over
  // A lost chief waited for (chief_wait), until a new worker 0 joins.
  struct ChiefAway {
    std::string address;
    std::string reason;
    std::chrono::steady_clock::time_point since;
  };
  std::optional<ChiefAway> chief_away_;
  int chief_losses_ = 0;
  bool journal_failed_ = false;  // said once; the job goes on without a journal
  bool keep_failed_ = false;     // journal_keeper_'s thread only: its last write failed
  // With a durable registry (etcd): writes the newest journal there, off mu_. Declared last
  // of what it uses, so it stops (destroyed) before them.
  std::unique_ptr<LatestWriter> journal_keeper_;
  bool failed_ = false;
  std::string failure_;
  std::atomic<bool> shutting_down_{false};
  // The listener's handlers reach this object only through the gate, which the destructor shuts
  // first: an accepted connection's executor can still be serving a request after the listener
  // closed and released it.
  std::shared_ptr<net::HandlerGate<Coordinator>> gate_ = net::open_handler_gate(this);
};

}  // namespace trib::cluster
