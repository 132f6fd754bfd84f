// Where KafkaSource's partitions start and what happens to their offsets: rebalances, seek()
// and commit(). The rules, and why:
//
//   assign  A partition starts at the restored progress (from seek(): its low watermark, with
//           the applied offsets above it skipped), unless the group holds a commit tagged
//           with this run: then another member (or this one) of the same job incarnation has
//           consumed it since, and its hand-over commit is newer (the claim then starts
//           there: AppliedOffsets' `from`). Without a restored offset: the group's committed
//           offset, else earliest/latest.
//   revoke  The revoked partitions' read positions are committed (the hand-over), so the
//           member that gets them continues exactly where this one stopped; records already
//           handed out are this worker's to apply (its claim stays until they are), and the
//           buffered ones are dropped, so nothing is handed out twice. When the source is
//           closing (and its user reports applied batches), nobody will apply what it handed
//           out: it commits the applied low watermark instead, so a commit never passes a
//           record that was not applied.
//   seek    Owned partitions move at once; a partition the position lacks was assigned after
//           the position was taken, so it goes back to where its assignment started.
//
// Job-assigned sources (options.share) have no rebalances and no hand-over commits: the job
// moves partitions only when its members rewind together to one position (reassign), so a
// gained partition starts at that restored position, never at a commit.
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
  {
    std::lock_guard lock(mu);
    restored_now = restored;
  }
  PartitionProgressMap starts;
  for (std::int32_t p : partitions) {
    const detail::CommittedOffset& c = committed[p];
    const bool ours = !options.share && c.offset >= 0 && c.metadata == commit_tag;
    if (auto it = restored_now.find(p); it != restored_now.end() && !ours) {
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
    applied.start(p, start);
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
  // A seek waits for each partition's fetcher to take it. A partition the group revokes
  // meanwhile (a rebalance while the job's other consumers join, as after a whole-job
  // restart) never answers, and the call times out for all of them: the partitions still
  // owned are sought again. One revoked meanwhile starts at `restored` when it is assigned
  // again (on_assign), so it needs no seek.
  for (int attempt = 1;; ++attempt) {
    try {
      s.consumer->seek(moves);
      return;
    } catch (const Unavailable&) {
      if (attempt == 3) throw;
      std::lock_guard lock(s.mu);
      std::erase_if(moves, [&s](const auto& m) { return !s.merge.owns(m.first); });
      if (moves.empty()) return;
    }
  }
}

void KafkaSource::rewind(const data::DataPosition& position, const std::string& run_id) {
  Impl& s = *impl_;
  {
    std::lock_guard commit_lock(s.commit_mu);
    s.commit_tag = "trib run=" + run_id;
  }
  s.interrupted.store(false);
  {
    // A partition revoked before the rewind (the consumer group moved it: a lost member's
    // session timed out) keeps its claim until what was handed out of it is applied, which
    // now never happens; and what was applied of it went with the rolled-back model. Kept,
    // the claim would reach the next checkpoint's merge as done records nobody trained since.
    // Its buffered and held records left with the revoke.
    std::lock_guard lock(s.mu);
    s.applied.drop_released();
  }
  seek(position);
}

void KafkaSource::reassign(PartitionShare share) {
  Impl& s = *impl_;
  TRIB_CHECK(s.options.share.has_value(), InvalidArgument,
             "KafkaSource::reassign: the consumer group assigns the partitions of topic '{}'", s.options.topic);
  const int count = s.consumer->partition_count();
  check_share(share, count, s.options.topic);
  std::vector<std::int32_t> gone, gained;
  {
    std::lock_guard lock(s.mu);
    for (std::int32_t p : s.merge.partitions())
      if (!share.owns(p)) gone.push_back(p);
    for (std::int32_t p : partitions_of(share, count))
      if (!s.merge.owns(p)) gained.push_back(p);
  }
  s.consumer->unassign(gone);
  {
    // Nothing handed out of a partition given up will be applied here: the pipeline was torn
    // down with the rewind. Its next owner claims it from the rewound position.
    std::lock_guard lock(s.mu);
    s.applied.drop_released();
  }
  s.consumer->assign(gained);
  s.options.share = share;
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
