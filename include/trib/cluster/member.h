// One role's membership in a job: it reaches the coordinator (retrying until the join
// timeout, since roles on several hosts start in any order), is given its index and the job,
// finds the other roles through the store, hears every change of membership (a new
// generation) and when the job is over.
//
// The coordinator is not on the data plane, so losing it stops nothing: the member keeps the
// roster it last heard (its servers and peers go on), and reconnects with exponential backoff
// to the same address, where the coordinator (or a restarted one, which rebuilds the
// membership from its journal and from the members that come back) takes it back under the
// index and incarnation it holds. Store requests made meanwhile wait for the reconnection.
// It gives up, and the process exits, only after ReconnectOptions::give_up, or at once when
// the coordinator answers that it is no longer a member (it was evicted).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trib/cluster/roster.h"
#include "trib/cluster/store.h"
#include "trib/net/handler_gate.h"
#include "trib/net/transport.h"

namespace trib::cluster {

struct Membership {
  std::string role;
  int index = 0;
  int ps = 0;
  int workers = 0;      // at the start (cluster.workers)
  int max_workers = 0;  // admitted while the job runs (cluster.max_workers): indices below it
  std::string job_yaml;
  std::string run_dir;
  bool resume = false;
  // The generation this member joined in. Data-plane requests carry it, so a server can
  // refuse those of a replaced (evicted) process of the same index.
  std::int64_t incarnation = 0;
};

struct ReconnectOptions {
  Millis give_up{300000};  // cluster.coordinator_timeout_s
  Millis first_backoff{250};
  Millis max_backoff{5000};  // one line per attempt: at most one every this often
  // Where each attempt's line goes (info level); stderr when unset.
  std::function<void(const std::string&)> info = nullptr;
  // Called once, on the reconnector's thread, when the coordinator answers that this member
  // was evicted (a stopped process thawed after its heartbeat timeout), with one line saying
  // so. It must not return: a worker starts itself again as a new member
  // (app/rejoin_exec.h). Unset: the process exits with code 3 after printing the line.
  std::function<void(const std::string&)> evicted = nullptr;
};

class Member {
 public:
  // Throws Unavailable naming the coordinator's address if it cannot be reached within
  // `timeout`, Unauthenticated on a wrong secret, InvalidArgument if the job refuses the role.
  // `index` >= 0 asks for that index of the role (refused if taken or out of range); -1
  // takes the lowest free one.
  Member(std::shared_ptr<net::Transport> transport, const std::string& coordinator, const std::string& role,
         Millis timeout, int index = -1);
  ~Member();

  const Membership& membership() const { return m_; }
  Store& store() { return *store_; }
  // The same store, for reads that must never hold up training (a per-step poll): while the
  // coordinator is away, or if it goes away during the request, it throws Unavailable at
  // once instead of waiting for the reconnection.
  Store& store_if_connected() { return *store_now_; }
  const std::string& coordinator_address() const { return address_; }

  void set_reconnect(ReconnectOptions options);
  // Reports a clean finish; after it, losing the connection is not a failure. Before it,
  // losing the coordinator starts the reconnection above; giving up ends this process
  // (exit code 3), as does learning that it was evicted.
  void leave();
  // Whether the coordinator is connected now (false while reconnecting).
  bool connected() const;
  // After the data plane refused this process (a thawed member's requests are refused as
  // stale once it was evicted): if the coordinator connection is lost, or is lost within a
  // moment, waits up to `timeout` for the coordinator's verdict. Evicted: the `evicted`
  // handler runs (and never returns). Returns when the member is still one (it reconnected,
  // or was never away) or no verdict came in time.
  void await_verdict(Millis timeout);
  // How many times this member came back to a coordinator after losing it.
  int reconnections() const;
  // Waits until the coordinator says the job is over, or its connection is lost once the
  // job is over for this member (then throws Unavailable naming it; a loss before that is
  // reconnected instead), or the timeout passes (returns false).
  bool wait_for_shutdown(Millis timeout);
  bool shutdown_requested() const { return shutdown_; }

  // The newest generation this member has heard of, and its roster.
  std::int64_t generation() const { return generation_.load(); }
  RosterView roster() const;
  // Waits until the generation exceeds `seen` (returns the roster then) or `timeout` passes
  // (returns the roster as it is).
  RosterView wait_for_change(std::int64_t seen, Millis timeout);
  // Calls `on_change` with every newer roster, on the connection's thread (keep it short),
  // and once at once with the current one.
  void subscribe(std::function<void(const RosterView&)> on_change);

 private:
  // One request over the current connection, without waiting for a reconnection.
  net::Message call_now(net::Message request);
  std::shared_ptr<net::Transport> transport_;
  std::string address_;
  std::unique_ptr<RemoteStore> store_;
  std::unique_ptr<RemoteStore> store_now_;
  Membership m_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> left_{false};
  // Under mu_: the connection now, and which one it is (closes of older ones are ignored).
  std::shared_ptr<net::Connection> conn_;
  std::uint64_t epoch_ = 0;
  bool lost_ = false;  // the connection closed after the job was over for this member
  std::string lost_reason_;
  bool away_ = false;  // the coordinator is gone and the reconnector is at work
  std::chrono::steady_clock::time_point away_since_;
  int reconnections_ = 0;
  bool closing_ = false;
  ReconnectOptions reconnect_;
  std::thread reconnector_;
  std::atomic<std::int64_t> generation_{0};
  RosterView roster_;  // under mu_
  std::vector<std::function<void(const RosterView&)>> subscribers_;  // under mu_
  // The connections' handlers (a roster push, often the one announcing this member's own
  // leave, and a close) reach this object only through the gate, which release_connection()
  // shuts first: the connection's executor can still be serving a push after this member
  // closed and released the connection.
  std::shared_ptr<net::HandlerGate<Member>> gate_ = net::open_handler_gate(this);

  net::Handlers handlers(std::uint64_t epoch);
  void on_close(std::uint64_t epoch, const std::string& reason);
  std::shared_ptr<net::Connection> current_connection() const;
  // Closes the connection and drops it in the order its in-flight handlers need (the
  // destructor's, and a constructor's that throws).
  void release_connection();
  // Sends `request` through the connection now, waiting through a reconnection.
  net::Message call(net::Message request);
  // Connects and joins (rejoin: as the member this already is); the join reply.
  nlohmann::json join_through(std::shared_ptr<net::Connection> conn, const std::string& role, int index, bool rejoin);
  void reconnect_loop();
  [[noreturn]] void stop_process(const std::string& line);
  void on_roster(RosterView view);
};

}  // namespace trib::cluster
