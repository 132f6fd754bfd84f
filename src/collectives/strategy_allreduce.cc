#include "trib/collectives/strategy_allreduce.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collectives/gradient_exchange.h"
#include "collectives/named_tensors.h"
#include "trib/collectives/broadcast.h"

namespace trib::collectives {
namespace {

// Rethrows the current trib error with `context` in front, keeping its class.
[[noreturn]] void rethrow_with(const std::string& context) {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{}: {}", context, e.what()));
  } catch (const Unavailable& e) {
    throw Unavailable(fmt::format("{}: {}", context, e.what()));
  } catch (const Timeout& e) {
    throw Timeout(fmt::format("{}: {}", context, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", context, e.what()));
  }
}

update::LocalUpdateOptions local_options(const AllreduceUpdateOptions& o) {
  TRIB_CHECK((o.group || o.join) && o.optimizer && o.schedule, InvalidArgument,
             "AllreduceUpdate needs a group (or a way to join one), an optimizer and a schedule");
  return {o.parameters, o.optimizer, o.schedule, o.clip_norm, o.max_consecutive_skips};
}

}  // namespace

AllreduceUpdate::AllreduceUpdate(AllreduceUpdateOptions options)
    : o_(std::move(options)), local_(std::make_unique<update::LocalUpdate>(local_options(o_))) {
  TRIB_CHECK(o_.bucket_bytes >= sizeof(float), InvalidArgument, "allreduce strategy: bucket size {} bytes is too small",
             o_.bucket_bytes);
  if (o_.scaled_for <= 0 && o_.group) o_.scaled_for = o_.group->size();
  TRIB_CHECK(o_.scaled_for > 0, InvalidArgument, "allreduce strategy: a joiner must say how many workers its schedule is scaled for");
  if (o_.group) {
    workers_ = o_.group->size();
    exchange_ = std::make_unique<GradientExchange>(o_.group, o_.bucket_bytes, o_.compression, o_.share_cursors,
                                                   kMaxSharedCursorBytes);
  }
}

AllreduceUpdate::~AllreduceUpdate() = default;

void AllreduceUpdate::broadcast_variables(VariableStore& vars) {
  for (const std::string& name : vars.names()) {
    try {
      broadcast(*o_.group, vars.get(name), {.root = 0});
    } catch (const Error&) {
      rethrow_with(fmt::format("making worker {} start from worker 0's variables (variable '{}')", o_.group->rank(),
                               name));
    }
  }
}

std::int64_t AllreduceUpdate::start(VariableStore& vars, const Checkpoint* checkpoint) {
  if (!o_.group && o_.join && !exchange_ && final_report_.empty()) {
    // Joining a running group: its members are re-forming it for us and will give us their
    // step and state. Nothing from a checkpoint: the group is past it.
    o_.group = o_.join();
    TRIB_CHECK(o_.group != nullptr, InvalidArgument, "allreduce strategy: joining gave no group");
    try {
      agree_and_roll_back(kJoining, vars, "joining", 0);
    } catch (const Error&) {
      rethrow_with(fmt::format("worker joining the allreduce group as rank {}", o_.group->rank()));
    }
    vars_ = &vars;
    next_step_ = rollback_->step;
    return rollback_->step;
  }
  TRIB_CHECK(o_.group != nullptr, InvalidArgument, "allreduce strategy: start() after finish()");
  // A start after the first (a stream group back at its checkpoint): the cursors kept are of
  // steps the group has left.
  group_cursors_.clear();
  std::int64_t step = UpdateStrategy::start(vars, checkpoint);
  Tensor s = Tensor::from_vector<std::int64_t>(Shape{1}, {step});
  try {
    broadcast(*o_.group, s, {.root = 0});
  } catch (const Error&) {
    rethrow_with(fmt::format("worker {} agreeing on the starting step", o_.group->rank()));
  }
  broadcast_variables(vars);
  broadcast_slots();
  vars_ = &vars;
  next_step_ = *s.data<std::int64_t>();
  return next_step_;
}

void AllreduceUpdate::broadcast_slots() {
  std::map<std::string, Tensor> slots = local_->state();
  try {
    broadcast_named_tensors(*o_.group, slots, 0);
  } catch (const Error&) {
    rethrow_with(fmt::format("giving worker {} the chief's optimizer state", o_.group->rank()));
  }
  if (o_.group->rank() != 0) restore_state(slots);
}

void AllreduceUpdate::at_epoch_start(std::int64_t /*step*/) {
  if (o_.admit_joiners && o_.group && exchange_) o_.admit_joiners(*o_.group);
}

void AllreduceUpdate::finish() {
  final_report_ = report();  // the trainer asks for it after finish()
  if (o_.await_rejoin && o_.group && vars_ != nullptr && !leaving_) {
    exchange_.reset();  // no step is left to exchange; the group stays for the run's end
    // Until the chief's word that the run's end is written: each group given is one that a
    // relaunched chief (or worker) joined, which takes the final state here.
    while (std::shared_ptr<Group> next = o_.await_rejoin(*o_.group)) hand_over_final_state(std::move(next));
  }
  exchange_.reset();
  if (o_.await_relaunched_chief) finished_group_ = o_.group;
  o_.group.reset();
}

bool AllreduceUpdate::hand_over_after_end() {
  if (!o_.await_relaunched_chief || !finished_group_ || vars_ == nullptr) return false;
  o_.group = std::move(finished_group_);
  bool handed = false;
  while (std::shared_ptr<Group> next = o_.await_relaunched_chief(*o_.group)) {
    hand_over_final_state(std::move(next));
    handed = true;
  }
  finished_group_ = std::move(o_.group);  // its chief may be lost again before the last checkpoint
  return handed;
}

// A relaunched chief joining after the run's last step (only it writes the run's last
// checkpoint and report): it takes the final state as any joiner takes the group's.
void AllreduceUpdate::hand_over_final_state(std::shared_ptr<Group> next) {
  const int old_size = o_.group->size();
  o_.group = std::move(next);
  try {
    agree_and_roll_back(next_step_, *vars_, "the run's last step is done; a member joins to end the run", old_size);
  } catch (const Error&) {
    rethrow_with(fmt::format("handing the final state (step {}) to a joining worker", next_step_));
  }
  exchange_.reset();  // still no step to exchange
  // Nobody takes a rollback after the last step: the report says what happened.
  final_report_ += (final_report_.empty() ? "" : "\n") + take_rollback()->message;
}

std::string AllreduceUpdate::report() const {
  if (!exchange_) return final_report_;
  GradientExchange::Stats st = exchange_->stats();
  if (st.steps == 0) return "";
  const auto per_step = [&](double seconds) { return seconds * 1e3 / static_cast<double>(st.steps); };
  std::vector<std::string> item_ms;
  for (double s : st.item_seconds) item_ms.push_back(fmt::format("{:.1f}", per_step(s)));
  return fmt::format(
      "allreduce: {} workers, {} bucket(s) of up to {:.1f} MiB{}, {:.2f} MiB averaged per step ({} compression); "
      "apply() waited {:.2f} ms per step for the exchange; {:.0f}% of exchanges started during backprop; the "
      "exchange took {:.1f} ms per step ({} ms by item), {:.1f} ms of it before apply()",
      workers_, st.buckets, static_cast<double>(o_.bucket_bytes) / (1 << 20),
      st.sparse ? fmt::format(" + {} sparse gradient(s) allgathered", st.sparse) : "",
      static_cast<double>(st.dense_bytes) / (1 << 20), compression_name(o_.compression), per_step(st.waited_seconds),
      100.0 * static_cast<double>(st.early) / static_cast<double>(std::max<std::uint64_t>(1, st.items)),
      per_step(st.comm_seconds), fmt::join(item_ms, ", "), per_step(st.hidden_seconds));
}

void AllreduceUpdate::on_gradient_ready(std::size_t index, const update::GradTensor& grad) {
  TRIB_CHECK(exchange_ != nullptr, InvalidArgument, "allreduce strategy: a gradient after finish()");
  exchange_->report(index, grad);
}

bool AllreduceUpdate::apply(std::int64_t step, std::vector<update::GradTensor>& grads, VariableStore& vars) {
  TRIB_CHECK(grads.size() == o_.parameters.size(), InvalidArgument, "{} gradients for {} parameters", grads.size(),
             o_.parameters.size());
  TRIB_CHECK(exchange_ != nullptr, InvalidArgument, "allreduce strategy: apply() after finish()");
  rollback_.reset();
  try {
    // The cursors' allgather is part of the step: a member that applies the step has every
    // member's cursor of it, so the survivors of a later loss all hold those of the step they
    // go back to.
    exchange_->finish(grads);
  } catch (const Error& e) {
    // A lost worker (Unavailable) or one that stalled (Timeout) may leave survivors to go on.
    if (!o_.regroup || !update::lost_peer(e))
      rethrow_with(fmt::format("step {}: averaging gradients over {} workers", step, o_.group->size()));
    recover(step, vars, e.what());
    return false;
  }
  if (!local_->apply(step, grads, vars)) return false;
  vars_ = &vars;
  next_step_ = step + 1;
  // Where the data stood after this step, for a rollback to the step after it.
  cursors_[step] = cursor_;
  while (cursors_.size() > 4) cursors_.erase(cursors_.begin());
  if (o_.share_cursors) {
    group_cursors_[step] = exchange_->shared();
    while (group_cursors_.size() > 4) group_cursors_.erase(group_cursors_.begin());
  }
  return true;
}

std::vector<std::string> AllreduceUpdate::group_cursors_of(std::int64_t step) const {
  auto it = group_cursors_.find(step);
  return it == group_cursors_.end() ? std::vector<std::string>{} : it->second;
}

void AllreduceUpdate::set_data_cursor(std::string cursor) {
  cursor_ = std::move(cursor);
  if (!o_.share_cursors || !exchange_) return;
  TRIB_CHECK(cursor_.size() <= kMaxSharedCursorBytes, InvalidArgument,
             "worker {}'s data cursor is {} bytes, more than the {} an allreduce group shares", o_.group->rank(),
             cursor_.size(), kMaxSharedCursorBytes);
  exchange_->share(cursor_);
}

}  // namespace trib::collectives
