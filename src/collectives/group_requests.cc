// Requests from peers: decoding, the generation check, routing to the operation in
// progress, and the comparison of the asker's view of the operation with ours that finds
// mismatched calls before any data moves.
#include <fmt/format.h>

#include "collectives/group_core.h"

namespace trib::collectives::detail {

namespace {

std::string spec_text(DType dtype, const Shape& shape) {
  return fmt::format("{}{}", dtype_name(dtype), shape.to_string());
}

bool same_shape(const OpSpec& spec, const Request& r) {
  if (spec.dtype != r.dtype) return false;
  if (!spec.rows_may_differ) return spec.shape == r.shape;
  if (spec.shape.rank() != r.shape.rank()) return false;
  for (int i = 1; i < spec.shape.rank(); ++i) {
    if (spec.shape[i] != r.shape[i]) return false;
  }
  return true;
}

}  // namespace

net::Message GroupCore::handle(net::Message message, const net::PeerIdentity& from, int known_rank) {
  TRIB_CHECK(message.method == kCollectiveMethod, Error,
             "collectives got a message with method {:#x}", message.method);
  Request r = decode(message.body);
  if (r.family == Family::hello) return handle_hello(r, from);
  int rank = known_rank;
  {
    std::lock_guard lock(mu_);
    TRIB_CHECK(configured_, Unavailable, "this rank has not formed its group yet");
    if (rank < 0) rank = rank_of_address(from.address);
    TRIB_CHECK(rank >= 0 && rank == r.from, Error,
               "{} claims to be rank {} but said hello as rank {}", from.to_string(), r.from, rank);
    TRIB_CHECK(r.generation == generation_, InvalidArgument,
               "a request of group generation {} from rank {} was refused by generation {}",
               r.generation, r.from, generation_);
  }
  if (r.family == Family::leave) {
    std::lock_guard lock(mu_);
    left_[static_cast<std::size_t>(rank)] = true;
    return {};
  }
  if (r.family == Family::abort) {
    std::string reason = r.text;
    if (reason.find("(reported by rank") == std::string::npos) {
      reason += fmt::format(" (reported by rank {})", r.from);
    }
    fail(Failure{static_cast<FailureKind>(r.param), reason});
    return {};
  }
  return route(r);
}

net::Message GroupCore::route(const Request& r) {
  std::shared_ptr<OpState> op;
  {
    std::unique_lock lock(mu_);
    wait(lock, Clock::now() + op_timeout_,
         [&] { return (current_ && current_->seq >= r.op) || last_seq_ >= r.op; },
         [&] { return fmt::format("operation {} ({}) asked for by rank {} to start on rank {}", r.op,
                                  family_name(r.family), r.from, rank_); });
    if (failure_) throw_failure(*failure_, "");
    TRIB_CHECK(current_ && current_->seq == r.op, Error,
               "rank {} asked for a piece of operation {} ({}), which rank {} has already finished",
               r.from, r.op, family_name(r.family), rank_);
    op = current_;
  }
  check_compatible(*op, r);
  return op->server->serve(r, op);
}

void GroupCore::refuse(const OpState&, Failure failure) {
  fail(failure);
  throw_failure(failure, "");  // the asker names the operation
}

void GroupCore::check_compatible(const OpState& op, const Request& r) {
  const OpSpec& s = op.spec;
  if (r.family != s.family) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("rank {} called {} but rank {} called {} (operation {} of the group)", r.from,
                            family_name(r.family), rank_, family_name(s.family), op.seq)});
  }
  if (s.has_tensor && !same_shape(s, r)) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("tensors differ: rank {} has {} but rank {} has {}{}", r.from,
                            spec_text(r.dtype, r.shape), rank_, spec_text(s.dtype, s.shape),
                            s.rows_may_differ ? " (only the first dimension may differ)" : "")});
  }
  if (r.param != s.param) {
    auto text = [&](std::uint32_t p) { return s.describe_param ? s.describe_param(p) : std::to_string(p); };
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("options differ: rank {} asks for {} but rank {} for {}", r.from, text(r.param),
                            rank_, text(s.param))});
  }
  // Only after the checks above: the same options and sizes choose the same algorithm.
  if (r.algorithm != s.algorithm) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("rank {} runs the {} algorithm but rank {} the {} one", r.from,
                            algorithm_name(r.algorithm), rank_, algorithm_name(s.algorithm))});
  }
}

void GroupCore::on_close(const net::PeerIdentity& peer, std::string_view reason, int known_rank) {
  int rank = known_rank;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return;
    if (rank < 0) rank = rank_of_address(peer.address);
    if (rank < 0) return;  // closed before its hello: formation reports it
    if (left_[static_cast<std::size_t>(rank)]) return;  // done with the group: a request to it will say so
  }
  fail(Failure{FailureKind::unavailable, fmt::format("{} is unreachable: {}", describe(rank), reason)});
}

}  // namespace trib::collectives::detail
