// The coordinator: hosts the rendezvous store, admits roles (assigning each an index and
// handing it the job), watches their connections, and tells everyone to stop when the job
// is over. Parameter servers and workers need only its address and the cluster secret.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trib/cluster/store.h"
#include "trib/net/transport.h"

namespace trib::cluster {

struct CoordinatorOptions {
  std::string listen = "127.0.0.1:0";
  std::string job_yaml;   // the resolved job, handed to every role that joins
  std::string run_dir;    // where the chief writes metrics and checkpoints
  bool resume = false;    // continue the run in run_dir from its newest checkpoint
  int ps = 0;
  int workers = 1;
  // A lost worker other than the chief does not fail the job: its index is freed for a
  // relaunched process (a local cluster of a parameter-server job sets this).
  bool tolerate_lost_workers = false;
};

// How a job ended, from the coordinator's view.
struct Outcome {
  bool ok = false;
  std::string failure;  // "worker 1 at 127.0.0.1:4567: connection lost (peer timed out)"
};

class Coordinator {
 public:
  Coordinator(std::shared_ptr<net::Transport> transport, CoordinatorOptions options);
  ~Coordinator();

  std::string address() const { return listener_->address(); }
  MemoryStore& store() { return store_; }

  // Blocks until every worker has left cleanly (ok) or a member was lost (not ok), or the
  // deadline passes (Timeout).
  Outcome wait(Millis timeout);
  // Records a failure seen from outside (a launcher seeing a child die) and wakes wait().
  void fail(const std::string& why);
  // Tells every connected member to exit cleanly.
  void shutdown_members();

 private:
  net::Message handle(net::Message request, const net::PeerIdentity& from);
  net::Message join(const std::string& body, const net::PeerIdentity& from);
  void on_close(const net::PeerIdentity& peer, std::string_view reason);

  std::shared_ptr<net::Transport> transport_;
  CoordinatorOptions options_;
  MemoryStore store_;
  std::unique_ptr<net::Listener> listener_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Members by the address their connection comes from: the handshake happens before a
  // member knows its index, so the connection's address is what identifies it.
  std::map<std::string, std::pair<std::string, int>> members_;
  std::map<std::string, std::set<int>> taken_;  // role -> indices that have joined
  int workers_left_ = 0;
  bool failed_ = false;
  std::string failure_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace trib::cluster
