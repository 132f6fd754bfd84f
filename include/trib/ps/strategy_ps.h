// The worker's side of parameter-server training: an UpdateStrategy that sends each step's
// gradients to the servers owning the variables (one message per server) and pulls the new
// values back; in averaging mode it trains locally and sends its parameters every `period`
// steps. The chief initialises the servers (or has them restore a checkpoint) and asks each
// server to write its own checkpoint shard, so checkpoint I/O is spread over the servers.
// Each server's push, reply and pull run concurrently with the other servers' (FanOut).
// With `overlap` (strategy.ps_overlap, the default) a step's pull leaves right behind its
// push, before the push is answered: the server serves a connection's requests in order, so
// the pull still sees the push applied, and the wait for the push's reply and the pull's own
// trip to the server go from every step.
// With PsRecoveryOptions a lost server does not end the job: the chief restores every
// server from its newest checkpoint, every worker rewinds to it (ps_recovery.h,
// strategy_ps_restore.cc).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/core/allocator.h"
#include "trib/net/transport.h"
#include "trib/ps/data_cursors.h"
#include "trib/ps/placement.h"
#include "trib/ps/ps_recovery.h"
#include "trib/ps/ps_server.h"
#include "trib/update/local_update.h"

namespace trib::ps {

class FanOut;
class ShardFailover;
namespace proto {
struct Body;
}

struct PsUpdateOptions {
  int worker_index = 0;
  int workers = 1;
  std::int64_t generation = 0;  // the generation this worker joined in; stamped on every request
  Mode mode = Mode::async;
  int period = 4;  // averaging
  // training.clip_norm: the step's whole gradient (every variable, on every server) is
  // scaled to this global norm on the worker before it is pushed, as LocalUpdate does.
  // 0: no clipping.
  double clip_norm = 0;
  std::vector<VariableInfo> variables;  // the trainable variables, in gradient order
  Placement placement;
  std::vector<std::shared_ptr<net::Connection>> servers;  // by server index
  std::shared_ptr<const Optimizer> optimizer;  // averaging: the local optimizer
  std::shared_ptr<const Schedule> schedule;
  std::chrono::milliseconds wait_timeout{600000};  // longest wait for a slow peer
  // Abort after this many steps in a row skipped for NaN or Inf gradients (this worker's
  // own, or in sync mode any worker's: such a round is skipped everywhere).
  int max_consecutive_skips = 10;
  // Where a worker that joins a running job (relaunched) says where it starts and the
  // checksum of the values it got; none: silent.
  std::function<void(const std::string&)> log;
  // Surviving a lost server; empty (the default): its loss ends this worker.
  PsRecoveryOptions recovery;
  // strategy.ps_overlap: a step's pull is asked right behind its push (above); false: after
  // the push's reply, as before (the same values, one turnaround more per step).
  bool overlap = true;
  // strategy.ps_pull_ahead (async only): the pull for step + 1 leaves before the push of step,
  // so the values come back while the gradients go out (both directions of the link at once);
  // they lack this push.
  bool pull_ahead = false;
  // A stream job whose partitions the job assigns: how the servers' cursors for this worker
  // compare. A relaunched worker resumes at the oldest (a push of its lost process may have
  // reached some servers only; they acknowledge its replay without applying it). Empty: at the
  // cursor of the server with the lowest step.
  DataCursors cursors{};
  // Tests: called as a step's requests leave and their replies come back, with what happened
  // ("push leaving" before a push is sent, "push sent", "pull sent", "push answered", "pull
  // answered"), the server and the step
  // the request is for. Called on the server's fan-out thread. None: nothing is called.
  std::function<void(const char* what, int ps, std::int64_t step)> on_exchange;
};

class PsUpdate final : public update::UpdateStrategy {
 public:
  explicit PsUpdate(PsUpdateOptions options);
  ~PsUpdate() override;
  bool apply(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) override;
  float learning_rate(std::int64_t step) const override { return o_.schedule->lr(step); }
  std::int64_t start(VariableStore& vars, const Checkpoint* checkpoint) override;
  void save(CheckpointWriter& writer, const VariableStore& vars) override;
  void finish() override;
  void finish_after_restore() override;
  void set_data_cursor(std::string cursor) override { cursor_ = std::move(cursor); }
  std::optional<std::string> resume_data_cursor() const override { return resume_cursor_; }
  // As a relaunched worker's plain read would find it: the slowest server's (strategy_ps_rejoin.cc).
  std::optional<std::string> data_cursor_of(int worker) override;
  std::string report() const override { return report_; }
  std::optional<update::Rewind> take_rewind() override;
  bool rejoined_running_job() const override { return rejoined_; }

 private:
  Tensor pack_values(int ps, const VariableStore& vars) const;
  bool apply_step(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars);
  // Server `ps`'s share of the gradients, packed into a push request.
  net::Message push_message(int ps, std::int64_t step, const std::vector<update::GradTensor>& grads) const;
  // Sends `request` to server `ps` and checks that the reply is a PS reply of its type.
  proto::Body exchange(int ps, const proto::Body& request, Tensor tensor = {}) const;
  // As exchange, with the reply's tensor too.
  proto::Body exchange(int ps, const proto::Body& request, Tensor tensor, Tensor* reply_tensor) const;
  // The reply `r` to a request of `type` to server `ps`, checked and decoded.
  proto::Body check_reply(int ps, proto::Type type, const net::Message& r) const;
  // Hands server `ps` its part of `checkpoint` over the connection (restore requests).
  void restore_server(int ps, const Checkpoint& checkpoint, std::int64_t generation = 0) const;
  // Server `ps`'s slices and slots, fetched over the connection (save requests).
  TensorMap fetch_server_state(int ps) const;
  // Pulls server `ps`'s values for `step` (-1: whatever it holds) into `vars`, waiting
  // while it says the mode does not allow that step yet. Returns the server's start step.
  struct Pulled {
    std::int64_t step = 0;  // the server's start step (a plain read: where this worker resumes)
    bool skipped = false;   // sync: the round was skipped (a worker's gradients were not finite)
    std::string cursor;     // a plain read: the data cursor of this worker's last applied push
    bool split = false;     // resume_point: the servers' cursors differed (a push that reached some)
    bool rejoined = false;  // a plain read: a server took this worker's lost index back (kFlagRejoined)
  };
  Pulled pull(int ps, std::int64_t step, VariableStore& vars);
  Pulled pull(int ps, std::int64_t step, VariableStore& vars, std::chrono::steady_clock::time_point deadline);
  // A pull request for `step` that the server may hold until the mode allows it (at most
  // kPullWaitSlice, and not past `deadline`).
  std::pair<net::Message, net::RequestOptions> pull_request(int ps, std::int64_t step, std::chrono::steady_clock::time_point deadline) const;
  // A pull's reply: the values copied into `vars`, or nullopt when the server said "not yet".
  std::optional<Pulled> take_pull(int ps, std::int64_t step, const net::Message& r, VariableStore& vars);
  Pulled pull_all(std::int64_t step, VariableStore& vars);
  // Every server's plain read as one: the lowest step, and the oldest cursor (one every other
  // covers, with `cursors`; else the lowest step's). Says so when they differ.
  Pulled resume_point(const std::vector<Pulled>& got) const;
  // Pushes server `ps`'s share of step `step` and pulls its values for step + 1 (overlap:
  // the pull asked right behind the push, on the same connection).
  Pulled push_pull(int ps, std::int64_t step, const std::vector<update::GradTensor>& grads, VariableStore& vars);
  void trace(const char* what, int ps, std::int64_t step) const {
    if (o_.on_exchange) o_.on_exchange(what, ps, step);
  }
  // Tells every server this step's gradients were not finite (sync: and waits for the round).
  bool push_nonfinite(std::int64_t step, VariableStore& vars);
  // Counts a skipped step; throws after max_consecutive_skips in a row.
  void count_skip(std::int64_t step, const std::string& why);
  // The chief, done: waits until no other worker is still training (or lost, for a grace
  // period), then the final evaluation and checkpoint hold every update.
  void wait_for_other_workers();
  // finish() once: done to every server; the chief waits for the others and reports.
  void finish_once();
  // A body of `type` stamped with this worker's index and generation.
  proto::Body request(proto::Type type) const;
  std::int64_t generation() const { return std::max(o_.generation, restart_generation_); }
  // apply() after a lost server or a rollback (`why`) at `step`: the chief restores the job,
  // the others wait for it; then this worker pulls the restored values and sets rewind_.
  void recover(std::int64_t step, const std::string& why);
  // Chief: reaches every server (a relaunched one at its new address), restores them all
  // from the newest checkpoint (or the initial values) in a new generation, announces it.
  nlohmann::json restore_job(const std::string& why);
  // A relaunched chief's start (PsRecoveryOptions::chief_relaunched): restore_job from the
  // newest checkpoint, or from this process's initial values (training.seed's, as the lost
  // chief's were) when there is none yet.
  void take_back(VariableStore& vars);
  // A relaunched chief's start when every server holds the running job's state: their values
  // (in `vars`), its step and data cursor, as a relaunched worker's plain read; nullopt (and
  // `vars` untouched) when a server holds none, or is not reached: the job is taken back
  // instead (take_back). strategy_ps_rejoin.cc.
  std::optional<Pulled> rejoin_running_job(VariableStore& vars, const Checkpoint* checkpoint);
  // Chief: keeps `vars` (training.seed's values) as what a restore before the first checkpoint
  // starts the job from again (initial_values_, initial_local_).
  void keep_initial_values(const VariableStore& vars);
  // Chief: variables that live on no server (batch-norm statistics) from `checkpoint`.
  void take_local_variables(const Checkpoint& checkpoint, VariableStore& vars) const;
  // Not the chief: waits for the announcement of a restore newer than this worker's generation
  // and reconnects to the servers whose connection closed.
  nlohmann::json await_restore();
  // Reconnects to each server whose connection closed; returns their names ("ps 1"), and
  // those marked in `reconnected` (by an earlier call), which it marks.
  std::string reconnect_closed(std::chrono::steady_clock::time_point deadline,
                               std::vector<char>* reconnected = nullptr);
  // Chief, at the end: the restores and every worker's steps redone, for the report.
  std::string restores_report() const;
  // Chief: the one line for a server (`lost`, per server) lost while the final checkpoint was
  // gathered (`why`): it names the newest checkpoint that stays and how to continue from it.
  std::string final_checkpoint_lost(const std::vector<char>& lost, const std::string& why) const;

  PsUpdateOptions o_;
  std::vector<std::vector<Slice>> slices_;  // per server
  std::vector<std::vector<std::size_t>> gradient_of_;  // per server, per slice: index in the gradients
  std::vector<std::int64_t> versions_;      // per server: version of the last pull
  std::vector<Tensor> pull_buffers_;        // per server: where pulled values arrive
  // Pushed gradients and values are packed into memory from here: a fresh buffer per step
  // would fault in every page again (3,200 faults a step for the CNN's 13 MB).
  std::shared_ptr<PoolAllocator> pool_ = std::make_shared<PoolAllocator>();
  std::unique_ptr<update::LocalUpdate> local_;  // averaging mode
  std::unique_ptr<FanOut> fan_out_;
  // Sends each server's requests, to its backup once it is lost (strategy.ps_replicas), and
  // numbers the pushes. Behind a pointer: exchange() and push() are const.
  std::unique_ptr<ShardFailover> failover_;
  std::string report_;
  int consecutive_skips_ = 0;
  std::string cursor_;  // sent with each push (set_data_cursor)
  std::optional<std::string> resume_cursor_;
  // The step whose push replays a batch some servers applied already (the first after a
  // relaunch between pushes: resume_point's split), flagged kFlagReplay; -1: none.
  std::int64_t replay_step_ = -1;
  VariableStore* vars_ = nullptr;  // the training loop's (start() to finish()): the chief's final pull
  // Recovery (ps_recovery.h). The generation of the last restore this worker rewound to.
  std::int64_t restart_generation_ = 0;
  std::optional<update::Rewind> rewind_;
  bool pending_recovery_ = false;  // a server was lost while checkpointing: recover at the next step
  bool finished_ = false;          // finish() done: the next save is the final checkpoint
  std::string pending_why_;
  // Chief, a run started without a checkpoint: the initial values, per server, and the
  // variables that live on no server (a rollback before the first checkpoint restores them).
  std::vector<Tensor> initial_values_;
  std::map<std::string, Tensor> initial_local_;
  std::vector<nlohmann::json> restores_;  // chief: each announcement, in order
  std::int64_t steps_redone_ = 0;         // this worker, over every restore
  bool rejoined_ = false;                 // a relaunched chief that rejoined the running job in place
};

}  // namespace trib::ps
