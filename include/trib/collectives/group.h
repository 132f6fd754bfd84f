// A communicator: the ranks 0..size-1 of one collective job, connected pairwise over a
// Transport. An explicit object (no globals): tests form several groups in one process,
// each rank a thread with its own transport.
//
// Forming a group takes two steps, so that ranks may listen on ports the system picks:
//   Endpoint ep = Endpoint::listen(transport, "127.0.0.1:0");   // every rank
//   ... share ep.address() with the others (a store, a pipe, a file) ...
//   std::unique_ptr<Group> g = Group::form(std::move(ep), {.rank = r, .size = n, .addresses = all});
// Group::form(transport, options) does both when every address is known in advance.
//
// Every collective call on a group gets the next operation sequence number; ranks must make
// the same calls in the same order. Requests carry the sequence number and the group's
// generation, so pieces of different operations, or of an older group, never mix. A group
// runs one collective at a time: calls from several threads must take turns.
//
// Failure: a rank that dies or stalls is noticed within the transport's peer timeout (its
// connections close), and every collective in progress or called afterwards fails on every
// rank with Unavailable naming it ("allreduce: rank 2 (worker 2 at 127.0.0.1:4567) is
// unreachable: ..."). Every wait has a deadline (GroupOptions::op_timeout), so nothing hangs.
// A failed group stays failed: re-forming it (a new generation) is the caller's business.
// The tensors given to a failed call have unspecified contents, and pieces already asked
// for may still land in them until the transport completes or fails those requests.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trib/net/transport.h"

namespace trib::collectives {

namespace detail {
class GroupCore;
}

struct GroupOptions {
  int rank = 0;
  int size = 1;
  // Where each rank listens, indexed by rank; addresses[rank] is ours (ignored by the
  // Endpoint overload, which already listens).
  std::vector<std::string> addresses{};
  // Identifies this incarnation of the group; a request from another generation is refused.
  std::uint64_t generation = 0;
  // Connecting to every peer (retrying while they start) and exchanging hellos.
  std::chrono::milliseconds form_timeout{30000};
  // Deadline of any one collective; dead peers are detected sooner, by the transport.
  std::chrono::milliseconds op_timeout{600000};
  // Pipeline unit of the bandwidth algorithms: a ring step's block is sent in pieces of at
  // most this many bytes, so that sending, receiving and reducing overlap.
  std::size_t segment_bytes = std::size_t{256} << 10;
  // Segments in flight per ring (requests posted ahead of need).
  std::size_t pipeline_depth = 4;
  // Automatic allreduce: at most this many bytes per rank use the latency-optimal direct
  // exchange, larger tensors the ring (docs/collectives.md).
  std::size_t small_bytes = std::size_t{64} << 10;
};

// The listening half of a group member, made first so that its address can be shared.
class Endpoint {
 public:
  // Listens at `address` ("127.0.0.1:0" picks a free port). Throws as Transport::listen.
  static Endpoint listen(std::shared_ptr<net::Transport> transport, std::string_view address);

  Endpoint(Endpoint&&) noexcept;
  Endpoint& operator=(Endpoint&&) noexcept;
  ~Endpoint();

  // The address peers connect to, with the actual port.
  std::string address() const;

 private:
  Endpoint() = default;
  friend class Group;
  std::shared_ptr<net::Transport> transport_;
  std::shared_ptr<detail::GroupCore> core_;
  std::unique_ptr<net::Listener> listener_;
};

class Group {
 public:
  // Connects to every peer and exchanges hellos (generation and size must agree). Throws
  // InvalidArgument for bad options or a disagreeing peer, Timeout (naming the ranks that
  // never arrived) after form_timeout, Unauthenticated on a wrong cluster secret.
  static std::unique_ptr<Group> form(Endpoint endpoint, GroupOptions options);
  static std::unique_ptr<Group> form(std::shared_ptr<net::Transport> transport, GroupOptions options);

  ~Group();  // closes every connection; a collective still running elsewhere fails
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }
  std::uint64_t generation() const { return options_.generation; }
  const GroupOptions& options() const { return options_; }
  // How errors name a rank: "rank 2 (worker 2 at 127.0.0.1:4567)".
  std::string describe(int rank) const;
  // Whether a collective has failed on this group (every later one fails at once).
  bool failed() const;
  // Fails the group here: a collective in progress (on another thread) ends at once with
  // Unavailable("... rank R aborted: <reason>"), telling its peers, and later ones fail.
  void abort(const std::string& reason);

  // For the algorithms in src/collectives.
  detail::GroupCore& core() { return *core_; }

 private:
  Group(Endpoint endpoint, GroupOptions options);
  void connect_lower_ranks();

  GroupOptions options_;
  std::shared_ptr<net::Transport> transport_;
  std::shared_ptr<detail::GroupCore> core_;
  std::unique_ptr<net::Listener> listener_;
};

}  // namespace trib::collectives
