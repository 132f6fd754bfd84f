// Which workers a parameter server waits for. A worker is active until it says it took its
// last step (done) or its connection closes (lost). A lost worker that comes back (the same
// index on a new connection, as a relaunched process does) is re-admitted; during an open
// sync or averaging round it is pending, so that round closes without it and the next
// rounds count it again. Indices from `present` up to `capacity` (cluster.max_workers) start
// vacant: nobody waits for them until a worker joins with one (counted from the next round,
// like a re-admitted one). Not thread-safe: the server calls it under its own lock.
#pragma once

#include <string>
#include <vector>

namespace trib::ps {

namespace state_io {
class Writer;
class Reader;
}  // namespace state_io

class WorkerRoster {
 public:
  // `present` workers at the start, of `capacity` indices.
  explicit WorkerRoster(int present, int capacity);
  explicit WorkerRoster(int workers) : WorkerRoster(workers, workers) {}

  // readmitted: a lost index taken back; joined: a vacant index taken for the first time.
  enum class Seen { known, first, readmitted, joined };
  // A request from `worker` on the connection at `address`. A worker on a new connection
  // is re-admitted (its old connection is gone, or going); `round_open` makes it pending.
  // Throws InvalidArgument for a worker declared lost that still uses its old connection.
  Seen note(int worker, const std::string& address, bool round_open);
  // The worker whose current connection is at `address`, or -1.
  int worker_at(const std::string& address) const;
  // Returns true if the worker was active (it now no longer counts).
  bool lose(int worker);
  void finish(int worker) { done_[worker] = true; }
  // A lost worker taken back by the membership (a newer holder of the index): counted again,
  // from the next round when `round_open`; its next request may come on any connection.
  // Returns true when the index was vacant (a joiner), false when it was lost (a relaunch).
  bool readmit(int worker, bool round_open);
  // Every worker's connection is forgotten (a backup taking over: the primary's are gone);
  // each one's next request, on any connection, is its own again, not a relaunch.
  void forget_connections();
  // A round closed: pending workers count from the next one.
  void close_round();

  bool done(int worker) const { return done_[worker]; }
  bool lost(int worker) const { return lost_[worker]; }
  // Never held yet (an index beyond the job's starting workers).
  bool vacant(int worker) const { return vacant_[worker]; }
  // Lost and not back; vacant indices are not away.
  bool away(int worker) const { return lost_[worker] && !done_[worker] && !vacant_[worker]; }
  // Still training: neither done nor lost (pending ones included).
  bool active(int worker) const { return !done_[worker] && !lost_[worker]; }
  // Whether a round waits for `worker`: active and not pending.
  bool counts(int worker) const { return active(worker) && !pending_[worker]; }
  // How many workers a round waits for.
  int counted() const;
  int size() const { return static_cast<int>(done_.size()); }
  // The whole roster, copied to a new backup (src/ps/ps_server_state.cc); load throws
  // InvalidArgument for a roster of another size.
  void save(state_io::Writer& out) const;
  void load(state_io::Reader& in);

 private:
  std::vector<bool> done_, lost_, pending_, vacant_;
  std::vector<std::string> address_;  // per worker: its current connection ("" before its first request)
};

}  // namespace trib::ps
