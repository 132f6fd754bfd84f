// A parameter-server stream worker that leaves the running job for good (SIGTERM's leave,
// `trib scale` down, a worker the launcher gave up on): its Kafka partitions go to the others
// at its last applied push (docs/fault_tolerance.md, "Parameter-server stream jobs: a worker
// that leaves for good"). No rebalance and no pause: the job assigns the partitions, and each
// other worker takes its part of them at its own next step boundary, learning of the departure
// from the coordinator's store (StreamSync::departed).

#include <map>

#include <fmt/ranges.h>

#include "train_stream/stream_hooks.h"
#include "trib/stream/stream_counts.h"
#include "trib/stream/stream_position.h"

namespace trib::train_stream {
namespace {

// Departures are store lookups (one per other worker): looked for this often, not every step.
constexpr std::chrono::milliseconds kDepartureCheck{200};

}  // namespace

void StreamHooks::leave(train::LoopContext& ctx) {
  const data::DataPosition own = claim(ctx);
  source_.sync().leave(own);
  ctx.progress.message(fmt::format("worker {}: leaves the running job at step {}: its partitions {} go to the other "
                                   "workers at its last applied push: {}",
                                   ctx.distribution.worker_index, ctx.step,
                                   fmt::join(source_.kafka().assignment(), ", "),
                                   stream::progress_fields(own).to_string()));
}

void StreamHooks::rejoin_after_leaving(train::LoopContext& ctx) {
  const int w = ctx.distribution.worker_index;
  const std::optional<data::DataPosition> left = source_.sync().departed(w);
  const std::map<int, stream::StreamCounts> counts = stream::counts_in(left.value_or(data::DataPosition{}));
  if (auto c = counts.find(w); c != counts.end()) metrics_.restore_counts(c->second);
  ctx.progress.message(fmt::format("worker {}: started again after it left the job for good: its partitions stay with "
                                   "the workers that took them (taking them back is not built yet), so it reads "
                                   "nothing and ends with the job",
                                   w));
}

void StreamHooks::settle(train::LoopContext& ctx, int w) {
  // The servers' cursor of its last applied push carries its progress and its counts; with
  // none (it pushed nothing since the run started or the last restore), its partitions stay
  // where the consumers last sought them, which adopt() starts them from.
  std::optional<std::string> cursor = ctx.update.data_cursor_of(w);
  data::DataPosition at = cursor && !cursor->empty() ? data::DataPosition::parse(*cursor) : data::DataPosition{};
  if (at.fields().empty()) {
    // Its counts then are those it started the run with.
    const std::map<int, stream::StreamCounts> counts = stream::counts_in(source_.restored_offsets());
    if (auto c = counts.find(w); c != counts.end()) stream::save_counts(at, w, c->second);
  }
  source_.sync().publish_departure(w, at);
  ctx.progress.message(fmt::format("worker {}: the launcher gave up on worker {}: its partitions go to the other "
                                   "workers at {}",
                                   ctx.distribution.worker_index, w,
                                   stream::progress_fields(at).fields().empty() ? std::string("where they were last sought (it pushed no update)")
                                                       : "its last applied push: " +
                                                             stream::progress_fields(at).to_string()));
}

void StreamHooks::adopt_departed(train::LoopContext& ctx) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_departure_check_) return;
  next_departure_check_ = now + kDepartureCheck;
  StreamSync& sync = source_.sync();
  const train::Distribution& dist = ctx.distribution;
  std::map<int, data::DataPosition> gone;
  for (int w = 0; w < dist.workers; ++w) {
    if (w == dist.worker_index || ((source_.absent() >> w) & 1u) != 0) continue;
    std::optional<data::DataPosition> claim = sync.departed(w);
    if (!claim && ctx.chief() && sync.given_up(w)) {
      settle(ctx, w);
      claim = sync.departed(w);
    }
    if (claim) gone.emplace(w, std::move(*claim));
  }
  if (gone.empty()) return;
  const std::vector<std::int32_t> gained = source_.adopt(gone);
  std::vector<int> who;
  for (const auto& [w, claim] : gone) who.push_back(w);
  ctx.progress.message(fmt::format("worker {}: worker(s) {} left the job for good: at step {} it takes partition(s) "
                                   "{} of theirs at their last applied push, and reads {}",
                                   dist.worker_index, fmt::join(who, ", "), ctx.step,
                                   gained.empty() ? std::string("none") : fmt::format("{}", fmt::join(gained, ", ")),
                                   fmt::join(source_.kafka().assignment(), ", ")));
}

}  // namespace trib::train_stream
