#include "app/cluster_stop.h"

#include <charconv>

#include "trib/core/error.h"

namespace trib::app {

namespace {

std::optional<std::int64_t> parse_step(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::int64_t step = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), step);
  TRIB_CHECK(ec == std::errc() && end == text->data() + text->size() && step >= 0, InvalidArgument,
             "the coordinator's {} is '{}', not a step", kStopStepKey, *text);
  return step;
}

}  // namespace

ClusterStop::ClusterStop(ClusterStopOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.store != nullptr && o_.signal != nullptr, InvalidArgument, "ClusterStop needs a store and a signal");
  if (o_.poll_store == nullptr) o_.poll_store = o_.store;
  watcher_ = std::thread([this] { watch(); });
}

ClusterStop::~ClusterStop() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

void ClusterStop::watch() {
  std::unique_lock lock(mu_);
  while (!closing_) {
    lock.unlock();
    try {
      if (o_.signal->received() && !raised_ && !o_.leaves_alone) {
        o_.store->set(kStopKey, fmt::format("worker {}: SIGTERM", o_.worker_index));
        raised_ = true;
      }
      std::optional<std::string> asked = o_.poll_store->try_get(kStopKey);
      std::optional<std::int64_t> step = chief() ? std::nullopt : parse_step(o_.poll_store->try_get(kStopStepKey));
      const bool leave = !o_.leave_key.empty() && o_.poll_store->try_get(o_.leave_key) == o_.leave_value;
      lock.lock();
      if (leave) leave_asked_ = true;
      if (asked) asked_by_ = asked;
      if (step) stop_step_ = step;
      lock.unlock();
    } catch (const Error&) {
      // The coordinator is away (the member reconnects): nothing to read this time.
    }
    lock.lock();
    wake_.wait_for(lock, o_.poll, [this] { return closing_; });
  }
}

bool ClusterStop::stop_at(std::int64_t step) {
  std::unique_lock lock(mu_);
  if ((o_.leaves_alone && o_.signal->received()) || leave_asked_) {
    leaving_ = true;
    return true;
  }
  if (stop_step_) return step >= *stop_step_;
  if (chief()) {
    if (!asked_by_ && !o_.signal->received()) return false;
    if (!asked_by_) asked_by_ = fmt::format("worker 0: SIGTERM");
    // Lockstep workers may already be inside the next step's collective, which needs the
    // chief: it takes that step too, and publishes before starting it, so every other
    // worker finds the step when it ends it.
    stop_step_ = o_.lockstep ? step + 1 : step;
    lock.unlock();
    o_.store->set(kStopStepKey, std::to_string(*stop_step_));
    return step >= *stop_step_;
  }
  if (!o_.lockstep) return false;
  // The chief cannot publish a stop step while the coordinator is away either (its set
  // waits for the reconnection, and it takes no step meanwhile): nothing to read.
  if (o_.reachable && !o_.reachable()) return stop_step_ && step >= *stop_step_;
  lock.unlock();
  std::optional<std::int64_t> agreed;
  try {
    agreed = parse_step(o_.poll_store->try_get(kStopStepKey));
  } catch (const Unavailable&) {
    // The coordinator went away during the read: as above, nothing to read.
  }
  lock.lock();
  if (agreed) stop_step_ = agreed;
  return stop_step_ && step >= *stop_step_;
}

std::string ClusterStop::reason() const {
  std::lock_guard lock(mu_);
  if (leaving_ && leave_asked_)
    return fmt::format("asked to leave (trib scale): worker {} leaves the job, which goes on without it (its data "
                       "goes to the others{})",
                       o_.worker_index, o_.leaves_between_epochs ? " from this epoch boundary on" : "");
  if (leaving_)
    return fmt::format("SIGTERM: worker {} leaves the job, which goes on without it (its data goes to the others)",
                       o_.worker_index);
  return fmt::format("the job stops (asked by {}, preemption)", asked_by_.value_or("the coordinator"));
}

}  // namespace trib::app
