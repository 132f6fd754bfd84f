// The caller's side of one collective: registers the operation with the group (so that
// peers' requests for it are served), sends this rank's requests and waits for the replies,
// and turns any failure into the group's failure, told to every peer and thrown as one
// error naming the rank at fault ("allreduce: rank 2 (...) is unreachable: ...").
#pragma once

#include <chrono>
#include <future>
#include <memory>

#include "collectives/group_core.h"
#include "trib/collectives/group.h"

namespace trib::collectives::detail {

class ActiveOp {
 public:
  ActiveOp(Group& group, OpSpec spec, std::shared_ptr<OpServer> server, std::chrono::milliseconds timeout);
  ~ActiveOp();  // ends the operation: later requests for it are refused
  ActiveOp(const ActiveOp&) = delete;
  ActiveOp& operator=(const ActiveOp&) = delete;

  // Runs the caller's side of the algorithm; any exception fails the group.
  template <typename Body>
  void run(Body&& body) {
    try {
      body();
    } catch (...) {
      if (failed_) throw;
      fail_from_current_exception();
    }
  }

  GroupCore& core() { return core_; }
  const std::shared_ptr<OpState>& op() const { return op_; }
  int rank() const { return core_.rank(); }
  int size() const { return core_.size(); }
  Clock::time_point deadline() const { return op_->deadline; }

  // A request for piece (step, segment) of this operation, carrying our spec.
  Request request(std::uint32_t step, std::uint32_t segment) const;
  // Sends `r` to `peer`; the reply's tensor lands in `reply_into` when given.
  std::future<net::Message> ask(int peer, const Request& r, Tensor reply_into = {});
  // The reply, or the group's failure (whichever comes first), or Timeout at the deadline.
  net::Message await(std::future<net::Message>& reply, int peer);
  // Marks `items` more of the caller's work done (peers waiting on it are served).
  void advance(std::uint64_t items = 1);
  // Waits until peers have fetched `expected` replies and the transport has sent them, so
  // the caller's memory is no longer read.
  void wait_served(std::uint64_t expected);
  [[noreturn]] void fail(Failure failure);

 private:
  [[noreturn]] void fail_from_current_exception();
  Failure classify(const std::exception& e, int peer) const;
  void tell_peers(const Failure& failure);

  GroupCore& core_;
  std::shared_ptr<OpState> op_;
  bool failed_ = false;
};

}  // namespace trib::collectives::detail
