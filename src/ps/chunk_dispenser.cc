#include "ps/chunk_dispenser.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::ps {

ChunkDispenser::Answer ChunkDispenser::grant(int worker, const ChunkPlan& plan, int want, std::vector<Chunk>& out,
                                             bool may_wait, std::int64_t first_batch) {
  TRIB_CHECK(plan.batches_per_epoch > 0 && plan.chunk_batches > 0 && plan.total_batches >= 0, InvalidArgument,
             "data claim from worker {}: {} batches an epoch, {} a chunk, {} in all", worker, plan.batches_per_epoch,
             plan.chunk_batches, plan.total_batches);
  if (!planned_) {
    plan_ = plan;
    planned_ = true;
    // A resumed run: what came before its checkpoint counts as read, from a chunk boundary.
    first_batch = std::clamp<std::int64_t>(first_batch, 0, plan_.total_batches);
    next_epoch_ = first_batch / plan_.batches_per_epoch;
    next_index_ = first_batch % plan_.batches_per_epoch / plan_.chunk_batches;
    granted_fresh_ = applied_ = next_epoch_ * plan_.batches_per_epoch + next_index_ * plan_.chunk_batches;
  }
  TRIB_CHECK(plan == plan_, InvalidArgument,
             "data claim from worker {}: it plans {} batches an epoch, {} a chunk, {} in all, but the job's first "
             "claim said {}, {}, {}: the workers read different data",
             worker, plan.batches_per_epoch, plan.chunk_batches, plan.total_batches, plan_.batches_per_epoch,
             plan_.chunk_batches, plan_.total_batches);
  std::map<Key, Chunk>& mine = held_[worker];
  while (want > 0 && !returned_.empty()) {
    Chunk c = returned_.front();
    returned_.pop_front();
    mine[{c.epoch, c.index}] = c;
    out.push_back(c);
    --want;
  }
  while (want > 0 && granted_fresh_ < plan_.total_batches) {
    Chunk c{next_epoch_, next_index_, next_index_ * plan_.chunk_batches, 0};
    c.end = std::min(c.begin + plan_.chunk_batches, plan_.batches_per_epoch);
    c.end = std::min(c.end, c.begin + (plan_.total_batches - granted_fresh_));  // the job's last batches
    granted_fresh_ += c.end - c.begin;
    if (c.begin + plan_.chunk_batches >= plan_.batches_per_epoch) {
      ++next_epoch_;
      next_index_ = 0;
    } else {
      ++next_index_;
    }
    mine[{c.epoch, c.index}] = c;
    out.push_back(c);
    --want;
  }
  if (!out.empty()) return Answer::granted;
  if (!may_wait) return Answer::exhausted;
  for (const auto& [w, chunks] : held_)
    if (w != worker && !chunks.empty()) return Answer::wait;  // may come back if its reader is lost
  return Answer::exhausted;
}

void ChunkDispenser::progress(int worker, std::int64_t epoch, std::int64_t index, std::int64_t next) {
  auto w = held_.find(worker);
  if (w == held_.end()) return;
  auto it = w->second.find({epoch, index});
  if (it == w->second.end()) return;
  Chunk& c = it->second;
  if (next <= c.begin) return;  // nothing new (or an older cursor)
  next = std::min(next, c.end);
  applied_ += next - c.begin;
  c.begin = next;
  if (c.begin == c.end) w->second.erase(it);
}

std::int64_t ChunkDispenser::release(int worker) {
  auto w = held_.find(worker);
  if (w == held_.end()) return 0;
  std::int64_t batches = 0;
  for (const auto& [key, c] : w->second) {
    returned_.push_back(c);
    batches += c.end - c.begin;
  }
  held_.erase(w);
  returned_total_ += batches;
  return batches;
}

std::string chunk_field(const Chunk& c, std::int64_t next) {
  return fmt::format("{}:{}:{}:{}", c.epoch, c.index, next, c.end);
}

bool parse_chunk_field(const std::string& text, Chunk& c, std::int64_t& next) {
  long long e = 0, k = 0, n = 0, end = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lld:%lld:%lld:%lld%n", &e, &k, &n, &end, &used) != 4 ||
      used != static_cast<int>(text.size()))
    return false;
  if (e < 0 || k < 0 || n < 0 || end < n) return false;
  c = Chunk{e, k, 0, end};
  next = n;
  return true;
}

}  // namespace trib::ps
