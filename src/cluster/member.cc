#include "trib/cluster/member.h"

#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"

namespace trib::cluster {

using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

Member::Member(std::shared_ptr<net::Transport> transport, const std::string& coordinator, const std::string& role,
               Millis timeout, int index)
    : transport_(std::move(transport)), address_(coordinator) {
  auto until = Clock::now() + timeout;
  std::string last_error;
  std::shared_ptr<net::Connection> conn;
  for (;;) {
    try {
      conn = transport_->connect(coordinator, handlers(1));
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
  {
    std::lock_guard lock(mu_);
    conn_ = conn;
    epoch_ = 1;
  }
  conn.reset();
  // From here the connection's handlers may run and touch this object: a refused join (the job
  // is full, a bad reply) must release it as the destructor does, which does not run for a
  // constructor that throws.
  try {
    store_ = std::make_unique<RemoteStore>([this](net::Message m) { return call(std::move(m)); });
    store_now_ = std::make_unique<RemoteStore>([this](net::Message m) { return call_now(std::move(m)); });
    nlohmann::json r = join_through(current_connection(), role, index, false);
    m_.role = role;
    m_.index = r.at("index").get<int>();
    m_.ps = r.at("ps").get<int>();
    m_.workers = r.at("workers").get<int>();
    m_.max_workers = r.value("max_workers", m_.workers);
    m_.job_yaml = r.at("job").get<std::string>();
    m_.run_dir = r.at("run_dir").get<std::string>();
    m_.resume = r.value("resume", false);
    m_.incarnation = r.value("incarnation", std::int64_t{0});
    reconnector_ = std::thread([this] { reconnect_loop(); });
  } catch (...) {
    release_connection();
    throw;
  }
}

std::shared_ptr<net::Connection> Member::current_connection() const {
  std::lock_guard lock(mu_);
  return conn_;
}

net::Handlers Member::handlers(std::uint64_t epoch) {
  net::Handlers h;
  h.on_request = [gate = gate_](net::Message m, const net::PeerIdentity&) {
    auto member = gate->enter();
    if (!member) return net::Message{};  // closing: nobody to tell
    if (m.method == proto::kShutdown) {
      member->shutdown_ = true;
      member->cv_.notify_all();
    } else if (m.method == proto::kMembershipChanged) {
      member->on_roster(roster_from_json(m.body));
    }
    return net::Message{};
  };
  h.on_close = [gate = gate_, epoch](const net::PeerIdentity&, std::string_view reason) {
    if (auto member = gate->enter()) member->on_close(epoch, std::string(reason));
  };
  return h;
}

nlohmann::json Member::join_through(std::shared_ptr<net::Connection> conn, const std::string& role, int index,
                                    bool rejoin) {
  net::Message req;
  req.method = proto::kJoin;
  nlohmann::json join{{"role", role}};
  if (index >= 0) join["index"] = index;
  if (rejoin) {
    join["rejoin"] = true;
    join["incarnation"] = m_.incarnation;
    join["generation"] = generation_.load();
  }
  req.body = join.dump();
  // A rejoin is one attempt of several: it must not hold the reconnector (or a closing
  // member) for a whole request timeout.
  net::RequestOptions options;
  if (rejoin) options.timeout = Millis(10000);
  nlohmann::json r = nlohmann::json::parse(conn->call(std::move(req), std::move(options)).body);
  if (r.contains("roster")) on_roster(roster_from_json(r.at("roster").get<std::string>()));
  return r;
}

void Member::set_reconnect(ReconnectOptions options) {
  std::lock_guard lock(mu_);
  reconnect_ = std::move(options);
}

void Member::on_close(std::uint64_t epoch, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (epoch != epoch_ || closing_ || away_) return;  // an older connection, or already handled
    if (left_ || shutdown_) {
      lost_ = true;  // the job is over for this member: nothing to come back to
      lost_reason_ = reason;
    } else {
      // Either the coordinator is gone, or it evicted this member (its connection was silent
      // past the heartbeat timeout: a stopped process). Only the coordinator can tell which,
      // so ask it again: the reconnector does, and the data plane goes on meanwhile.
      away_ = true;
      away_since_ = Clock::now();
      lost_reason_ = reason;
    }
  }
  cv_.notify_all();
}

void Member::stop_process(const std::string& line) {
  fmt::print(stderr, "trib: error: {}\n", line);
  std::fflush(nullptr);
  std::_Exit(3);
}

void Member::reconnect_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return closing_ || away_; });
    if (closing_) return;
    Millis backoff = reconnect_.first_backoff;
    for (int attempt = 1; away_ && !closing_; ++attempt) {
      const ReconnectOptions o = reconnect_;
      const double away_s = seconds_since(away_since_);
      if (away_s * 1000 >= static_cast<double>(o.give_up.count()))
        stop_process(fmt::format(
            "{} {} found no coordinator at {} for {:.0f} s (cluster.coordinator_timeout_s = {}; it was lost: {}): "
            "stopping",
            m_.role, m_.index, address_, away_s, o.give_up.count() / 1000, lost_reason_));
      const std::string line = fmt::format(
          "{} {}: the coordinator at {} is away ({}) for {:.1f} s; training goes on in generation {}; reconnecting, "
          "attempt {} (gives up after {} s)",
          m_.role, m_.index, address_, lost_reason_, away_s, generation_.load(), attempt, o.give_up.count() / 1000);
      const std::uint64_t epoch = ++epoch_;
      lock.unlock();
      if (o.info) o.info(line);
      else fmt::print(stderr, "trib: {}\n", line);
      std::shared_ptr<net::Connection> conn;
      std::string refused;
      try {
        conn = transport_->connect(address_, handlers(epoch));
        join_through(conn, m_.role, m_.index, true);
      } catch (const InvalidArgument& e) {
        refused = e.what();  // the coordinator answered: this member is no longer one
      } catch (const Error& e) {
        if (conn) conn->close();
        conn.reset();
      }
      if (!refused.empty()) {
        const std::string evicted =
            fmt::format("{} {} (incarnation {}, last generation seen {}) is no longer a member of the job: {}",
                        m_.role, m_.index, m_.incarnation, generation_.load(), refused);
        if (o.evicted) o.evicted(evicted);
        stop_process(evicted + "; stopping");
      }
      lock.lock();
      if (conn && epoch == epoch_ && conn->is_open()) {
        conn_ = conn;
        away_ = false;
        ++reconnections_;
        const std::string back =
            fmt::format("{} {}: reconnected to the coordinator at {} after {:.1f} s; generation {}", m_.role, m_.index,
                        address_, seconds_since(away_since_), generation_.load());
        lock.unlock();
        if (o.info) o.info(back);
        else fmt::print(stderr, "trib: {}\n", back);
        cv_.notify_all();
        lock.lock();
        break;
      }
      if (conn) {
        lock.unlock();
        conn->close();
        lock.lock();
      }
      cv_.wait_for(lock, backoff, [&] { return closing_; });
      backoff = std::min(backoff * 2, o.max_backoff);
    }
  }
}

void Member::await_verdict(Millis timeout) {
  std::unique_lock lock(mu_);
  // The coordinator closed a thawed member's connection when it evicted it, but the refusal
  // that brought the caller here may have been read first.
  cv_.wait_for(lock, std::min(timeout, Millis(500)), [&] { return away_ || closing_ || lost_; });
  if (!away_) return;
  // Evicted: the handler runs on the reconnector's thread and does not return.
  cv_.wait_for(lock, timeout, [&] { return !away_ || closing_ || lost_; });
}

net::Message Member::call(net::Message request) {
  for (;;) {
    std::shared_ptr<net::Connection> conn;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || lost_ || !away_; });
      TRIB_CHECK(!closing_ && !lost_, Unavailable, "the coordinator at {} was lost: {}", address_,
                 lost_ ? lost_reason_ : "this member is closing");
      conn = conn_;
    }
    try {
      return conn->call(request);
    } catch (const Unavailable&) {
      if (conn->is_open()) throw;  // the coordinator's answer, not a lost connection
      // Lost on the way: wait for the reconnection (the close may not have been seen yet)
      // and send it again. So a request may reach the coordinator twice: sets and gets are
      // idempotent, the coordinator takes a leave only once, and no member sends an add.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, Millis(50), [&] { return away_ || closing_ || lost_; });
    }
  }
}

net::Message Member::call_now(net::Message request) {
  std::shared_ptr<net::Connection> conn;
  {
    std::lock_guard lock(mu_);
    TRIB_CHECK(!closing_ && !lost_ && !away_ && conn_ != nullptr, Unavailable, "the coordinator at {} is away",
               address_);
    conn = conn_;
  }
  return conn->call(request);  // a connection lost on the way throws Unavailable
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

bool Member::connected() const {
  std::lock_guard lock(mu_);
  return !away_ && !lost_ && conn_ && conn_->is_open();
}

int Member::reconnections() const {
  std::lock_guard lock(mu_);
  return reconnections_;
}

Member::~Member() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (reconnector_.joinable()) reconnector_.join();
  release_connection();
}

void Member::release_connection() {
  // Waits for a handler inside the gate; none reaches this object after. Never from a handler:
  // the destructor and a throwing constructor call this.
  gate_->shut();
  std::shared_ptr<net::Connection> conn;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    conn = std::move(conn_);
  }
  if (conn) conn->close();
  store_.reset();
  store_now_.reset();
}

void Member::leave() {
  net::Message req;
  req.method = proto::kLeave;
  req.body = nlohmann::json{{"role", m_.role}, {"index", m_.index}}.dump();
  call(std::move(req));  // through a reconnection if the coordinator is away
  left_ = true;
}

bool Member::wait_for_shutdown(Millis timeout) {
  std::unique_lock lock(mu_);
  bool woke = cv_.wait_for(lock, timeout, [&] { return shutdown_.load() || lost_; });
  if (shutdown_) return true;
  TRIB_CHECK(!lost_, Unavailable, "the coordinator at {} was lost: {}", address_, lost_reason_);
  return woke;
}

}  // namespace trib::cluster
