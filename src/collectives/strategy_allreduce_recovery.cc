// The allreduce strategy after a failed exchange: the survivors re-form their group (the
// caller's Regroup, which knows the job's membership), agree where to go on, and roll back.
//
// Why a rollback is needed at all: a rank's allreduce can complete while another's fails
// (in a ring, the last pieces a rank receives may be the ones the lost rank would have sent
// to someone else), so when a worker is lost some survivors may have applied step s and
// others not. No rank can have applied s + 1 (every rank's gradient of s + 1 needs every
// rank to have finished s), so survivors differ by at most one step. The ones behind hold
// exactly the state the others had before s: the group takes its variables and optimizer
// state from the lowest such rank, so nothing needs to be kept per step to undo one.
//
// With options.share_cursors, every member's data cursor of each step travels inside the step's
// exchange (before its gradients, after the batch is read): a survivor that applied step s - 1 holds every
// member's cursor of it, the lost ones' included, and the lowest rank gives its copy to all
// (Rollback::group_cursors), so that a stream job can seek the lost member's partitions there;
// a joiner gets them too, and its share of the partitions starts at the group's progress.
#include <fmt/format.h>

#include <algorithm>

#include "collectives/gradient_exchange.h"
#include "collectives/named_tensors.h"
#include "collectives/scaled_schedule.h"
#include "trib/collectives/allgather.h"
#include "trib/collectives/broadcast.h"
#include "trib/collectives/strategy_allreduce.h"

namespace trib::collectives {

void AllreduceUpdate::recover(std::int64_t step, VariableStore& vars, const std::string& why) {
  const int old_size = o_.group->size();
  std::string reason = why;
  for (int attempt = 1;; ++attempt) {
    exchange_.reset();  // its thread ends: the failed group fails whatever it still runs
    std::shared_ptr<Group> failed = std::move(o_.group);
    o_.group = o_.regroup(*failed, reason);  // throws when the job cannot go on
    TRIB_CHECK(o_.group != nullptr, InvalidArgument, "allreduce strategy: the regroup callback returned no group");
    failed.reset();
    try {
      agree_and_roll_back(step, vars, why, old_size);
      return;
    } catch (const Error& e) {
      // Another member lost while re-forming: the next generation, again.
      if (!update::lost_peer(e) || attempt >= o_.max_regroups)
        throw Unavailable(fmt::format("step {}: re-forming the allreduce group after \"{}\" ({} attempt(s)): {}", step,
                                      why, attempt, e.what()));
      reason = e.what();
    }
  }
}

void AllreduceUpdate::agree_and_roll_back(std::int64_t step, VariableStore& vars, const std::string& why,
                                          int old_size) {
  Group& g = *o_.group;
  // Where every member stands: the step each was about to apply when its exchange failed (a
  // joiner: kJoining, above them all).
  Tensor all = allgather(g, Tensor::from_vector<std::int64_t>(Shape{1}, {step}));
  const std::int64_t* at = all.data<std::int64_t>();
  int root = 0;
  for (int r = 1; r < g.size(); ++r)
    if (at[r] < at[root]) root = r;
  const std::int64_t to = at[root];
  TRIB_CHECK(to != kJoining, InvalidArgument, "allreduce strategy: a group of joiners only has no state to start from");
  std::int64_t ahead = to;
  for (int r = 0; r < g.size(); ++r)
    if (at[r] != kJoining) ahead = std::max(ahead, at[r]);
  for (const std::string& name : vars.names()) broadcast(g, vars.get(name), {.root = root});
  std::map<std::string, Tensor> slots = local_->state();
  broadcast_named_tensors(g, slots, root);
  // Where the root's data stood after the last step kept: a joiner's data starts there.
  std::string root_cursor;
  if (g.rank() == root)
    if (auto it = cursors_.find(to - 1); it != cursors_.end()) root_cursor = it->second;
  broadcast_bytes(g, root_cursor, root);
  update::Rollback rb;
  share_rollback_cursors(to, root, rb);
  // Nothing failed in the new group: now change this worker's own state.
  local_ = std::make_unique<update::LocalUpdate>(scaled_local_options(static_cast<double>(g.size())));
  local_->restore_state(slots);
  adopt_group();
  if (step != kJoining) {
    ++regroups_;
    steps_redone_ += ahead - to;
  }
  rb.step = to;
  rb.rank = g.rank();
  rb.workers = g.size();
  rb.generation = static_cast<std::int64_t>(g.generation());
  if (auto it = cursors_.find(to - 1); it != cursors_.end() && !it->second.empty()) rb.data_cursor = it->second;
  cursors_.erase(cursors_.lower_bound(to), cursors_.end());
  group_cursors_.erase(group_cursors_.lower_bound(to), group_cursors_.end());
  if (!root_cursor.empty()) rb.peer_cursor = root_cursor;
  const std::string lr = fmt::format("learning rate x{:.4g}{}", lr_factor_,
                                     o_.linear_scaling ? " (linear scaling)" : " (linear scaling off: unchanged)");
  // Every member prints the same checksum for the same generation: they start it identical.
  const std::uint32_t crc = update::variables_crc32c(vars);
  if (step == kJoining) {
    rb.message = fmt::format(
        "joined the allreduce group as generation {}: rank {} of {}; starts at step {} with rank {}'s variables "
        "(crc32c {:08x}) and optimizer state; {}",
        g.generation(), g.rank(), g.size(), to, root, crc, lr);
  } else {
    rb.message = fmt::format(
        "step {}: {}; the group went on as generation {} with {} workers (was {}; this one rank {}); back to step {} "
        "({} step(s) undone), variables crc32c {:08x}, {}",
        step, why, g.generation(), g.size(), old_size, g.rank(), to, ahead - to, crc, lr);
  }
  rollback_ = std::move(rb);
}

void AllreduceUpdate::share_rollback_cursors(std::int64_t to, int root, update::Rollback& rb) {
  if (!o_.share_cursors) {
    rb.no_group_cursors = "the group shares no data cursors";
    return;
  }
  // Every member decides alike, from the root's table. A joiner has none and is never the root
  // (it stands at kJoining): it takes the old members' cursors of step `to` - 1 from the root,
  // as it takes the variables, and its share of the partitions then starts at their progress.
  Group& g = *o_.group;
  std::vector<std::string> table;
  if (g.rank() == root)
    if (auto it = group_cursors_.find(to - 1); it != group_cursors_.end()) table = it->second;
  broadcast_strings(g, table, root);
  if (table.empty()) {
    rb.no_group_cursors = fmt::format(
        "the members' data cursors before step {} are not known (the group has not finished a step since it "
        "started or went back to a checkpoint)",
        to);
    return;
  }
  for (std::size_t r = 0; r < table.size(); ++r)
    if (table[r].empty()) {
      rb.no_group_cursors = fmt::format("rank {} shared no data cursor before step {}", r, to);
      return;
    }
  rb.group_cursors = std::move(table);
}

void AllreduceUpdate::adopt_group() {
  exchange_ = std::make_unique<GradientExchange>(o_.group, o_.bucket_bytes, o_.compression, o_.share_cursors,
                                                 kMaxSharedCursorBytes);
  workers_ = o_.group->size();
}

update::LocalUpdateOptions AllreduceUpdate::scaled_local_options(double workers) {
  lr_factor_ = o_.linear_scaling ? workers / o_.scaled_for : 1.0;
  std::shared_ptr<const Schedule> schedule = o_.schedule;
  if (lr_factor_ != 1.0) schedule = std::make_shared<ScaledSchedule>(o_.schedule, lr_factor_);
  return {o_.parameters, o_.optimizer, schedule, o_.clip_norm, o_.max_consecutive_skips};
}

std::optional<update::Rollback> AllreduceUpdate::take_rollback() {
  std::optional<update::Rollback> out = std::move(rollback_);
  rollback_.reset();
  return out;
}

}  // namespace trib::collectives
