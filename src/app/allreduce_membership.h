// The allreduce group of a worker process, kept in step with the job's membership. The first
// group forms once every worker has published its address in the coordinator's store. After
// that one member decides every new group: the *leader*, the lowest-indexed member of the
// current group that the coordinator still lists as the same process (worker 0, the chief,
// while it lives; the lowest survivor while a lost chief is away, until its relaunched process
// has joined and is the lowest member again). When a worker is lost, or a relaunched one asks
// to join, the leader writes a plan (the generation and the workers, "allreduce/plan") and every
// worker of the plan forms that group. A joiner's request makes the leader abort the running
// group, so that every member re-forms (and agrees on the state) at once.
// The strategy calls regroup() when an exchange fails, and a joiner's start() calls join()
// (collectives/strategy_allreduce.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trib/cluster/member.h"
#include "trib/collectives/group.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/core/log.h"
#include "trib/net/transport.h"
#include "trib/update/group_plan.h"

namespace trib::app {

struct AllreduceMembershipOptions {
  cluster::Member* member = nullptr;  // must outlive the object
  std::shared_ptr<net::Transport> transport;
  std::string listen;  // HOST:0, where this worker's group endpoint listens
  // What peers dial for an endpoint listening at the given address.
  std::function<std::string(const std::string& bound)> published;
  std::chrono::milliseconds join_timeout{60000};  // every worker publishing its address
  // How long a failed exchange waits for the coordinator to report a member lost (it evicts a
  // silent member after the peer timeout) and for the leader's plan: past it, the failure was not
  // a lost member, and the run ends.
  std::chrono::milliseconds loss_wait{10000};
  collectives::GroupOptions base{};  // algorithm settings and timeouts of every group
  const Log* log = nullptr;
  // Whether the others wait at the end for the chief's word (await_chief()). Not in a stream
  // job: its other workers hand the chief their final offsets only after the strategy's
  // finish() (train_stream/stream_hooks.cc), and its chief is not relaunched in place.
  bool await_chief_word = true;
};

using update::GroupPlan;

// What join() throws to a relaunched worker that comes after the run's end (its chief wrote the
// last checkpoint and report, and said so): nothing is left for it to do, and its process ends
// well (cluster_roles.cc). An allreduce stream job's chief took such a worker's final Kafka
// offsets from the group's cursors of the last step (stream_sync.h).
class RunEndedBeforeJoin : public Unavailable {
  using Unavailable::Unavailable;
};

class AllreduceMembership {
 public:
  explicit AllreduceMembership(AllreduceMembershipOptions options);
  ~AllreduceMembership();
  AllreduceMembership(const AllreduceMembership&) = delete;
  AllreduceMembership& operator=(const AllreduceMembership&) = delete;

  // Whether the job's group already exists: this process was relaunched (or joined late; the
  // chief too, relaunched in place) and must join() rather than form().
  bool joining() const { return joining_; }
  // The first group: every worker of the job, ranks by worker index, generation 0.
  std::shared_ptr<collectives::Group> form();
  // A joiner: asks the leader for a place and forms the group of the plan that gives it one.
  std::shared_ptr<collectives::Group> join();
  // The strategy's Regroup; holds this object, which must outlive the strategy.
  collectives::Regroup regroup();
  // The strategy's await_rejoin, called after the run's last step until it gives null. The
  // members other than the chief do not leave before the chief's word that the run's end is
  // written (confirm_run_end): a group without worker 0 (its chief lost, relaunched) waits for
  // the new chief to join and gives that group (the strategy hands it the final state; it then
  // writes the last checkpoint and report); a chief lost before its word makes them re-form
  // without it and wait for it the same way. Each wait is bounded by cluster.join_timeout_s:
  // past it, a chief that is alive but silent is left to end alone (null, with a warning), and
  // a relaunched chief that did not join ends the run with an error. Null at once on worker 0.
  std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> await_chief();
  // A stream job's (await_chief_word off): the same waits, called after finish() by a member
  // that found the chief lost before the last checkpoint (StreamHooks). Gives the group its
  // relaunched process joined; null once the current group's chief is not lost (at once on
  // worker 0).
  std::function<std::shared_ptr<collectives::Group>(const collectives::Group&)> await_relaunched_chief();
  // Whether worker `index` is not, as the coordinator lists it now, the process that was a
  // member of the current group (lost, or relaunched since: a new incarnation of the index),
  // or not a member at all. An allreduce stream job's chief gives way at a checkpoint barrier
  // for such a worker (stream_sync.h): a relaunched one offers nothing in the old scope.
  bool lost_member(int index) const;
  // A stream job's joiner, before it asks to join: waits (up to cluster.join_timeout_s) until
  // the members of the current plan have finished rolling back to its checkpoint (`rolled_back`
  // says so for a plan): a join aborts the group, which would fail them inside that rollback
  // (StreamHooks::on_regroup) rather than at their next exchange.
  void await_settled(const std::function<bool(const GroupPlan&)>& rolled_back);
  // Worker 0, once its training returned (last checkpoint and report written): says so to the
  // others, which then leave. Nothing on the other workers.
  void confirm_run_end();
  // The strategy's admit_joiners: at an epoch boundary of the data, the leader takes in the
  // workers that ask to join beyond the job's starting ones (they hold no shard of an epoch
  // under way, so only there does every member reshard with nothing left out or read twice):
  // it aborts `current`, whose next exchange re-forms the group with them.
  std::function<void(collectives::Group&)> admit_joiners();

 private:
  // `lead_wait`: how long the leader waits for a lost member or a joiner.
  std::shared_ptr<collectives::Group> regroup_now(const collectives::Group& failed, const std::string& why,
                                                  std::chrono::milliseconds lead_wait);
  std::shared_ptr<collectives::Group> lead_regroup(const collectives::Group& failed, const std::string& why,
                                                   std::chrono::milliseconds wait);
  // Forms the group of `plan`; nullptr once `superseded()` says the plan is out of date.
  std::shared_ptr<collectives::Group> try_form(const GroupPlan& plan, const std::function<bool()>& superseded);
  // `chief_lost`: re-form without a chief of the current group that is lost now, without
  // waiting for its word (await_relaunched_chief).
  std::shared_ptr<collectives::Group> await_run_end(const collectives::Group& current, bool chief_lost = false);
  // Waits for the chief's word on the run's end: true once worker 0 (of `chief_incarnation`)
  // is lost without it; false once it came, the job stops, or cluster.join_timeout_s passed.
  bool chief_lost_before_end(std::int64_t chief_incarnation);
  std::optional<GroupPlan> read_plan() const;
  // A joiner's waits give up once the job is stopping or its leader finished: RunEndedBeforeJoin
  // where the chief confirmed the run's end, Unavailable otherwise.
  void check_not_finished() const;
  void write_plan(const GroupPlan& plan);
  // Workers in the roster, not members of the current group, that asked to join.
  std::vector<int> ready_joiners();
  std::map<int, std::int64_t> listed_workers() const;
  void watch_joiners();  // every member's thread; only the leader acts
  // The members of the current group that `listed` (the roster) holds as the same processes.
  std::vector<int> survivors(const std::map<int, std::int64_t>& listed) const;
  // Whether this worker is the lowest-indexed member of the group it formed last.
  bool leads_current() const;
  int self() const { return o_.member->membership().index; }
  // Whether worker `index` joins only at an epoch boundary: one beyond the starting workers.
  bool joins_between_epochs(int index) const;
  void admit_at_epoch_start(collectives::Group& current);

  AllreduceMembershipOptions o_;
  bool joining_ = false;
  mutable std::mutex mu_;
  std::vector<int> members_;                  // worker indices by rank of the current group
  std::map<int, std::int64_t> incarnation_;  // of each member, as the roster had it at formation
  std::weak_ptr<collectives::Group> current_;
  std::condition_variable wake_;
  bool stopping_ = false;
  // Under mu_: the generation of the group the leader stopped at an epoch boundary to take in
  // joiners beyond the starting workers (none: ~0).
  std::uint64_t admitting_ = ~std::uint64_t{0};
  std::thread watcher_;
};

}  // namespace trib::app
