// Operations in progress: their start and end, progress counters, served views, the
// group's failure, and the one wait every part of the library uses.
#include <fmt/format.h>

#include "collectives/group_core.h"
#include "collectives/tensor_view.h"

namespace trib::collectives::detail {

void throw_failure(const Failure& f, std::string_view op) {
  std::string message = op.empty() ? f.reason : fmt::format("{}: {}", op, f.reason);
  switch (f.kind) {
    case FailureKind::unavailable: throw Unavailable(message);
    case FailureKind::invalid_argument: throw InvalidArgument(message);
    case FailureKind::timeout: throw Timeout(message);
    case FailureKind::internal: break;
  }
  throw Error(message);
}

FailureKind failure_kind_of(const std::exception& e) {
  if (dynamic_cast<const Unavailable*>(&e)) return FailureKind::unavailable;
  if (dynamic_cast<const InvalidArgument*>(&e)) return FailureKind::invalid_argument;
  if (dynamic_cast<const Timeout*>(&e)) return FailureKind::timeout;
  return FailureKind::internal;
}

std::shared_ptr<OpState> GroupCore::begin(OpSpec spec, std::shared_ptr<OpServer> server,
                                          Clock::time_point deadline) {
  auto op = std::make_shared<OpState>();
  {
    std::lock_guard lock(mu_);
    if (failure_) throw_failure(*failure_, family_name(spec.family));
    TRIB_CHECK(!current_, InvalidArgument,
               "{}: another collective ({}) is running on this group; calls must take turns",
               family_name(spec.family), family_name(current_->spec.family));
    op->seq = ++last_seq_;
    op->spec = std::move(spec);
    op->server = std::move(server);
    op->deadline = deadline;
    current_ = op;
  }
  cv_.notify_all();
  return op;
}

void GroupCore::end(const std::shared_ptr<OpState>& op) {
  {
    std::lock_guard lock(mu_);
    if (current_ == op) current_.reset();
  }
  cv_.notify_all();
}

void GroupCore::fail(Failure failure) {
  {
    std::lock_guard lock(mu_);
    // The first failure wins, except that a disagreement between ranks (a mismatch) is
    // always the root cause: peers leaving after it are its consequence.
    const bool root_cause = failure.kind == FailureKind::invalid_argument &&
                            failure_ && failure_->kind != FailureKind::invalid_argument;
    if (failure_ && !root_cause) return;
    failure_ = std::move(failure);
  }
  cv_.notify_all();
}

std::optional<Failure> GroupCore::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

bool GroupCore::take_abort_duty() {
  std::lock_guard lock(mu_);
  if (abort_sent_ || shutting_down_) return false;
  abort_sent_ = true;
  return true;
}

void GroupCore::wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                     const std::function<bool()>& ready, const std::function<std::string()>& what) {
  for (;;) {
    if (ready()) return;  // done, even if the group failed meanwhile (a peer left after)
    if (failure_) {
      Failure f = *failure_;
      lock.unlock();
      throw_failure(f, "");
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !failure_) {
      Failure f{FailureKind::timeout, fmt::format("timed out waiting for {}", what())};
      failure_ = f;
      lock.unlock();
      cv_.notify_all();
      throw_failure(f, "");
    }
  }
}

void GroupCore::advance(OpState& op, std::uint64_t items) {
  {
    std::lock_guard lock(mu_);
    op.progress += items;
  }
  cv_.notify_all();
}

Tensor GroupCore::serve_view(const std::shared_ptr<OpState>& op, const Tensor& base, std::int64_t offset,
                             std::int64_t count, std::uint64_t* released) {
  {
    std::lock_guard lock(mu_);
    ++op->served;
    ++op->live_views;
  }
  std::weak_ptr<GroupCore> weak = weak_from_this();
  // `op` holds its server, and so whatever `released` points into, until the view is gone.
  return flat_view(base, offset, count, [weak, op, released] {
    if (auto core = weak.lock()) {
      {
        std::lock_guard lock(core->mu_);
        --op->live_views;
        if (released != nullptr) ++*released;
      }
      core->cv_.notify_all();
    }
  });
}

Tensor GroupCore::serve_made(const std::shared_ptr<OpState>& op, Tensor reply, std::uint64_t* released) {
  if (!reply.defined()) reply = Tensor::empty(DType::i32, Shape{0});
  return serve_view(op, reply, 0, reply.numel(), released);
}

}  // namespace trib::collectives::detail
