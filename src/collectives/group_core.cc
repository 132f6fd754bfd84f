#include "collectives/group_core.h"

#include <fmt/format.h>

#include <thread>

#include "collectives/tensor_view.h"

namespace trib::collectives::detail {
namespace {

std::string spec_text(DType dtype, const Shape& shape) {
  return fmt::format("{}{}", dtype_name(dtype), shape.to_string());
}

bool same_shape(const OpSpec& spec, const Request& r) {
  if (spec.dtype != r.dtype) return false;
  if (!spec.rows_may_differ) return spec.shape == r.shape;
  if (spec.shape.rank() != r.shape.rank()) return false;
  for (int i = 1; i < spec.shape.rank(); ++i) {
    if (spec.shape[i] != r.shape[i]) return false;
  }
  return true;
}

}  // namespace

void throw_failure(const Failure& f, std::string_view op) {
  std::string message = op.empty() ? f.reason : fmt::format("{}: {}", op, f.reason);
  switch (f.kind) {
    case FailureKind::unavailable: throw Unavailable(message);
    case FailureKind::invalid_argument: throw InvalidArgument(message);
    case FailureKind::timeout: throw Timeout(message);
    case FailureKind::internal: break;
  }
  throw Error(message);
}

FailureKind failure_kind_of(const std::exception& e) {
  if (dynamic_cast<const Unavailable*>(&e)) return FailureKind::unavailable;
  if (dynamic_cast<const InvalidArgument*>(&e)) return FailureKind::invalid_argument;
  if (dynamic_cast<const Timeout*>(&e)) return FailureKind::timeout;
  return FailureKind::internal;
}

// ---- formation ----

void GroupCore::configure(const GroupOptions& o) {
  {
    std::lock_guard lock(mu_);
    rank_ = o.rank;
    size_ = o.size;
    generation_ = o.generation;
    op_timeout_ = o.op_timeout;
    addresses_ = o.addresses;
    peers_.assign(static_cast<std::size_t>(o.size), nullptr);
    identities_.assign(static_cast<std::size_t>(o.size), net::PeerIdentity{});
    left_.assign(static_cast<std::size_t>(o.size), false);
    identities_[static_cast<std::size_t>(o.rank)] = self_;
    configured_ = true;
  }
  cv_.notify_all();
}

void GroupCore::set_listener(net::Listener* listener, const net::PeerIdentity& self) {
  std::lock_guard lock(mu_);
  listener_ = listener;
  self_ = self;
}

net::Handlers GroupCore::accepted_handlers() {
  std::weak_ptr<GroupCore> weak = weak_from_this();
  return net::Handlers{
      [weak](net::Message m, const net::PeerIdentity& from) {
        auto core = weak.lock();
        TRIB_CHECK(core != nullptr, Unavailable, "this group has been closed");
        return core->handle(std::move(m), from, -1);
      },
      [weak](const net::PeerIdentity& peer, std::string_view reason) {
        if (auto core = weak.lock()) core->on_close(peer, reason, -1);
      }};
}

net::Handlers GroupCore::connected_handlers(int peer) {
  std::weak_ptr<GroupCore> weak = weak_from_this();
  return net::Handlers{
      [weak, peer](net::Message m, const net::PeerIdentity& from) {
        auto core = weak.lock();
        TRIB_CHECK(core != nullptr, Unavailable, "this group has been closed");
        return core->handle(std::move(m), from, peer);
      },
      [weak, peer](const net::PeerIdentity& who, std::string_view reason) {
        if (auto core = weak.lock()) core->on_close(who, reason, peer);
      }};
}

void GroupCore::add_peer(int rank, std::shared_ptr<net::Connection> connection) {
  {
    std::lock_guard lock(mu_);
    identities_[static_cast<std::size_t>(rank)] = connection->peer();
    peers_[static_cast<std::size_t>(rank)] = std::move(connection);
  }
  cv_.notify_all();
}

std::vector<int> GroupCore::wait_for_higher_ranks(Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  auto missing = [&] {
    std::vector<int> out;
    for (int r = rank_ + 1; r < size_; ++r) {
      if (!peers_[static_cast<std::size_t>(r)]) out.push_back(r);
    }
    return out;
  };
  cv_.wait_until(lock, deadline, [&] { return missing().empty() || failure_.has_value(); });
  if (failure_) throw_failure(*failure_, "forming the group");
  return missing();
}

void GroupCore::leave(std::chrono::milliseconds timeout) {
  if (failure()) return;  // the peers are failing anyway; do not wait on them
  Request bye;
  bye.family = Family::leave;
  bye.from = rank_;
  bye.generation = generation_;
  std::vector<std::future<net::Message>> acks;
  for (int p = 0; p < size_; ++p) {
    auto conn = p == rank_ ? nullptr : peer(p);
    if (!conn || !conn->is_open()) continue;
    net::RequestOptions ro;
    ro.timeout = timeout;
    try {
      acks.push_back(conn->request(net::Message{kCollectiveMethod, encode(bye), Tensor()}, ro));
    } catch (const std::exception&) {
      // Already gone.
    }
  }
  for (auto& a : acks) {
    try {
      a.get();
    } catch (const std::exception&) {
      // A peer that cannot take note will see a close; nothing more to do about it here.
    }
  }
}

void GroupCore::shut_down() {
  std::vector<std::shared_ptr<net::Connection>> peers;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    if (!failure_) {
      // What peers still waiting on this rank are told.
      failure_ = Failure{FailureKind::unavailable, fmt::format("{} is unreachable: its group was closed",
                                                               describe_locked(rank_))};
    }
    peers.swap(peers_);
    peers_.assign(peers.size(), nullptr);
  }
  cv_.notify_all();
  for (auto& c : peers) {
    if (c) c->close();
  }
}

std::shared_ptr<net::Connection> GroupCore::peer(int rank) const {
  std::lock_guard lock(mu_);
  return peers_[static_cast<std::size_t>(rank)];
}

std::string GroupCore::describe(int rank) const {
  std::lock_guard lock(mu_);
  return describe_locked(rank);
}

std::string GroupCore::describe_locked(int rank) const {
  const net::PeerIdentity& id = identities_[static_cast<std::size_t>(rank)];
  const std::string& at = addresses_[static_cast<std::size_t>(rank)];
  if (id.role.empty()) return fmt::format("rank {} (at {})", rank, at);
  return fmt::format("rank {} ({} {} at {})", rank, id.role, id.index, at);
}

bool GroupCore::has_left(int rank) const {
  std::lock_guard lock(mu_);
  return left_[static_cast<std::size_t>(rank)];
}

int GroupCore::rank_of_address(const std::string& address) const {
  auto it = accepted_.find(address);
  return it == accepted_.end() ? -1 : it->second;
}

// ---- requests from peers ----

net::Message GroupCore::handle(net::Message message, const net::PeerIdentity& from, int known_rank) {
  TRIB_CHECK(message.method == kCollectiveMethod, Error,
             "collectives got a message with method {:#x}", message.method);
  Request r = decode(message.body);
  if (r.family == Family::hello) return handle_hello(r, from);
  int rank = known_rank;
  {
    std::lock_guard lock(mu_);
    TRIB_CHECK(configured_, Unavailable, "this rank has not formed its group yet");
    if (rank < 0) rank = rank_of_address(from.address);
    TRIB_CHECK(rank >= 0 && rank == r.from, Error,
               "{} claims to be rank {} but said hello as rank {}", from.to_string(), r.from, rank);
    TRIB_CHECK(r.generation == generation_, InvalidArgument,
               "a request of group generation {} from rank {} was refused by generation {}",
               r.generation, r.from, generation_);
  }
  if (r.family == Family::leave) {
    std::lock_guard lock(mu_);
    left_[static_cast<std::size_t>(rank)] = true;
    return {};
  }
  if (r.family == Family::abort) {
    std::string reason = r.text;
    if (reason.find("(reported by rank") == std::string::npos) {
      reason += fmt::format(" (reported by rank {})", r.from);
    }
    fail(Failure{static_cast<FailureKind>(r.param), reason});
    return {};
  }
  return route(r);
}

net::Message GroupCore::handle_hello(const Request& hello, const net::PeerIdentity& from) {
  std::unique_lock lock(mu_);
  // A peer may finish forming before we have started to: wait for our options.
  auto deadline = Clock::now() + std::chrono::seconds(30);
  cv_.wait_until(lock, deadline, [&] { return configured_ || shutting_down_; });
  TRIB_CHECK(configured_ && !shutting_down_, Unavailable, "this rank is not forming a group");
  TRIB_CHECK(hello.generation == generation_, InvalidArgument,
             "rank {} is of group generation {} but rank {} of generation {}", hello.from,
             hello.generation, rank_, generation_);
  TRIB_CHECK(static_cast<int>(hello.param) == size_, InvalidArgument,
             "rank {} was given a group of {} ranks but rank {} a group of {}", hello.from, hello.param,
             rank_, size_);
  TRIB_CHECK(hello.from > rank_ && hello.from < size_, InvalidArgument,
             "a hello from rank {} reached rank {} (only higher ranks connect, and the group has {})",
             hello.from, rank_, size_);
  TRIB_CHECK(!peers_[static_cast<std::size_t>(hello.from)], InvalidArgument,
             "rank {} said hello twice (two processes with the same rank?)", hello.from);
  TRIB_CHECK(listener_ != nullptr, Unavailable, "this rank is not listening");
  // The accepted connection the hello came on, found by the peer's address; it is listed
  // by the time its first request is served, but allow for a slow listener thread.
  std::shared_ptr<net::Connection> conn;
  for (int attempt = 0; attempt < 1000 && !conn; ++attempt) {
    for (auto& c : listener_->connections()) {
      if (c->peer().address == from.address) conn = c;
    }
    if (!conn) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  TRIB_CHECK(conn != nullptr, Unavailable, "the connection of rank {} vanished during its hello", hello.from);
  accepted_[from.address] = hello.from;
  identities_[static_cast<std::size_t>(hello.from)] = conn->peer();
  peers_[static_cast<std::size_t>(hello.from)] = std::move(conn);
  lock.unlock();
  cv_.notify_all();
  return {};
}

net::Message GroupCore::route(const Request& r) {
  std::shared_ptr<OpState> op;
  {
    std::unique_lock lock(mu_);
    wait(lock, Clock::now() + op_timeout_,
         [&] { return (current_ && current_->seq >= r.op) || last_seq_ >= r.op; },
         [&] { return fmt::format("operation {} ({}) asked for by rank {} to start on rank {}", r.op,
                                  family_name(r.family), r.from, rank_); });
    if (failure_) throw_failure(*failure_, "");
    TRIB_CHECK(current_ && current_->seq == r.op, Error,
               "rank {} asked for a piece of operation {} ({}), which rank {} has already finished",
               r.from, r.op, family_name(r.family), rank_);
    op = current_;
  }
  check_compatible(*op, r);
  return op->server->serve(r, op);
}

void GroupCore::refuse(const OpState&, Failure failure) {
  fail(failure);
  throw_failure(failure, "");  // the asker names the operation
}

void GroupCore::check_compatible(const OpState& op, const Request& r) {
  const OpSpec& s = op.spec;
  if (r.family != s.family) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("rank {} called {} but rank {} called {} (operation {} of the group)", r.from,
                            family_name(r.family), rank_, family_name(s.family), op.seq)});
  }
  if (s.has_tensor && !same_shape(s, r)) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("tensors differ: rank {} has {} but rank {} has {}{}", r.from,
                            spec_text(r.dtype, r.shape), rank_, spec_text(s.dtype, s.shape),
                            s.rows_may_differ ? " (only the first dimension may differ)" : "")});
  }
  if (r.param != s.param) {
    auto text = [&](std::uint32_t p) { return s.describe_param ? s.describe_param(p) : std::to_string(p); };
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("options differ: rank {} asks for {} but rank {} for {}", r.from, text(r.param),
                            rank_, text(s.param))});
  }
  // Only after the checks above: the same options and sizes choose the same algorithm.
  if (r.algorithm != s.algorithm) {
    refuse(op, {FailureKind::invalid_argument,
                fmt::format("rank {} runs the {} algorithm but rank {} the {} one", r.from,
                            algorithm_name(r.algorithm), rank_, algorithm_name(s.algorithm))});
  }
}

void GroupCore::on_close(const net::PeerIdentity& peer, std::string_view reason, int known_rank) {
  int rank = known_rank;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return;
    if (rank < 0) rank = rank_of_address(peer.address);
    if (rank < 0) return;  // closed before its hello: formation reports it
    if (left_[static_cast<std::size_t>(rank)]) return;  // done with the group: a request to it will say so
  }
  fail(Failure{FailureKind::unavailable, fmt::format("{} is unreachable: {}", describe(rank), reason)});
}

// ---- operations ----

std::shared_ptr<OpState> GroupCore::begin(OpSpec spec, std::shared_ptr<OpServer> server,
                                          Clock::time_point deadline) {
  auto op = std::make_shared<OpState>();
  {
    std::lock_guard lock(mu_);
    if (failure_) throw_failure(*failure_, family_name(spec.family));
    TRIB_CHECK(!current_, InvalidArgument,
               "{}: another collective ({}) is running on this group; calls must take turns",
               family_name(spec.family), family_name(current_->spec.family));
    op->seq = ++last_seq_;
    op->spec = std::move(spec);
    op->server = std::move(server);
    op->deadline = deadline;
    current_ = op;
  }
  cv_.notify_all();
  return op;
}

void GroupCore::end(const std::shared_ptr<OpState>& op) {
  {
    std::lock_guard lock(mu_);
    if (current_ == op) current_.reset();
  }
  cv_.notify_all();
}

void GroupCore::fail(Failure failure) {
  {
    std::lock_guard lock(mu_);
    // The first failure wins, except that a disagreement between ranks (a mismatch) is
    // always the root cause: peers leaving after it are its consequence.
    const bool root_cause = failure.kind == FailureKind::invalid_argument &&
                            failure_ && failure_->kind != FailureKind::invalid_argument;
    if (failure_ && !root_cause) return;
    failure_ = std::move(failure);
  }
  cv_.notify_all();
}

std::optional<Failure> GroupCore::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

bool GroupCore::take_abort_duty() {
  std::lock_guard lock(mu_);
  if (abort_sent_ || shutting_down_) return false;
  abort_sent_ = true;
  return true;
}

void GroupCore::wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                     const std::function<bool()>& ready, const std::function<std::string()>& what) {
  for (;;) {
    if (ready()) return;  // done, even if the group failed meanwhile (a peer left after)
    if (failure_) {
      Failure f = *failure_;
      lock.unlock();
      throw_failure(f, "");
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !failure_) {
      Failure f{FailureKind::timeout, fmt::format("timed out waiting for {}", what())};
      failure_ = f;
      lock.unlock();
      cv_.notify_all();
      throw_failure(f, "");
    }
  }
}

void GroupCore::advance(OpState& op, std::uint64_t items) {
  {
    std::lock_guard lock(mu_);
    op.progress += items;
  }
  cv_.notify_all();
}

Tensor GroupCore::serve_view(const std::shared_ptr<OpState>& op, const Tensor& base, std::int64_t offset,
                             std::int64_t count) {
  {
    std::lock_guard lock(mu_);
    ++op->served;
    ++op->live_views;
  }
  std::weak_ptr<GroupCore> weak = weak_from_this();
  return flat_view(base, offset, count, [weak, op] {
    if (auto core = weak.lock()) {
      {
        std::lock_guard lock(core->mu_);
        --op->live_views;
      }
      core->cv_.notify_all();
    }
  });
}

void GroupCore::count_served(OpState& op) {
  {
    std::lock_guard lock(mu_);
    ++op.served;
  }
  cv_.notify_all();
}

}  // namespace trib::collectives::detail
