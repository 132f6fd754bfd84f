#include "collectives/active_op.h"

#include <fmt/format.h>

namespace trib::collectives::detail {
namespace {

// While waiting for a reply, look at the group's failure this often: a failure reported
// elsewhere (another peer's close, a refusal) must end the wait even if this peer is silent.
constexpr auto kPoll = std::chrono::milliseconds(20);
// How long a failing rank waits for its peers to take note of the failure.
constexpr auto kAbortAcknowledgement = std::chrono::milliseconds(300);

}  // namespace

ActiveOp::ActiveOp(Group& group, OpSpec spec, std::shared_ptr<OpServer> server,
                   std::chrono::milliseconds timeout)
    : core_(group.core()) {
  if (timeout.count() <= 0) timeout = core_.op_timeout();
  op_ = core_.begin(std::move(spec), std::move(server), Clock::now() + timeout);
}

ActiveOp::~ActiveOp() { core_.end(op_); }

Request ActiveOp::request(std::uint32_t step, std::uint32_t segment) const {
  const OpSpec& s = op_->spec;
  Request r;
  r.family = s.family;
  r.algorithm = s.algorithm;
  r.from = core_.rank();
  r.generation = core_.generation();
  r.op = op_->seq;
  r.step = step;
  r.segment = segment;
  r.param = s.param;
  r.dtype = s.dtype;
  r.shape = s.shape;
  return r;
}

std::future<net::Message> ActiveOp::ask(int peer, const Request& r, Tensor reply_into) {
  auto conn = core_.peer(peer);
  if (!conn) fail({FailureKind::unavailable, fmt::format("{} is not connected", core_.describe(peer))});
  net::RequestOptions ro;
  ro.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - Clock::now());
  if (ro.timeout.count() <= 0) ro.timeout = std::chrono::milliseconds(1);
  ro.reply_into = std::move(reply_into);
  try {
    return conn->request(net::Message{kCollectiveMethod, encode(r), Tensor()}, std::move(ro));
  } catch (const std::exception& e) {
    fail(classify(e, peer));
  }
}

net::Message ActiveOp::await(std::future<net::Message>& reply, int peer) {
  while (reply.wait_for(kPoll) != std::future_status::ready) {
    if (auto f = core_.failure()) fail(*f);
    if (Clock::now() > deadline()) {
      fail({FailureKind::timeout, fmt::format("{} sent nothing for operation {} before its deadline",
                                              core_.describe(peer), op_->seq)});
    }
  }
  try {
    return reply.get();
  } catch (const std::exception& e) {
    fail(classify(e, peer));
  }
}

void ActiveOp::advance(std::uint64_t items) { core_.advance(*op_, items); }

void ActiveOp::wait_served(std::uint64_t expected) {
  std::unique_lock lock(core_.mu());
  core_.wait(lock, deadline(), [&] { return op_->served >= expected && op_->live_views == 0; },
             [&] { return fmt::format("peers to fetch this rank's part of operation {} ({} of {} pieces sent)",
                                      op_->seq, op_->served, expected); });
}

Failure ActiveOp::classify(const std::exception& e, int peer) const {
  auto conn = core_.peer(peer);
  // A refusal from the peer's handler reads "<peer>: <reason>", the reason naming the
  // culprit; recognised first, since the peer may close its end right after sending it.
  std::string reason = e.what();
  const std::string prefix = conn ? conn->peer().to_string() + ": " : std::string("\n");
  if (reason.starts_with(prefix)) {
    reason.erase(0, prefix.size());
    if (reason.find("(reported by rank") == std::string::npos) reason += fmt::format(" (reported by rank {})", peer);
    return {failure_kind_of(e), reason};
  }
  if (!conn || !conn->is_open()) {
    if (core_.has_left(peer)) {
      return {FailureKind::unavailable,
              fmt::format("{} has left the group (it closed its group before this operation)", core_.describe(peer))};
    }
    std::string why = conn ? conn->close_reason() : reason;
    return {FailureKind::unavailable, fmt::format("{} is unreachable: {}", core_.describe(peer), why)};
  }
  if (dynamic_cast<const Timeout*>(&e)) {
    return {FailureKind::timeout,
            fmt::format("{} did not answer before the deadline of operation {}", core_.describe(peer), op_->seq)};
  }
  // The connection still looked open but the peer is gone (a race with its close): the same
  // words as above, whichever of the two noticed first.
  if (dynamic_cast<const Unavailable*>(&e))
    return {FailureKind::unavailable, fmt::format("{} is unreachable: {}", core_.describe(peer), reason)};
  return {failure_kind_of(e), fmt::format("{}: {}", core_.describe(peer), reason)};
}

void ActiveOp::fail(Failure failure) {
  failed_ = true;
  core_.fail(std::move(failure));
  Failure first = *core_.failure();  // the first failure wins, wherever it was seen
  tell_peers(first);
  throw_failure(first, family_name(op_->spec.family));
}

void ActiveOp::fail_from_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    fail({failure_kind_of(e), e.what()});
  } catch (...) {
    fail({FailureKind::internal, "unknown exception"});
  }
}

// Peers learn of the failure at once rather than at their deadline, and with its real
// cause: the abort is a request, and its acknowledgement (or a short wait) comes before
// this rank may go on to close its connections, which peers would otherwise take for the
// cause. Best effort: a closed connection is skipped, a silent peer is not waited for long.
void ActiveOp::tell_peers(const Failure& failure) {
  if (!core_.take_abort_duty()) return;
  Request abort = request(0, 0);
  abort.family = Family::abort;
  abort.param = static_cast<std::uint32_t>(failure.kind);
  abort.shape = Shape{};
  abort.text = failure.reason;
  std::string body = encode(abort);
  net::RequestOptions ro;
  ro.timeout = kAbortAcknowledgement;
  std::vector<std::future<net::Message>> acks;
  for (int p = 0; p < core_.size(); ++p) {
    if (p == core_.rank()) continue;
    auto conn = core_.peer(p);
    if (!conn || !conn->is_open()) continue;
    try {
      acks.push_back(conn->request(net::Message{kCollectiveMethod, body, Tensor()}, ro));
    } catch (...) {
      // Its own close handler tells that peer instead.
    }
  }
  for (auto& a : acks) a.wait_for(kAbortAcknowledgement);
}

}  // namespace trib::collectives::detail
