// An allreduce stream job's end of run when a member is lost after the last exchange
// (docs/fault_tolerance.md, "Allreduce stream jobs: the run's end without a restart"). Every
// member applied every step, the last one included, and the group shared every member's cursor
// of it in that exchange: a lost worker's final offsets are its cursor there, and a lost chief's
// relaunched process takes the final state (variables, optimizer state, that cursor table) from
// the survivors, as a file job's relaunched chief does. Nothing restarts.
#include <algorithm>

#include "train/training_state.h"
#include "train_stream/stream_hooks.h"
#include "trib/stream/stream_position.h"

namespace trib::train_stream {

std::int64_t StreamHooks::take_end_of_run(train::LoopContext& ctx, const update::Rollback& rollback) {
  // Every member applied every step, the last one included: their cursors of it are the run's
  // final progress and counts, exactly what they would hand over. Nothing is read any more, so
  // nobody rewinds (the others wait at the last checkpoint's barrier).
  data::DataPosition merged;
  for (const std::string& cursor : rollback.group_cursors) stream::merge_claims(merged, data::DataPosition::parse(cursor));
  // (Another joiner of that group, a worker relaunched meanwhile, hands the same over as its
  // final offsets: what its lost process applied.)
  end_of_run_ = kafka_fields(merged);
  take_back(ctx, merged, rollback.step);
  if (ctx.chief()) regrouped_from_ = stream::progress_fields(merged);
  ctx.progress.message(fmt::format("worker {}: took the final state from the group after the run's last step: {} the "
                                   "Kafka progress and counts of step {} of all {} workers, shared in their last "
                                   "exchange, variables crc32c {:08x}",
                                   ctx.distribution.worker_index,
                                   ctx.chief() ? "the last checkpoint holds" : "its final offsets are", rollback.step,
                                   rollback.group_cursors.size(), update::variables_crc32c(ctx.vars)));
  return rollback.step;
}

void StreamHooks::hand_over_end(train::LoopContext& ctx) {
  const int w = ctx.distribution.worker_index;
  ctx.progress.message(fmt::format("worker {}: the chief was lost after the run's last exchange, before the last "
                                   "checkpoint: its relaunched process takes the final state (variables, optimizer "
                                   "state, every member's Kafka progress and counts of step {}) from the group",
                                   w, ctx.step));
  TRIB_CHECK(ctx.update.hand_over_after_end(), Unavailable,
             "worker {}: the chief was lost after the run's last step, and no relaunched chief took the final state",
             w);
  ctx.progress.message(fmt::format("worker {}: the relaunched chief took the final state; it writes the last checkpoint",
                                   w));
}

std::optional<data::DataPosition> StreamHooks::last_step_cursor(const train::LoopContext& ctx, int w) const {
  // The last step's table, in the ranks of the group that applied it: the members' order.
  const std::vector<std::string> table = ctx.update.group_cursors_of(ctx.step - 1);
  const std::vector<int>& members = source_.sync().members();
  const auto it = std::find(members.begin(), members.end(), w);
  if (table.size() != members.size() || it == members.end()) return std::nullopt;
  const std::string& cursor = table[static_cast<std::size_t>(it - members.begin())];
  if (cursor.empty()) return std::nullopt;
  return data::DataPosition::parse(cursor);
}

}  // namespace trib::train_stream
