#include "trib/stream/applied_offsets.h"

#include <algorithm>

namespace trib::stream {

void AppliedOffsets::start(std::int32_t partition, PartitionProgress start) {
  Part part;
  part.base = std::move(start);
  part.base.applied.erase_below(part.base.next + 1);
  parts_.insert_or_assign(partition, std::move(part));
}

void AppliedOffsets::release(std::int32_t partition, std::int64_t read_next) {
  auto it = parts_.find(partition);
  if (it == parts_.end()) return;
  if (it->second.undone == 0) {
    parts_.erase(it);
    return;
  }
  it->second.released = true;
  it->second.released_at = read_next;
}

void AppliedOffsets::forget_released() {
  std::erase_if(parts_, [](const auto& entry) { return entry.second.released; });
}

bool AppliedOffsets::reclaim(std::int32_t partition) {
  auto it = parts_.find(partition);
  if (it == parts_.end() || !it->second.released) return false;
  it->second.released = false;
  return true;
}

void AppliedOffsets::handed_out(std::int32_t partition, std::int64_t offset) {
  auto it = parts_.find(partition);
  if (it == parts_.end()) return;
  Part& part = it->second;
  // In order, always, from a KafkaSource; anything else is still kept sorted.
  auto at = part.out.empty() || offset > part.out.back() ? part.out.end()
                                                         : std::lower_bound(part.out.begin(), part.out.end(), offset);
  if (at != part.out.end() && *at == offset) return;  // already pending
  part.done.insert(part.done.begin() + (at - part.out.begin()), 0);
  part.out.insert(at, offset);
  ++part.undone;
}

void AppliedOffsets::consumed(std::int32_t partition, std::int64_t offset) {
  auto it = parts_.find(partition);
  if (it != parts_.end() && offset >= it->second.base.next) it->second.base.applied.insert(offset);
}

void AppliedOffsets::applied(std::int32_t partition, std::int64_t offset) {
  auto it = parts_.find(partition);
  // A record handed out before a seek or a new assignment of its partition is no longer
  // tracked: the position was reset past (or before) it.
  if (it == parts_.end()) return;
  Part& part = it->second;
  auto at = std::lower_bound(part.out.begin(), part.out.end(), offset);
  if (at == part.out.end() || *at != offset) return;
  char& flag = part.done[static_cast<std::size_t>(at - part.out.begin())];
  if (flag) return;
  flag = 1;
  --part.undone;
  while (!part.done.empty() && part.done.front()) {
    part.done.pop_front();
    part.out.pop_front();
  }
}

bool AppliedOffsets::skip(std::int32_t partition, std::int64_t offset) const {
  auto it = parts_.find(partition);
  return it != parts_.end() && it->second.base.done(offset);
}

PartitionProgress AppliedOffsets::progress_of(Part& part, std::int64_t read_next) {
  // Nothing at or after what the source has read is handed out, so the low watermark is
  // the first record handed out and not applied, or the read position; done offsets right
  // there push it on.
  std::int64_t low = part.out.empty() ? std::max(part.base.next, read_next) : part.out.front();
  low = part.base.applied.first_gap(std::max(low, part.base.next));
  part.base.next = low;
  part.base.applied.erase_below(low + 1);
  PartitionProgress out = part.base;
  for (std::size_t i = 0; i < part.out.size(); ++i)
    if (part.done[i] && part.out[i] > low) out.applied.insert(part.out[i]);
  return out;
}

PartitionProgressMap AppliedOffsets::progress(const PartitionOffsets& read_next) {
  PartitionProgressMap out;
  for (auto it = parts_.begin(); it != parts_.end();) {
    Part& part = it->second;
    std::int64_t read = part.released_at;
    if (!part.released) {
      auto r = read_next.find(it->first);
      read = r != read_next.end() ? r->second : part.base.next;
    }
    out[it->first] = progress_of(part, read);
    if (part.released && part.undone == 0) {
      it = parts_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::int64_t AppliedOffsets::pending() const {
  std::int64_t n = 0;
  for (const auto& [p, part] : parts_) n += part.undone;
  return n;
}

PartitionProgress merge_claims(const PartitionProgress& a, const PartitionProgress& b) {
  OffsetRanges done;
  for (const PartitionProgress* c : {&a, &b}) {
    done.insert(c->from, c->next);
    done.insert(c->applied);
  }
  PartitionProgress out;
  out.from = std::min(a.from, b.from);
  out.next = done.first_gap(out.from);
  done.erase_below(out.next + 1);
  out.applied = std::move(done);
  return out;
}

}  // namespace trib::stream
