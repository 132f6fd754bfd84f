#include "trib/cluster/member.h"

#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"

namespace trib::cluster {

using Clock = std::chrono::steady_clock;

Member::Member(std::shared_ptr<net::Transport> transport, const std::string& coordinator, const std::string& role,
               Millis timeout, int index)
    : transport_(std::move(transport)), address_(coordinator) {
  net::Handlers h;
  h.on_request = [this](net::Message m, const net::PeerIdentity&) {
    if (m.method == proto::kShutdown) {
      shutdown_ = true;
      cv_.notify_all();
    } else if (m.method == proto::kMembershipChanged) {
      on_roster(roster_from_json(m.body));
    }
    return net::Message{};
  };
  h.on_close = [this](const net::PeerIdentity& peer, std::string_view reason) {
    std::lock_guard lock(mu_);
    lost_ = true;
    lost_reason_ = fmt::format("the coordinator at {} was lost: {}", peer.address, reason);
    cv_.notify_all();
    // Either the coordinator is gone, or it evicted this member (its connection was silent
    // past the heartbeat timeout: a stopped process). Without its coordinator the job cannot
    // finish; an evicted member's index may already belong to a new member, and nothing
    // this process sends is applied any more. Either way it stops at once rather than run on
    // alone; a launcher may start a new process to take the index.
    if (!left_ && !shutdown_) {
      fmt::print(stderr,
                 "trib: error: {}; {} {} (incarnation {}, last generation seen {}) is no longer a member of the job "
                 "(evicted, or the coordinator is gone): stopping\n",
                 lost_reason_, m_.role, m_.index, m_.incarnation, generation_.load());
      std::fflush(nullptr);
      std::_Exit(3);
    }
  };
  auto until = Clock::now() + timeout;
  std::string last_error;
  for (;;) {
    try {
      conn_ = transport_->connect(coordinator, h);
      break;
    } catch (const Unauthenticated&) {
      throw;
    } catch (const Error& e) {
      last_error = e.what();
    }
    TRIB_CHECK(Clock::now() < until, Unavailable, "cannot reach the coordinator at {} within {} s: {}", coordinator,
               timeout.count() / 1000, last_error);
    std::this_thread::sleep_for(Millis(200));
  }
  store_ = std::make_unique<RemoteStore>(conn_);
  net::Message req;
  req.method = proto::kJoin;
  nlohmann::json join{{"role", role}};
  if (index >= 0) join["index"] = index;
  req.body = join.dump();
  nlohmann::json r = nlohmann::json::parse(conn_->call(std::move(req)).body);
  m_.role = role;
  m_.index = r.at("index").get<int>();
  m_.ps = r.at("ps").get<int>();
  m_.workers = r.at("workers").get<int>();
  m_.max_workers = r.value("max_workers", m_.workers);
  m_.job_yaml = r.at("job").get<std::string>();
  m_.run_dir = r.at("run_dir").get<std::string>();
  m_.resume = r.value("resume", false);
  m_.incarnation = r.value("incarnation", std::int64_t{0});
  if (r.contains("roster")) on_roster(roster_from_json(r.at("roster").get<std::string>()));
}

void Member::on_roster(RosterView view) {
  std::vector<std::function<void(const RosterView&)>> subscribers;
  {
    std::lock_guard lock(mu_);
    // Pushes come in order on one connection, but the join reply's roster may be older.
    if (view.generation <= roster_.generation) return;
    roster_ = view;
    generation_ = view.generation;
    subscribers = subscribers_;
  }
  cv_.notify_all();
  for (const auto& s : subscribers) s(view);
}

RosterView Member::roster() const {
  std::lock_guard lock(mu_);
  return roster_;
}

RosterView Member::wait_for_change(std::int64_t seen, Millis timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return roster_.generation > seen; });
  return roster_;
}

void Member::subscribe(std::function<void(const RosterView&)> on_change) {
  RosterView now;
  {
    std::lock_guard lock(mu_);
    subscribers_.push_back(on_change);
    now = roster_;
  }
  on_change(now);
}

Member::~Member() {
  if (conn_) conn_->close();
  // The connection's handlers (a roster push, often the one announcing this member's own
  // leave) run on its executor and touch this object: drop the store's and this reference
  // now, so that the connection's destructor waits for a handler in flight while the rest of
  // this object is still alive (members are destroyed after this body, conn_ last of all).
  store_.reset();
  conn_.reset();
}

void Member::leave() {
  left_ = true;
  net::Message req;
  req.method = proto::kLeave;
  req.body = nlohmann::json{{"role", m_.role}, {"index", m_.index}}.dump();
  conn_->call(std::move(req));
}

bool Member::wait_for_shutdown(Millis timeout) {
  std::unique_lock lock(mu_);
  bool woke = cv_.wait_for(lock, timeout, [&] { return shutdown_.load() || lost_; });
  if (shutdown_) return true;
  TRIB_CHECK(!lost_, Unavailable, "{}", lost_reason_);
  return woke;
}

}  // namespace trib::cluster
