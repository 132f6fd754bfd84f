// The shared state behind a Group: its connections by rank, the operation in progress and
// the group's failure. Transport threads reach it through request and close handlers (which
// hold it by shared_ptr), the caller's thread through ActiveOp. One mutex and one condition
// variable guard it all: every wait in the library (a handler waiting for a piece to be
// ready, a caller waiting for its pieces to be fetched) is a wait on that condition with a
// deadline, woken by progress, by a new operation, or by the group failing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/wire.h"
#include "trib/core/allocator.h"
#include "trib/collectives/group.h"
#include "trib/net/transport.h"

namespace trib::collectives::detail {

using Clock = std::chrono::steady_clock;

enum class FailureKind : std::uint32_t { unavailable = 1, invalid_argument = 2, timeout = 3, internal = 4 };

struct Failure {
  FailureKind kind = FailureKind::internal;
  std::string reason;  // names the rank at fault, without the operation's name
};

// Throws the trib error class of `f.kind`, its message "<op>: <reason>" (just the reason
// when `op` is empty: errors sent back to a peer, which adds its own operation's name).
[[noreturn]] void throw_failure(const Failure& f, std::string_view op);
FailureKind failure_kind_of(const std::exception& e);

// What an operation is, as far as its peers must agree: the core checks every request
// against it before any data moves.
struct OpSpec {
  Family family = Family::barrier;
  Algorithm algorithm = Algorithm::none;
  DType dtype = DType::f32;
  Shape shape;
  bool has_tensor = false;
  bool rows_may_differ = false;  // allgather: the first dimension is per rank
  std::uint32_t param = 0;       // family options that must match (root, average, wire)
  std::function<std::string(std::uint32_t)> describe_param;
};

struct OpState;

// Serves peers' requests for one operation. Runs on transport threads; may wait (through
// GroupCore::wait) for the piece asked for to be ready.
class OpServer {
 public:
  virtual ~OpServer() = default;
  virtual net::Message serve(const Request& request, const std::shared_ptr<OpState>& op) = 0;
};

struct OpState {
  std::uint64_t seq = 0;
  OpSpec spec;
  std::shared_ptr<OpServer> server;
  Clock::time_point deadline;
  // Guarded by GroupCore::mu_.
  std::uint64_t progress = 0;    // items the caller has finished, in its order
  std::uint64_t served = 0;      // replies handed to the transport
  std::uint64_t live_views = 0;  // replies not yet sent (the transport still holds them)
};

class GroupCore : public std::enable_shared_from_this<GroupCore> {
 public:
  // ---- formation (group.cc) ----
  void configure(const GroupOptions& options);
  void set_listener(net::Listener* listener, const net::PeerIdentity& self);
  net::Handlers accepted_handlers();
  net::Handlers connected_handlers(int peer);
  void add_peer(int rank, std::shared_ptr<net::Connection> connection);
  // Ranks above ours that have not said hello by `deadline`; empty when all have.
  std::vector<int> wait_for_higher_ranks(Clock::time_point deadline);
  // Tells every peer that this rank is done (so that its connections closing is not taken
  // for a crash), waiting at most `timeout` for them to take note.
  void leave(std::chrono::milliseconds timeout);
  // The group is going away: fail what runs, ignore closes, close every connection.
  void shut_down();

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::uint64_t generation() const { return generation_; }
  std::chrono::milliseconds op_timeout() const { return op_timeout_; }
  std::shared_ptr<net::Connection> peer(int rank) const;
  std::string describe(int rank) const;
  // Whether `rank` said it is done with the group (its connection then closes normally).
  bool has_left(int rank) const;

  // ---- operations (active_op.cc) ----
  std::shared_ptr<OpState> begin(OpSpec spec, std::shared_ptr<OpServer> server, Clock::time_point deadline);
  void end(const std::shared_ptr<OpState>& op);
  // Records the group's failure (the first one wins, but a mismatch overrides) and wakes
  // every waiter.
  void fail(Failure failure);
  std::optional<Failure> failure() const;
  // Whether this call is the one that should tell the peers (once per group).
  bool take_abort_duty();

  // Waits, with `lock` on mu(), until `ready()`; throws the group's failure if it fails
  // first, and Timeout naming `what` at the deadline (failing the group).
  void wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
            const std::function<bool()>& ready, const std::function<std::string()>& what);
  void advance(OpState& op, std::uint64_t items);
  // A reply tensor over `count` elements of `base` from `offset`, counted as served and live
  // until the transport drops it; then `*released` (guarded by mu(); it must live as long
  // as the operation's server) is incremented too.
  Tensor serve_view(const std::shared_ptr<OpState>& op, const Tensor& base, std::int64_t offset,
                    std::int64_t count, std::uint64_t* released = nullptr);
  // A reply the server made itself (a packed copy, a count, or nothing: an empty tensor),
  // counted like a view, so that the operation ends only once it has been sent.
  Tensor serve_made(const std::shared_ptr<OpState>& op, Tensor reply = {}, std::uint64_t* released = nullptr);

  std::mutex& mu() { return mu_; }
  // Scratch and packed replies come from here, so that repeated collectives reuse memory
  // the system has already mapped instead of faulting in fresh pages every call.
  Allocator* pool() { return pool_.get(); }

 private:
  net::Message handle(net::Message message, const net::PeerIdentity& from, int known_rank);
  net::Message handle_hello(const Request& hello, const net::PeerIdentity& from);
  net::Message route(const Request& request);
  void check_compatible(const OpState& op, const Request& request);
  [[noreturn]] void refuse(const OpState& op, Failure failure);
  void on_close(const net::PeerIdentity& peer, std::string_view reason, int known_rank);
  int rank_of_address(const std::string& address) const;
  std::string describe_locked(int rank) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<PoolAllocator> pool_ = std::make_shared<PoolAllocator>();
  bool configured_ = false;
  bool shutting_down_ = false;
  int rank_ = 0, size_ = 1;
  std::uint64_t generation_ = 0;
  std::chrono::milliseconds op_timeout_{600000};
  std::vector<std::string> addresses_;
  net::Listener* listener_ = nullptr;
  net::PeerIdentity self_;  // this rank's own identity, to name itself to peers
  std::vector<std::shared_ptr<net::Connection>> peers_;
  std::vector<net::PeerIdentity> identities_;
  std::vector<bool> left_;  // peers that said they are done with the group
  std::map<std::string, int> accepted_;  // peer address of an accepted connection -> rank

  std::uint64_t last_seq_ = 0;
  std::shared_ptr<OpState> current_;
  std::optional<Failure> failure_;
  bool abort_sent_ = false;
};

}  // namespace trib::collectives::detail
