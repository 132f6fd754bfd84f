// A parameter-server stream worker that leaves the running job for good (SIGTERM's leave,
// `trib scale` down, a worker the launcher gave up on): its Kafka partitions go to the others
// at its last applied push (docs/fault_tolerance.md, "Parameter-server stream jobs: a worker
// that leaves for good"). No rebalance and no pause: the job assigns the partitions, and each
// other worker takes its part of them at its own next step boundary, learning of the departure
// from the coordinator's store (StreamSync::departed). A worker started again at a departed
// index takes its share back (async): the others hand their part of it back at their next step
// boundary and the chief admits it (stream_returns.cc; docs/fault_tolerance.md,
// "Parameter-server stream jobs: a departed worker takes its share back").

#include <map>

#include <fmt/ranges.h>

#include "train_stream/stream_hooks.h"
#include "trib/config/strategy_config.h"
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
  StreamSync& sync = source_.sync();
  const std::optional<data::DataPosition> left = sync.departed(w);
  const std::map<int, stream::StreamCounts> counts = stream::counts_in(left.value_or(data::DataPosition{}));
  if (auto c = counts.find(w); c != counts.end()) metrics_.restore_counts(c->second);
  // Sync rounds would have to count it from the round it pushes in, which is not built: there it
  // reads nothing, as before.
  if (ctx.job.strategy.mode != config::PsMode::async) {
    ctx.progress.message(fmt::format("worker {}: started again after it left the job for good: its partitions stay with "
                                     "the workers that took them (taking them back is built for async mode only), so "
                                     "it reads nothing and ends with the job",
                                     w));
    return;
  }
  const int r = sync.departures(w);
  sync.publish_return(r);
  ctx.progress.message(fmt::format("worker {}: started again after it left the job for good: asks the workers that "
                                   "took its partitions to hand them back (return {})",
                                   w, r));
  const std::optional<std::map<int, StreamSync::HandOver>> hand_overs = sync.await_hand_overs(r);
  const std::optional<std::int64_t> admitted = hand_overs ? sync.await_admission(r) : std::nullopt;
  if (!admitted) {
    ctx.progress.message(fmt::format("worker {}: the job ends before it could take its partitions back: it reads "
                                     "nothing, and what was handed back is read from the last checkpoint's offsets by "
                                     "the next --resume",
                                     w));
    return;
  }
  std::vector<data::DataPosition> claims;
  for (const auto& [by, h] : *hand_overs) claims.push_back(h.claim);
  const std::vector<std::int32_t> reads = source_.take_back(claims);
  // The chief admitted it at its own step boundary: the barriers up to that step took its
  // departure claim, and from there it takes them itself. A checkpoint of that very step
  // must be saved before it trains (nobody trains while the chief saves).
  ctx.step = *admitted;
  if (checkpoint_every_ > 0 && *admitted % checkpoint_every_ == 0) sync.await_checkpoint(*admitted);
  ctx.progress.message(fmt::format("worker {}: took its partitions back: from step {} it reads {} at the handed-over "
                                   "progress {}",
                                   w, *admitted, fmt::join(reads, ", "),
                                   stream::progress_fields(source_.kafka().applied_position()).to_string()));
}

void StreamHooks::hand_back_returned(train::LoopContext& ctx) {
  StreamSync& sync = source_.sync();
  const train::Distribution& dist = ctx.distribution;
  for (int w = 0; w < dist.workers; ++w) {
    if (w == dist.worker_index) continue;
    const int r = sync.returns(w);
    if (r == 0 || r != sync.departures(w) || handed_back_[w] >= r) continue;
    if (ctx.distribution.fault_point) ctx.distribution.fault_point("stream-before-hand-back");  // tests only
    handed_back_[w] = r;
    // Its applied progress of what it gives up, at this step boundary: with parameter servers,
    // that of the last push the servers answered.
    auto [given, claim] = source_.hand_back(w);
    if (!sync.hand_over(w, r, {.step = ctx.step, .claim = claim})) continue;
    // Relaunched since it adopted them, it reads none of them: what goes back is the progress
    // its lost process applied of them (its resumed cursor).
    std::vector<std::int32_t> left_by_lost;
    if (given.empty())
      for (const auto& [p, progress] : stream::progress_in(claim, ctx.job.data.kafka.topic)) left_by_lost.push_back(p);
    const std::string what =
        !given.empty() ? fmt::format("partition(s) {} back at its applied progress {}", fmt::join(given, ", "),
                                     claim.to_string())
        : !left_by_lost.empty()
            ? fmt::format("partition(s) {} back at the progress its lost process applied {}", fmt::join(left_by_lost, ", "),
                          claim.to_string())
            : std::string("none of its partitions back");
    ctx.progress.message(fmt::format("worker {}: worker {} is back: at step {} it hands {}, and reads {}",
                                     dist.worker_index, w, ctx.step, what, fmt::join(source_.kafka().assignment(), ", ")));
  }
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
  // Returns first: a worker that left and came back before this worker noticed it left is
  // handed an empty hand-over, and its departure no longer stands (StreamSync::departed).
  hand_back_returned(ctx);
  if (ctx.chief())
    for (int w : sync.admit_ready(ctx.step))
      ctx.progress.message(fmt::format("worker 0: admits worker {} back into the job at step {}: every worker handed "
                                       "its partitions back",
                                       w, ctx.step));
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
