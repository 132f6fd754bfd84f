// Pushes the coordinator's roster to every connected member, from a thread of its own.
//
// Why not from the caller: the coordinator changes its membership under its lock, and pushing
// there made every request wait for every member's write (a member that reads slowly holds
// them all up to its peer timeout), and could deadlock: the push holds a reference to each
// open connection, and when a connection ends meanwhile (the listener reaps it), the push's
// reference is the last one, so the connection is destroyed inside the lock and joins its
// receive thread, which is waiting for that very lock to report the close. Seen with 64
// members on a starved coordinator host (docs/scaling.md, "A 64-member emulated cluster").
//
// Each roster is the whole membership, so only the newest one pending is pushed: members
// see generations in order, and skip those that a burst of changes superseded.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/latest_writer.h"
#include "trib/net/transport.h"

namespace trib::cluster {

class RosterPublisher {
 public:
  using Connections = std::function<std::vector<std::shared_ptr<net::Connection>>()>;

  // `connections` gives the members' open connections now; `method` tags the push.
  RosterPublisher(Connections connections, std::uint32_t method);
  ~RosterPublisher();  // stop()
  RosterPublisher(const RosterPublisher&) = delete;
  RosterPublisher& operator=(const RosterPublisher&) = delete;

  // Queues `roster` (replacing one not pushed yet). Cheap and never blocks on the network:
  // callable under the coordinator's lock.
  void publish(std::string roster);
  // Waits until everything published before this call has been pushed (or stop()).
  void flush();
  // Stops the thread; a roster not pushed yet is dropped. Idempotent.
  void stop();

 private:
  void push(const std::string& roster);

  Connections connections_;
  std::uint32_t method_;
  LatestWriter writer_;  // last: its thread calls push()
};

}  // namespace trib::cluster
