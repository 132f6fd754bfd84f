#include "ps/worker_roster.h"

#include "trib/core/error.h"

namespace trib::ps {

WorkerRoster::WorkerRoster(int present, int capacity)
    : done_(capacity, false), lost_(capacity, false), pending_(capacity, false), vacant_(capacity, false),
      address_(capacity) {
  for (int w = present; w < capacity; ++w) lost_[w] = vacant_[w] = true;  // nobody waits for them
}

WorkerRoster::Seen WorkerRoster::note(int worker, const std::string& address, bool round_open) {
  std::string& current = address_[worker];
  if (current == address) {
    TRIB_CHECK(!lost_[worker], InvalidArgument,
               "worker {} was declared lost; it must reconnect before it is counted again", worker);
    return Seen::known;
  }
  const bool first = current.empty() && !lost_[worker];
  current = address;
  if (first) return Seen::first;
  // A new connection for a known index: the process was relaunched (its old connection
  // may not have been seen to close yet). It is counted again, from the next round.
  lost_[worker] = false;
  done_[worker] = false;
  pending_[worker] = round_open;
  const bool joined = vacant_[worker];
  vacant_[worker] = false;
  return joined ? Seen::joined : Seen::readmitted;
}

int WorkerRoster::worker_at(const std::string& address) const {
  for (std::size_t w = 0; w < address_.size(); ++w)
    if (!address_[w].empty() && address_[w] == address) return static_cast<int>(w);
  return -1;
}

bool WorkerRoster::lose(int worker) {
  const bool was_active = active(worker);
  lost_[worker] = true;
  pending_[worker] = false;
  return was_active;
}

bool WorkerRoster::readmit(int worker, bool round_open) {
  const bool joined = vacant_[worker];
  vacant_[worker] = false;
  lost_[worker] = false;
  done_[worker] = false;
  pending_[worker] = round_open;
  address_[worker].clear();
  return joined;
}

void WorkerRoster::forget_connections() {
  for (std::string& a : address_) a.clear();
}

void WorkerRoster::close_round() { pending_.assign(pending_.size(), false); }

int WorkerRoster::counted() const {
  int n = 0;
  for (std::size_t w = 0; w < done_.size(); ++w) n += counts(static_cast<int>(w));
  return n;
}

}  // namespace trib::ps
