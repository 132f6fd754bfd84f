#include "stream/event_time_merge.h"

namespace trib::stream::detail {

void EventTimeMerge::add(std::int32_t partition, std::int64_t offset, std::int64_t now_ms) {
  remove(partition);
  Part part;
  part.next = part.fetched = offset;
  part.last_progress_ms = now_ms;
  parts_.insert_or_assign(partition, std::move(part));
}

void EventTimeMerge::remove(std::int32_t partition) {
  auto it = parts_.find(partition);
  if (it == parts_.end()) return;
  buffered_ -= static_cast<std::int64_t>(it->second.queue.size());
  parts_.erase(it);
}

void EventTimeMerge::reset(std::int32_t partition, std::int64_t offset, std::int64_t now_ms) {
  add(partition, offset, now_ms);
}

std::vector<std::int32_t> EventTimeMerge::partitions() const {
  std::vector<std::int32_t> out;
  for (const auto& [p, part] : parts_) out.push_back(p);
  return out;
}

bool EventTimeMerge::push(std::int32_t partition, PendingRecord record, std::int64_t now_ms) {
  auto it = parts_.find(partition);
  if (it == parts_.end() || record.offset < it->second.fetched) return false;
  Part& part = it->second;
  part.fetched = record.offset + 1;
  part.last_progress_ms = now_ms;
  part.queue.push_back(std::move(record));
  ++buffered_;
  return true;
}

void EventTimeMerge::set_high_watermark(std::int32_t partition, std::int64_t high_watermark, std::int64_t now_ms) {
  auto it = parts_.find(partition);
  if (it == parts_.end() || high_watermark < 0 || high_watermark == it->second.high_watermark) return;
  it->second.high_watermark = high_watermark;
  it->second.last_progress_ms = now_ms;
}

void EventTimeMerge::skip_records(Part& part) {
  while (!part.queue.empty() && part.queue.front().skip) {
    part.next = part.queue.front().offset + 1;
    part.queue.pop_front();
    --buffered_;
  }
}

bool EventTimeMerge::holds_back(const Part& part, std::int64_t candidate_ts, std::int64_t now_ms) {
  const bool caught_up = part.high_watermark >= 0 && part.high_watermark <= part.fetched;
  if (!caught_up && now_ms - part.last_progress_ms < options_.stall_ms) {
    retry_at_.reset();  // records exist (or may): wait for them to arrive
    return true;
  }
  if (now_ms < candidate_ts + options_.grace_ms) {
    retry_at_ = candidate_ts + options_.grace_ms;
    return true;
  }
  return false;
}

std::int64_t EventTimeMerge::take(std::int64_t max, std::int64_t now_ms, std::vector<PendingRecord>& out) {
  retry_at_.reset();
  std::int64_t taken = 0;
  while (taken < max) {
    Part* best = nullptr;
    std::int64_t best_ts = 0;
    for (auto& [p, part] : parts_) {
      skip_records(part);
      if (part.queue.empty()) continue;
      // Ties go to the lower partition: the map iterates in partition order.
      if (best == nullptr || part.queue.front().timestamp_ms < best_ts) {
        best = &part;
        best_ts = part.queue.front().timestamp_ms;
      }
    }
    if (best == nullptr) break;
    if (options_.replayable) {
      bool blocked = false;
      for (auto& [p, part] : parts_)
        if (part.queue.empty() && holds_back(part, best_ts, now_ms)) {
          blocked = true;
          break;
        }
      if (blocked) break;
    }
    best->next = best->queue.front().offset + 1;
    out.push_back(std::move(best->queue.front()));
    best->queue.pop_front();
    --buffered_;
    ++taken;
  }
  return taken;
}

PartitionOffsets EventTimeMerge::positions() const {
  PartitionOffsets out;
  for (const auto& [p, part] : parts_) {
    // A skipped record at the head is as good as consumed; report past it.
    std::int64_t next = part.next;
    for (const PendingRecord& r : part.queue) {
      if (!r.skip) break;
      next = r.offset + 1;
    }
    out[p] = next;
  }
  return out;
}

std::int64_t EventTimeMerge::buffered(std::int32_t partition) const {
  auto it = parts_.find(partition);
  return it == parts_.end() ? 0 : static_cast<std::int64_t>(it->second.queue.size());
}

}  // namespace trib::stream::detail
