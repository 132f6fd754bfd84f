// A parameter server: it holds its slices of the variables and their optimizer slots, and
// applies the workers' gradients according to the training mode:
//   sync       gradients of a step are averaged over the first N - b workers, then applied;
//              later ones for that step are dropped (and counted);
//   async      each gradient is applied when it arrives (Downpour);
//   bounded    as async, but a worker may not start a step more than `staleness` steps
//              ahead of the slowest worker (stale-synchronous parallel);
//   averaging  workers train locally and push parameters every `period` steps; the server
//              averages them.
// Workers come and go (src/ps/worker_roster.h): a worker whose connection closes, or that
// the server is told is lost, is waited for no more: sync and averaging rounds close with
// the others and the next ones expect one fewer, bounded staleness skips it. A relaunched
// worker (same index, new connection) is re-admitted: its plain read answers the step it
// resumes at (sync: the current round; async and bounded: one past its last push), and it
// counts again from the next round. Indices beyond the job's starting workers (up to
// cluster.max_workers) are vacant until a joiner takes one, which is then treated the same way.
// With `dispense_data` (data.assignment: dynamic, server 0) the server also hands out the
// training data in chunks and takes back what a departed worker left unread
// (src/ps/chunk_dispenser.h, src/ps/ps_server_data.cc).
// Non-finite gradients arrive as flagged pushes without values: a sync round holding one
// applies nothing (every worker of the round is told, and takes the step again); async and
// bounded servers drop it and count it.
// A lost server is relaunched empty and the chief restores the whole job from a checkpoint
// (strategy_ps.h): an init or restore of a newer generation rolls this server back (every
// worker's clock, cursor and round start again from its step), and from then on a worker
// request of an older generation, and before that any push to a server that holds no state,
// is answered kFlagRolledBack and applies nothing.
// strategy.ps_replicas: 1 (docs/fault_tolerance.md, "Hot backups"): with a forward hook set,
// every request and membership event that changes this server's state is handed to the hook,
// under the lock that applied it and before the request is answered, so the backup applies the
// same things in the same order and holds whatever the worker was told. A push carrying a
// sequence number this server already applied (a worker retrying at the backup after its
// primary was lost) is answered without being applied again.
// Requests follow src/ps/ps_wire.h. Each is decoded once and every size it declares is
// checked against this server's slices before anything is read; a malformed or oversized
// request is refused with an InvalidArgument naming the problem (the transport sends it
// back as the reply) and changes nothing.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trib/checkpoint/safetensors.h"
#include "trib/net/transport.h"
#include "trib/optim/optimizer.h"
#include "trib/ps/data_cursors.h"
#include "trib/ps/placement.h"

namespace trib::ps {

namespace proto {
struct Body;
struct Header;
enum class Type : std::uint8_t;
}
struct PushLayout;
class WorkerRoster;
class ChunkDispenser;

enum class Mode { sync, async, bounded, averaging };
Mode parse_mode(const std::string& name);
// The checksum a server and a rejoining worker log of a server's flat values.
std::uint32_t values_crc32c(const Tensor& flat);

struct PsServerOptions {
  int index = 0;
  int workers = 1;  // indices the server keeps state for (cluster.max_workers)
  Mode mode = Mode::async;
  int staleness = 2;
  int backup_workers = 0;
  std::vector<VariableInfo> variables;
  Placement placement;
  // The update rule. The learning rate comes with each push: workers own the schedule
  // (they know the step and the run's length).
  std::shared_ptr<const Optimizer> optimizer;
  // Workers present at the start (cluster.workers); those from here up to `workers` are
  // joiners, waited for from their first request or join. -1: all of `workers`.
  int present_workers = -1;
  // data.assignment: dynamic, on server 0: hand out the training data in chunks to the
  // workers present (src/ps/chunk_dispenser.h), and take back what a departed one left unread.
  bool dispense_data = false;
  // A stream job whose partitions the job assigns: how workers' data cursors compare and
  // merge. A push whose cursor the worker's kept one covers (its batch was applied here
  // already: a worker lost between its pushes to several servers, relaunched at the oldest
  // server's cursor) is acknowledged without being applied. Empty: cursors are opaque text.
  DataCursors cursors{};
};

struct PsStats {
  std::uint64_t bytes_in = 0, bytes_out = 0, requests = 0;
  std::uint64_t applied = 0, dropped_late = 0;
  std::uint64_t refused = 0;       // malformed or oversized requests, answered with an error
  // requests from a replaced incarnation of a worker (evicted, then back), refused on their
  // header alone; also counted in `refused`
  std::uint64_t stale_generation = 0;
  std::uint64_t dropped_nonfinite = 0;  // async and bounded: pushes of NaN or Inf gradients
  std::uint64_t skipped_rounds = 0;     // sync: rounds that applied nothing (a non-finite push)
  // Rollbacks (an init or restore of a newer generation), and worker requests answered
  // kFlagRolledBack: from before the last one, or to this server before it had any state.
  std::uint64_t rollbacks = 0, rolled_back_requests = 0;
  // strategy.ps_replicas: frames handed to the backup; pushes and claims answered as already
  // applied (retried after a failover); 1 once this server took over its shard from a lost primary.
  std::uint64_t forwarded = 0, duplicate_pushes = 0, takeovers = 0;
  // PsServerOptions::cursors: pushes acknowledged without being applied, their batch already
  // applied here (a relaunched worker's replay of a push that reached this server only).
  std::uint64_t replayed_pushes = 0;
  // Sync: such replays that came after their round closed here, their batch lacking here, added
  // to the round open then instead of being dropped as late.
  std::uint64_t late_replays = 0;
  std::uint64_t workers_lost = 0, workers_readmitted = 0, workers_joined = 0;
  // Now, not counters: workers still training (not done, not lost), and lost ones not back.
  std::uint64_t workers_training = 0, workers_away = 0;
  // data.assignment: dynamic (server 0): batches of the job applied, in all, and handed back
  // by departed workers for others to read
  std::int64_t data_applied = 0, data_total = 0, data_returned = 0;
  std::int64_t max_clock_gap = 0;  // bounded: most steps a pull ran ahead of the slowest worker
  std::array<std::uint64_t, 16> staleness{};  // histogram of updates between pull and apply (last bin: 15+)
};

class PsServer {
 public:
  explicit PsServer(PsServerOptions options);
  ~PsServer();
  // Serves requests; the Transport's handlers call this.
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  PsStats stats() const;
  // The largest request a worker of this job can legitimately send this server: its slices'
  // values, the row ids of a push and a checkpoint path. Serving transports cap
  // NetOptions::max_frame_bytes to it, so a bigger claim is refused before any allocation.
  std::uint64_t max_request_bytes() const;
  // The serving transport's on_close handler: the worker on that connection, if any, is lost.
  void connection_closed(const net::PeerIdentity& peer);
  // Where the server reports a worker's relaunch (the lines a launcher forwards); none: silent.
  // Set before serving.
  void set_log(std::function<void(const std::string&)> log) { log_ = std::move(log); }
  // strategy.ps_replicas: where this server's state changes go (a replica frame,
  // src/ps/replica_wire.h, as a message). Called under the server's lock, before the change
  // is acknowledged; the hook handles its own failures, and returns false when this server
  // was replaced (its backup took the shard over: it is fenced). A fenced server answers the
  // request that found out, and every later one, with Unavailable (the worker goes to the
  // shard's new primary) and applies nothing more. Set before serving.
  // `epoch`: the shard's, which the hook moves on when the primary goes on without a backup.
  using Forward = std::function<bool(const net::Message& frame, std::int64_t& epoch)>;
  void set_forward(Forward forward) { forward_ = std::move(forward); }
  bool fenced() const { return fenced_.load(); }
  // The shard's epoch (docs/fault_tolerance/parameter_servers.md, "Hot backups"): moved on by
  // a takeover, or by a primary that goes on without its backup; copied with the state.
  std::int64_t epoch() const;
  void set_epoch(std::int64_t epoch);
  // A new backup joins (a relaunched server): under the lock that applies every change, the
  // whole state goes to `send` as one replica frame (kind snapshot), so the backup starts
  // from exactly what the frames that follow build on. Training pauses while `send` runs.
  // Returns what `send` returned (false: the backup was not reached, nothing changed).
  bool send_state(const std::function<bool(const net::Message&)>& send);
  // A backup: replaces its whole state with a snapshot frame's body (send_state). Throws
  // InvalidArgument naming the field for bytes that do not fit this server's shard.
  void load_state(std::string_view bytes);
  // A backup becomes its shard's acting primary: workers now come on their own connections,
  // so the connections it knew them by (the primary's) are forgotten, without counting
  // anyone as relaunched.
  void take_over();
  // A backup: the primary saw `worker` on a new connection at `address` (re-admitted or
  // joined) outside a forwarded request (its plain read); the same happens here.
  void note_forwarded(int worker, const std::string& address);

  // Membership, as the coordinator announces it (a cluster's ps role feeds its Member's
  // rosters here). A lost worker holds nobody back any more (its clock and the sync round no
  // longer wait for it), and every request stamped with its incarnation, or an older one,
  // is refused from now on: it comes from a process the job went on without. `generation`
  // is the one the loss started.
  void worker_lost(int worker, std::int64_t generation);
  // A member holds `worker` in `incarnation`: requests of older incarnations are refused.
  // A newer holder of a lost index is counted again (from the next round when one is open;
  // under bounded staleness, from the slowest clock of the others).
  void worker_joined(int worker, std::int64_t incarnation);

 private:
  // Throws Unavailable once this server is fenced (set_forward).
  void check_not_fenced() const;
  net::Message dispatch(const net::Message& m, const proto::Body& body, const net::PeerIdentity& from);
  // `origin`: the address of the connection the request came on (forwarded with it).
  net::Message init(const net::Message& m, const proto::Body& body, const std::string& origin);
  net::Message restore(const net::Message& m, const proto::Body& body, const std::string& origin);
  net::Message pull(const proto::Body& body);
  net::Message push(const net::Message& m, const proto::Body& body, const std::string& origin);
  net::Message push_nonfinite(const net::Message& m, const proto::Body& body, const std::string& origin);
  net::Message save(const std::string& text);
  // data.assignment: dynamic: a worker asks for chunks to read (src/ps/chunk_dispenser.h).
  net::Message claim(const net::Message& m, const proto::Body& body, const std::string& origin);
  // Under mu_: the chunk progress in `worker`'s data cursor, from a push being applied.
  void note_data_progress_locked(int worker, const std::string& cursor);
  // Under mu_: what `worker` held unread goes back to be read by others.
  void release_data_locked(int worker);
  void apply_gradients(const Tensor& flat, const PushLayout& layout, const Tensor& ids, float lr,
                       std::int64_t pulled_version);
  void record_staleness(std::int64_t updates);
  // The slowest clock of the workers still training, `except` left out; max() when none.
  std::int64_t min_clock(int except = -1) const;
  net::Message done(const net::Message& m, int worker, const std::string& origin);
  // Under mu_: hands a state change to the backup (set_forward); nothing without one.
  // `kind` and the rest as in src/ps/replica_wire.h; a request's tensor travels with it.
  void forward_locked(std::uint8_t kind, int worker, std::int64_t number, const std::string& address,
                      const net::Message* request = nullptr);
  // Under mu_: a push with a sequence number this server applied already (retried after a
  // failover); records a new one.
  bool duplicate_locked(const proto::Header& header);
  // Under mu_, PsServerOptions::cursors: whether push `body` holds only data this server
  // applied already (its cursor is checked either way); counts it (one line the first time),
  // and in sync mode takes it as the worker's part of the round, with nothing added
  // (ps_server_replay.cc).
  bool replayed_locked(const proto::Body& body);
  // Under mu_, sync: whether late push `body` (its round closed here without it) is a replay
  // (kFlagReplay) of a batch this server lacks, to be added to the round open now rather than
  // dropped (one line the first time; ps_server_replay.cc).
  bool late_replay_locked(const proto::Body& body);
  // Under mu_: `cursor`, from a push being applied, is what `worker` resumes at (merged with
  // the kept one where cursors merge: what this server applied of it, whatever the order).
  void keep_cursor_locked(int worker, const std::string& cursor);
  // Under mu_, sync / averaging: a round holds contributions and every worker it waits for
  // made one (a lost or finished worker's stays in it without being waited for).
  bool round_complete_locked() const;
  // Under mu_: everything a backup needs to continue from here (src/ps/ps_server_state.cc),
  // appended to `out`.
  std::string encode_state_locked(std::string out) const;
  // Under mu_: a worker request that must not be served: its generation is older than the last
  // rollback, or this server holds no state yet (relaunched; pulls of step -1 wait instead).
  bool behind_locked(const proto::Header& header) const;
  net::Message rolled_back_locked(proto::Type type);
  // Under mu_: the chief (re)starts the job at `step` in `generation` (init, restore).
  void start_at_locked(std::int64_t step, std::int64_t generation);
  // Throws InvalidArgument for an init or restore of an older generation than the last one.
  void check_restart_generation(const proto::Header& header) const;
  void check_worker(int worker, proto::Type type) const;
  // Throws InvalidArgument (counted) for a worker request stamped with a replaced incarnation.
  void check_generation(const proto::Header& header);
  // Checks the index and notes the connection it came on (re-admitting a relaunched worker).
  void note_worker(int worker, proto::Type type, const net::PeerIdentity& from);
  // Under mu_: stops waiting for `worker`; an open round may now be complete.
  void lose_locked(int worker);
  // Under mu_: `worker` was taken back (a new connection, or a newer holder in the roster).
  // `joined`: the index was vacant (a worker beyond the job's starting ones).
  void readmitted_locked(int worker, bool joined = false);
  // Under mu_: the step `worker` continues from after a plain read.
  std::int64_t resume_step(int worker) const;
  // sync / averaging: contributions that complete a round, from the workers still training
  int needed_contributions() const;
  // sync / averaging, under mu_: applies the round's sum once enough workers contributed.
  void complete_round(std::int64_t step, float lr);
  // Under mu_: applies the round's average (sync) or takes it as the values (averaging).
  void close_round_values(std::int64_t step, float lr);

  PsServerOptions o_;
  std::function<void(const std::string&)> log_;
  Forward forward_;
  std::atomic<bool> fenced_{false};
  std::int64_t epoch_ = 0;  // the shard's (under mu_)
  std::vector<Slice> slices_;
  std::int64_t flat_elements_ = 0;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool initialized_ = false;
  std::int64_t start_step_ = 0;
  std::int64_t version_ = 0;          // updates applied
  std::int64_t restart_generation_ = 0;  // of the last init or restore: older worker requests are behind
  std::vector<std::int64_t> clocks_;  // per worker: steps pushed
  // Per worker: the oldest incarnation still accepted (the holder's, or past a lost one's).
  std::vector<std::int64_t> floor_;
  std::unique_ptr<WorkerRoster> roster_;  // who is still training
  std::unique_ptr<ChunkDispenser> dispenser_;  // dispense_data
  std::vector<bool> skip_notice_;     // sync, per worker: the round it pushed to was skipped
  // sync, per worker: pushed to the open round (a replayed push: its part with nothing added)
  std::vector<bool> contributed_;
  // Per worker: the data cursor of its last applied push (with PsServerOptions::cursors, all
  // its applied pushes' merged)
  std::vector<std::string> cursors_;
  std::vector<bool> rejoined_;        // per worker: re-admitted, its plain read not answered yet
  std::vector<bool> joiner_;          // per worker: that was its first admission (a joiner)
  // Per worker: the generation and sequence number of its last applied push that carried one.
  std::vector<std::int64_t> seq_generation_;
  std::vector<std::uint32_t> last_seq_;
  // Per worker: its last numbered claim (generation, number) and the answer it got.
  std::vector<std::int64_t> claim_generation_;
  std::vector<std::uint32_t> last_claim_;
  std::vector<std::string> last_claim_answer_;
  bool round_nonfinite_ = false;      // sync: the open round holds a non-finite push
  Tensor values_;                     // every slice, flat, in placement order
  SlotStore slots_;
  // sync / averaging: the sum of this round's contributions and how many there were
  Tensor accumulator_;
  int contributions_ = 0;
  std::int64_t round_step_ = 0;  // the step the contributions are for
  float last_lr_ = 0;            // sync: the learning rate they came with
  std::int64_t round_ = 0;
  PsStats stats_;
  bool replay_said_ = false;  // the first replayed push was logged
  bool late_replay_said_ = false;  // the first late replay added to a later round was logged
  std::shared_ptr<PoolAllocator> pool_;  // pull snapshots
  // Checkpoints travel over the connection, so the servers need no shared filesystem
  // (docs/checkpoint_format.md): a save snapshots the state at part 0 and hands it out one
  // tensor per request; a restore collects the slots first and applies them with the values.
  TensorMap save_snapshot_;
  std::vector<std::string> save_names_;
  SlotStore restore_slots_;
};

}  // namespace trib::ps
