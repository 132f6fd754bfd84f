// A parameter server: it holds its slices of the variables and their optimizer slots, and
// applies the workers' gradients according to the training mode:
//   sync       gradients of a step are averaged over the first N - b workers, then applied;
//              later ones for that step are dropped (and counted);
//   async      each gradient is applied when it arrives (Downpour);
//   bounded    as async, but a worker may not start a step more than `staleness` steps
//              ahead of the slowest worker (stale-synchronous parallel);
//   averaging  workers train locally and push parameters every `period` steps; the server
//              averages them.
// Requests follow src/ps/ps_wire.h. Each is decoded once and every size it declares is
// checked against this server's slices before anything is read; a malformed or oversized
// request is refused with an InvalidArgument naming the problem (the transport sends it
// back as the reply) and changes nothing.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trib/checkpoint/safetensors.h"
#include "trib/net/transport.h"
#include "trib/optim/optimizer.h"
#include "trib/ps/placement.h"

namespace trib::ps {

namespace proto {
struct Body;
enum class Type : std::uint8_t;
}
struct PushLayout;

enum class Mode { sync, async, bounded, averaging };
Mode parse_mode(const std::string& name);

struct PsServerOptions {
  int index = 0;
  int workers = 1;
  Mode mode = Mode::async;
  int staleness = 2;
  int backup_workers = 0;
  std::vector<VariableInfo> variables;
  Placement placement;
  // The update rule. The learning rate comes with each push: workers own the schedule
  // (they know the step and the run's length).
  std::shared_ptr<const Optimizer> optimizer;
};

struct PsStats {
  std::uint64_t bytes_in = 0, bytes_out = 0, requests = 0;
  std::uint64_t applied = 0, dropped_late = 0;
  std::uint64_t refused = 0;       // malformed or oversized requests, answered with an error
  std::int64_t max_clock_gap = 0;  // bounded: most steps a pull ran ahead of the slowest worker
  std::array<std::uint64_t, 16> staleness{};  // histogram of updates between pull and apply (last bin: 15+)
};

class PsServer {
 public:
  explicit PsServer(PsServerOptions options);
  // Serves requests; the Transport's handlers call this.
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  PsStats stats() const;
  // The largest request a worker of this job can legitimately send this server: its slices'
  // values, the row ids of a push and a checkpoint path. Serving transports cap
  // NetOptions::max_frame_bytes to it, so a bigger claim is refused before any allocation.
  std::uint64_t max_request_bytes() const;

 private:
  net::Message dispatch(const net::Message& m, const proto::Body& body);
  net::Message init(const net::Message& m, const proto::Body& body);
  net::Message restore(const net::Message& m, const std::string& text);
  net::Message pull(const proto::Body& body);
  net::Message push(const net::Message& m, const proto::Body& body);
  net::Message save(const std::string& text);
  void apply_gradients(const Tensor& flat, const PushLayout& layout, const Tensor& ids, float lr,
                       std::int64_t pulled_version);
  void record_staleness(std::int64_t updates);
  std::int64_t min_clock() const;
  net::Message done(int worker);
  void check_worker(int worker, proto::Type type) const;
  // sync / averaging: contributions that complete a round, from the workers still training
  int needed_contributions() const;
  // sync / averaging, under mu_: applies the round's sum once enough workers contributed.
  void complete_round(std::int64_t step, float lr);

  PsServerOptions o_;
  std::vector<Slice> slices_;
  std::int64_t flat_elements_ = 0;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool initialized_ = false;
  std::int64_t start_step_ = 0;
  std::int64_t version_ = 0;          // updates applied
  std::vector<std::int64_t> clocks_;  // per worker: steps pushed
  std::vector<bool> done_;            // per worker: took its last step (a stream ran dry)
  Tensor values_;                     // every slice, flat, in placement order
  SlotStore slots_;
  // sync / averaging: the sum of this round's contributions and how many there were
  Tensor accumulator_;
  int contributions_ = 0;
  std::int64_t round_step_ = 0;  // the step the contributions are for
  float last_lr_ = 0;            // sync: the learning rate they came with
  std::int64_t round_ = 0;
  PsStats stats_;
  std::shared_ptr<PoolAllocator> pool_;  // pull snapshots
  // Checkpoints travel over the connection, so the servers need no shared filesystem
  // (docs/checkpoint_format.md): a save snapshots the state at part 0 and hands it out one
  // tensor per request; a restore collects the slots first and applies them with the values.
  TensorMap save_snapshot_;
  std::vector<std::string> save_names_;
  SlotStore restore_slots_;
};

}  // namespace trib::ps
