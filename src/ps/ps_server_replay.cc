// A push a server applied already, sent again (docs/fault_tolerance.md, "Parameter-server
// stream jobs: a lost worker resumes at its last applied push"). A worker's step goes to
// every server, one push each; killed between them, some servers applied that step's batch
// and others did not. Relaunched, it resumes at the oldest of the servers' cursors for it, so
// it reads that batch again and pushes it to every server: the ones whose kept cursor covers
// the push's (every record in it is one they applied) acknowledge it without applying it. So
// each server applies each of the worker's batches once. Sync rounds close without their
// lost members' contributions being waited for, but keep those already made: a round that
// closed on one server with the lost worker's batch and on another without it is one of
// these replays, and not a batch dropped from the round of the survivors.
#include <algorithm>

#include "ps/ps_wire.h"
#include "ps/worker_roster.h"
#include "trib/ps/ps_server.h"

namespace trib::ps {

bool PsServer::replayed_locked(const proto::Body& body) {
  const proto::Header& h = body.header;
  if (!o_.cursors || body.text.empty()) return false;
  // Checks the pushed cursor whatever the mode: the server keeps it (keep_cursor_locked).
  const bool covered = o_.cursors.covers(cursors_[h.worker], body.text);
  if (!covered || o_.mode == Mode::averaging) return false;
  stats_.replayed_pushes++;
  if (!replay_said_ && log_) {
    replay_said_ = true;
    log_(fmt::format("ps {}: worker {}'s push of step {} holds only data this server applied already (its push "
                     "before it was lost reached this server, not every other): acknowledged without applying it",
                     o_.index, h.worker, h.step));
  }
  // Sync: the worker's part of this round, with nothing added (its batch was in an earlier
  // one here); a round that closed already counts nothing more.
  if (o_.mode == Mode::sync && h.step - start_step_ >= version_) {
    contributed_[h.worker] = true;
    round_step_ = h.step;
    last_lr_ = body.lr();
    complete_round(h.step, last_lr_);
  }
  return true;
}

bool PsServer::late_replay_locked(const proto::Body& body) {
  const proto::Header& h = body.header;
  if (o_.mode != Mode::sync || !o_.cursors || (h.flags & proto::kFlagReplay) == 0) return false;
  // Re-admitted while a round was open here, the worker counts from the next one, so its
  // first push can come after the round it names closed. Its batch is one this server lacks
  // (replayed_locked found the cursor not covered): dropped, it would never be applied here.
  // Added to the round open now, it is applied once, computed on values one round older.
  stats_.late_replays++;
  if (!late_replay_said_ && log_) {
    late_replay_said_ = true;
    log_(fmt::format("ps {}: worker {}'s replayed push of step {} came after that round closed here without it; "
                     "its batch, which this server lacks, is added to the round open now (step {})",
                     o_.index, h.worker, h.step, start_step_ + version_));
  }
  return true;
}

void PsServer::keep_cursor_locked(int worker, const std::string& cursor) {
  if (cursor.empty()) return;
  // Merged: after a replay in another order (a shuffle buffer), what this server applied is
  // the union of the two lineages' records, and a later push is judged against all of them.
  cursors_[worker] = o_.cursors && o_.mode != Mode::averaging ? o_.cursors.merge(cursors_[worker], cursor) : cursor;
}

bool PsServer::round_complete_locked() const {
  int made = 0;  // by workers the round waits for
  bool any = contributions_ > 0;
  for (int w = 0; w < o_.workers; ++w) {
    if (!contributed_[w]) continue;
    any = true;
    made += roster_->counts(w);
  }
  // Nobody left to wait for (every worker lost or done): what is there closes the round.
  return any && (roster_->counted() == 0 || made >= needed_contributions());
}

}  // namespace trib::ps
