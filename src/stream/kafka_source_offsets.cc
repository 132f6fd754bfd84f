// Where KafkaSource's partitions start and what happens to their offsets: rebalances, seek()
// and commit(). The rules, and why:
//
//   assign  A partition starts at the restored progress (from seek(): its low watermark, with
//           the applied offsets above it skipped), unless the group holds a commit tagged
//           with this run: then another member (or this one) of the same job incarnation has
//           consumed it since, and its hand-over commit is newer (the claim then starts
//           there: AppliedOffsets' `from`). Without a restored offset: the group's committed
//           offset, else earliest/latest.
//   back    A partition this source gave away under the current tag comes back to it with no
//           hand-over commit after its own (its commit was refused, or its assignment was lost
//           and nothing was committed; nobody else has handed it over since): it continues
//           where this source stopped reading, its claim kept, rather than at the restored
//           progress, which would read again what it trained since.
//   revoke  The revoked partitions' read positions are committed (the hand-over), so the
//           member that gets them continues exactly where this one stopped; records already
//           handed out are this worker's to apply (its claim stays until they are), and the
//           buffered ones are dropped, so nothing is handed out twice. When the source is
//           closing (and its user reports applied batches), nobody will apply what it handed
//           out: it commits the applied low watermark instead, so a commit never passes a
//           record that was not applied.
//   seek    Owned partitions move at once; a partition the position lacks was assigned after
//           the position was taken, so it goes back to where its assignment started.
#include <chrono>

#include "stream/kafka_source_impl.h"
#include "trib/core/error.h"

namespace trib::stream {

PartitionOffsets KafkaSource::Impl::on_assign(const std::vector<std::int32_t>& partitions) {
  if (partitions.empty()) {
    std::lock_guard lock(mu);
    joined = true;
    return {};
  }
  std::map<std::int32_t, detail::CommittedOffset> committed = consumer->committed(partitions);
  PartitionProgressMap restored_now;
  std::map<std::int32_t, GaveAway> gave_away_now;
  {
    std::lock_guard lock(mu);
    restored_now = restored;
    gave_away_now = gave_away;
  }
  PartitionProgressMap starts;
  std::set<std::int32_t> back;  // given back to this source (see "back" above)
  for (std::int32_t p : partitions) {
    const detail::CommittedOffset& c = committed[p];
    const bool ours = c.offset >= 0 && c.metadata == commit_tag;
    if (auto g = gave_away_now.find(p);
        g != gave_away_now.end() && g->second.tag == commit_tag && (!ours || c.offset == g->second.at)) {
      starts[p] = PartitionProgress{.next = g->second.at, .applied = {}, .from = g->second.at};
      back.insert(p);
    } else if (auto it = restored_now.find(p); it != restored_now.end() && !ours) {
      starts[p] = it->second;
      starts[p].from = 0;
    } else if (c.offset >= 0) {
      starts[p] = PartitionProgress{.next = c.offset, .applied = {}, .from = ours ? c.offset : 0};
    } else {
      // A numeric offset rather than "beginning", so that position() is exact before the
      // partition's first record arrives.
      auto [low, high] = consumer->query_watermarks(p);
      starts[p].next = options.start_at == KafkaSourceOptions::StartAt::earliest ? low : high;
    }
  }
  const std::int64_t now = wall_clock_ms();
  PartitionOffsets offsets;
  std::lock_guard lock(mu);
  for (const auto& [p, start] : starts) {
    merge.add(p, start.next, now);
    assigned_at[p] = start.next;
    gave_away.erase(p);
    if (!back.contains(p) || !applied.reclaim(p)) applied.start(p, start);
    drop_held(p);
    offsets[p] = start.next;
  }
  ++stats.assignments;
  joined = true;
  return offsets;
}

void KafkaSource::Impl::on_revoke(const std::vector<std::int32_t>& partitions, bool lost) {
  std::lock_guard commit_lock(commit_mu);
  PartitionOffsets handover;
  {
    std::lock_guard lock(mu);
    const PartitionOffsets positions = merge.positions();
    const PartitionProgressMap progress = closing ? applied.progress(positions) : PartitionProgressMap{};
    for (std::int32_t p : partitions) {
      if (!merge.owns(p)) continue;
      handover[p] = closing ? progress.at(p).next : positions.at(p);
      gave_away[p] = {commit_tag, handover[p]};
      merge.remove(p);
      assigned_at.erase(p);
      paused.erase(p);
      applied.release(p, positions.at(p));
      drop_held(p);
    }
    ++stats.revocations;
  }
  // Lost partitions already belong to someone else; a commit would be refused, or worse,
  // land after theirs.
  if (lost || handover.empty()) return;
  std::string error = consumer->commit(handover, commit_tag);
  if (error.empty()) return;
  std::lock_guard lock(mu);
  ++stats.handoff_failures;
  stats.last_error = "hand-over commit: " + error;
}

void KafkaSource::seek(const data::DataPosition& position) {
  Impl& s = *impl_;
  const PartitionProgressMap progress = progress_in(position, s.options.topic);
  PartitionOffsets moves;
  {
    std::lock_guard lock(s.mu);
    s.restored = progress;
    const std::int64_t now = wall_clock_ms();
    for (std::int32_t p : s.merge.partitions()) {
      auto it = progress.find(p);
      PartitionProgress target = it != progress.end() ? it->second : PartitionProgress{.next = s.assigned_at.at(p), .applied = {}, .from = 0};
      target.from = 0;
      s.merge.reset(p, target.next, now);
      moves[p] = target.next;
      s.applied.start(p, std::move(target));
      s.drop_held(p);
      if (s.paused.erase(p) > 0) s.consumer->pause(p, false);
    }
  }
  s.consumer->seek(moves);
}

void KafkaSource::rewind(const data::DataPosition& position, const std::string& run_id) {
  Impl& s = *impl_;
  {
    std::lock_guard commit_lock(s.commit_mu);
    s.commit_tag = "trib run=" + run_id;
  }
  s.interrupted.store(false);
  {
    // A partition revoked before the rollback keeps this source's claim only until what it
    // handed out is applied, which now never happens; left, the claim would hold records read
    // before the rollback as applied at the next checkpoint.
    std::lock_guard lock(s.mu);
    s.applied.forget_released();
    s.gave_away.clear();
  }
  seek(position);
}

std::string KafkaSource::commit(const data::DataPosition& position) {
  Impl& s = *impl_;
  const PartitionOffsets offsets = offsets_of(position, s.options.topic);
  std::lock_guard commit_lock(s.commit_mu);
  PartitionOffsets owned;
  {
    std::lock_guard lock(s.mu);
    for (const auto& [p, offset] : offsets)
      if (s.merge.owns(p)) owned[p] = offset;
  }
  return s.consumer->commit(owned, s.commit_tag);
}

}  // namespace trib::stream
