// How the workers of a stream job agree on the Kafka offsets a checkpoint holds.
//
// Design: the coordinator's key-value store (Distribution::publish/lookup) carries each
// worker's offsets to the chief; checkpoints are a barrier. At checkpoint step s every worker,
// once its step-s update is applied (with parameter servers: acknowledged by the servers),
// publishes its offsets under stream/pos/<s>/<worker> and waits for stream/ckpt/<s>. The
// chief merges them (partitions are disjoint: stream::merge_claims), saves and publishes the
// checkpoint, then sets stream/ckpt/<s>. Nobody trains while the chief saves, so the saved
// parameters hold exactly the updates of the records before the saved offsets.
//
// Ends: a worker that stops (training.steps reached, or its stream idle) publishes
// stream/final/<worker>. The chief, as soon as it takes no more steps (before its strategy
// waits for the other workers to finish), sets stream/chief_ending: workers then skip later
// barriers, since no checkpoint is coming for them. It then waits for every final and writes
// the last checkpoint with the final offsets.
//
// At the start the chief publishes stream/start: the offsets to restore (from its
// checkpoint, possibly none) and the run id that tags this incarnation's Kafka commits.
//
// Restores in place (a lost parameter server; update::kRestoreKey): the barrier keys are
// scoped by the restore generation the workers rewound to (stream/g<G>/pos/<s>/<w>, ...; G = 0
// before any), so that a step redone after a rollback meets only offers of its own pass. A
// barrier wait gives way to a restore instead of waiting for a worker that went to rewind: a
// non-chief's offer once a restore newer than its scope is announced (no checkpoint: it does
// not commit), the chief's gather also when a worker waits for one (update::kRestoreWantedKey:
// its step failed; the chief's next step meets the lost server and restores the job). The
// chief then publishes the checkpoint as not written, releasing the others' offers.
// stream/chief_ending is not scoped: a chief past its last step takes none again.
//
// Allreduce, a lost worker (docs/fault_tolerance.md, "Allreduce stream jobs: a lost worker"):
// the survivors re-form their group and roll back to the newest checkpoint (StreamHooks::
// on_regroup); the scope becomes the group's generation and the chief's barriers wait for the
// new group's members only. A barrier gives way when a newer group is planned (a member is
// re-forming the group and waits for the others), and the chief's gather when a worker it
// waits for is lost (nobody's exchange fails while all wait at the barrier); no checkpoint is
// written then, and every member's next exchange fails into the re-forming.
//
// Parameter servers, a worker gone for good (SIGTERM's leave, `trib scale` down, or one the
// launcher gave up on): stream/gone/<w> holds its last applied push's claim (its progress and
// counts), published by the leaver itself or, for one the launcher gave up on, by the chief
// from the servers' cursor. It is not scoped: the barriers take it in place of the worker's
// offers and final offsets from then on, and the others adopt its partitions
// (StreamHooks::adopt_departed).
//
// Parameter servers, a worker started again at a departed index (`trib scale` up; async):
// stream/departures/<w> counts w's departures and stream/return/<w> its returns, so a claim
// stands while departures > returns. The joiner publishes its return (= the departure number
// it takes back); every other present worker, at its next step boundary, stops reading what
// it no longer owns with w present and publishes stream/handover/<w>/<r>/<x> (its step and its
// applied progress of those partitions); the joiner, once it has all, seeks there and says
// stream/ready/<w>/<r>; the chief admits it at its next step boundary (stream/admit/<w>/<r> =
// that step). Barriers up to the admission step take the departure claim with the hand-overs
// merged; later ones wait for the joiner's own offers (stream_returns.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trib/data/data_position.h"
#include "trib/train/distribution.h"

namespace trib::train_stream {

// A restore announced by the chief (update::kRestoreKey).
struct AnnouncedRestore {
  std::int64_t generation = 0;
  std::int64_t step = 0;
  std::string sections;  // the checkpoint's manifest sections, JSON text; empty: none
};

// The rendezvous of an allreduce group's members once they have rewound their Kafka positions
// (StreamHooks::on_regroup; group_rolled_back in stream_trainer.h looks for it).
inline constexpr const char* kRewound = "rewound";

struct StreamStart {
  std::string run_id;
  data::DataPosition offsets;  // Kafka fields only; empty: no checkpoint
};

class StreamSync {
 public:
  // One worker: every call is immediate (nothing to agree on).
  explicit StreamSync(const train::Distribution& dist, std::chrono::milliseconds timeout = std::chrono::minutes(10));

  // Chief: publishes `start` and returns it; others (and a relaunched chief): wait for the chief's.
  StreamStart start(const StreamStart& chief_start);
  // A worker relaunched into the running job (a parameter-server job's lost worker, the chief
  // included): its index had said it owned partitions in this job before (await_assignment),
  // which a --resume or a whole-job restart (a fresh store) has not. A relaunched chief takes
  // the running job's start from the store instead of publishing one.
  bool relaunched() const { return relaunched_; }

  // Before the first step, every worker owns partitions: a rebalance that moves partitions
  // to a late joiner needs every member to poll, which a worker waiting on its peers (sync
  // PS, allreduce) does not. Calls `service` (a short poll) until `owns_partitions` has held
  // here and every other worker has said so too; Timeout after `limit`, naming the worker.
  void await_assignment(const std::function<bool()>& owns_partitions, const std::function<void()>& service,
                        std::chrono::milliseconds limit, const std::string& topic);

  // The restore generation the barriers are scoped by (0 before any): every worker moves to
  // the restore's when it rewinds to it.
  void set_scope(std::int64_t generation) { scope_ = generation; }
  std::int64_t scope() const { return scope_; }
  // The newest restore the chief announced, if it is newer than this scope.
  std::optional<AnnouncedRestore> newer_restore() const;
  // The newest restore the chief announced, whatever the scope (none before the first).
  std::optional<AnnouncedRestore> announced_restore() const;

  // Allreduce: the workers (indices) of the group re-formed after a lost worker, whose
  // barriers the chief then waits for (all of dist.workers before any). The scope is then the
  // group's generation, and a barrier also gives way once a newer group is planned (a worker
  // whose exchange failed is re-forming the group: every member must go to its next step).
  void set_members(std::vector<int> members) { members_ = std::move(members); }
  const std::vector<int>& members() const { return members_; }
  // Every member says `what` in this scope, then waits until all have: true. False when it
  // gave way: a newer group is planned, or a member it waits for was lost (a second loss
  // during a rollback; the group re-forms again at its next exchange). Timeout naming the
  // first missing one after the sync's timeout.
  bool rendezvous(const std::string& what);

  // Non-chief at checkpoint step s: hands over `offsets`, then waits until the chief has
  // published the checkpoint. Returns true if it wrote it (the caller may then commit to
  // Kafka), false if it did not (a restore came first), or the chief is ending and no
  // checkpoint comes.
  bool offer(std::int64_t step, const data::DataPosition& offsets);
  // Chief at checkpoint step s: its own offsets merged with every other worker's (their
  // step-s offers, or their finals when they have stopped); nullopt when a worker waits for a
  // restore instead (then no checkpoint: published(step, false)).
  std::optional<data::DataPosition> gather(std::int64_t step, const data::DataPosition& own);
  // Chief, after checkpoint s: whether it was written.
  void published(std::int64_t step, bool written);

  // Non-chief at its end: hands over its final offsets and waits for the last checkpoint.
  // Returns true once it is published (the caller may then commit to Kafka); false when a
  // restore newer than this scope was announced first (the caller adopts it: newer_restore),
  // or the chief was lost (allreduce: chief_lost(); the caller hands its relaunched process the
  // final state, then hands over again).
  bool final_offsets(const data::DataPosition& offsets);
  // Allreduce: whether the chief of this worker's group was lost (relaunched since, or gone).
  bool chief_lost() const { return !dist_.chief() && lost(0); }
  // Chief, once it takes no more steps: no periodic checkpoint comes any more (offer returns
  // false from here on). Idempotent.
  void ending();
  // Chief at its end, after ending(): every worker's final offsets merged with its own. A
  // worker lost before handing them over (after the run's last exchange: nobody re-forms) is
  // taken at `last_cursor` (its cursor of the last step, as the group shared it), and named in
  // `taken`; Unavailable where that gives none.
  data::DataPosition gather_final(const data::DataPosition& own,
                                  const std::function<std::optional<data::DataPosition>(int)>& last_cursor = {},
                                  std::vector<int>* taken = nullptr);
  // Chief, after publishing the last checkpoint.
  void published_final();

  // A parameter-server worker leaving the running job for good: its last applied claim, which
  // the chief's barriers take in place of its offers and the others adopt its partitions at.
  void leave(const data::DataPosition& claim) { publish_departure(dist_.worker_index, claim); }
  // Worker `w` left for good with `claim` (leave; the chief for a worker the launcher gave up on).
  void publish_departure(int w, const data::DataPosition& claim);
  // Worker `w`'s claim when it left for good (leave, or the chief's settle for one the
  // launcher gave up on); nullopt while it is in the job.
  std::optional<data::DataPosition> departed(int w) const;
  // Whether the launcher gave up on worker `w` (cluster::membership_key::given_up).
  bool given_up(int w) const;
  // Chief of a parameter-server stream job: publishes the departure of worker `w`, one the
  // launcher gave up on (StreamHooks: its claim from the servers' cursor). A barrier waiting
  // for such a worker calls it instead of waiting.
  void set_settle(std::function<void(int)> settle) { settle_ = std::move(settle); }

  // Taking a share back (stream_returns.cc). How often worker `w` left for good, and how often
  // a worker came back at its index (each a count in the store; 0: never).
  int departures(int w) const;
  int returns(int w) const;
  // Joiner at a departed index: it takes departure `r` back (its number: departures()).
  void publish_return(int r);
  // A present worker's hand-over of what it read of returning worker `w` (return `r`): its
  // step and its applied progress of the partitions it gave up (empty when it gave none).
  struct HandOver {
    std::int64_t step = 0;
    data::DataPosition claim;
  };
  // False when this worker had handed over already (its lost process did; a relaunch).
  bool hand_over(int w, int r, const HandOver& h);
  std::optional<HandOver> handed_over(int w, int r, int by) const;
  // Worker `w`'s share as it took it back from its latest return (its departure claim and the
  // hand-overs merged), while it stands; nullopt when it is gone or never left. A relaunched
  // worker resumes what it has not pushed anything of since from there.
  std::optional<data::DataPosition> taken_back(int w) const;
  // Joiner: waits until every present other worker handed over (returns them, by worker), or
  // nullopt once the chief is ending (the job ends before it could take its share back).
  std::optional<std::map<int, HandOver>> await_hand_overs(int r);
  // Joiner, seeked to its handed-over progress: says so, then waits for the chief's admission
  // (the step it reads from), or nullopt once the chief is ending.
  std::optional<std::int64_t> await_admission(int r);
  // Chief at a step boundary: admits every returning worker that is ready, from `step` on.
  // Returns the workers it admitted.
  std::vector<int> admit_ready(std::int64_t step);
  // Waits until checkpoint `step` is published (or the chief is ending): a joiner admitted at
  // a checkpoint step reads only once that checkpoint, which does not count it, is saved.
  void await_checkpoint(std::int64_t step);

 private:
  // The first of `keys` that is set (its value; `which` names it), or nullopt once
  // `give_way` says so (checked every few tens of ms). Timeout after timeout_.
  std::optional<std::string> wait_any(const std::vector<std::string>& keys, std::string* which,
                                      const std::function<bool()>& give_way = {});
  std::string key(const std::string& rest) const;  // scoped: "stream/g<scope>/<rest>"
  bool restore_wanted() const;
  // Allreduce: a group newer than this scope is planned ("allreduce/plan").
  bool regroup_planned() const;
  // Whether worker `w` was lost (Distribution::worker_lost).
  bool lost(int w) const { return dist_.worker_lost && dist_.worker_lost(w); }
  // Worker `w`'s value among `keys` (scoped, each with `w`) or its departure, for a barrier;
  // nullopt when `give_way` says so. A worker the launcher gave up on is settled first.
  // `step`: the barrier's (the final one: kFinalBarrier).
  std::optional<std::string> wait_for_worker(int w, const std::vector<std::string>& keys,
                                             const std::function<bool()>& give_way, std::int64_t step);
  // Whether worker `w`'s departure claim stands in for it at barrier `step`: it left and has
  // not come back, or came back and was not admitted before that step.
  bool departure_stands(int w, std::int64_t step) const;
  // The departure claim of `w` with the hand-overs of its return, if it is returning.
  data::DataPosition departure_claim(int w) const;
  // Every hand-over of every return merged into `merged` (a barrier, once all offers are in:
  // an adopter that handed a partition over before its offer no longer claims it).
  void merge_hand_overs(data::DataPosition& merged) const;
  static constexpr std::int64_t kFinalBarrier = std::numeric_limits<std::int64_t>::max();

  const train::Distribution& dist_;
  std::chrono::milliseconds timeout_;
  std::int64_t scope_ = 0;
  std::vector<int> members_;
  bool relaunched_ = false;
  std::function<void(int)> settle_;
};

// The stream fields of a position (stream::is_stream_field: Kafka progress and counts; a
// shuffle buffer's own fields cannot be merged).
data::DataPosition kafka_fields(const data::DataPosition& position);

}  // namespace trib::train_stream
