// Group formation and membership: configuration, the handlers given to the transport,
// hellos, leaving and shutting down. Requests are routed in group_requests.cc, operations
// tracked in group_ops.cc.
#include "collectives/group_core.h"

#include <fmt/format.h>

#include <thread>

namespace trib::collectives::detail {

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

namespace {

// A collective request carries no tensor: anything bigger than the largest legitimate one is
// refused from its frame header, before a byte of it is read or allocated.
net::Handlers with_request_limit(net::Handlers h) {
  h.request_limit = [](std::uint32_t) { return max_request_bytes(); };
  return h;
}

}  // namespace

void GroupCore::set_listener(net::Listener* listener, const net::PeerIdentity& self) {
  std::lock_guard lock(mu_);
  listener_ = listener;
  self_ = self;
}

net::Handlers GroupCore::accepted_handlers() {
  std::weak_ptr<GroupCore> weak = weak_from_this();
  return with_request_limit(net::Handlers{
      [weak](net::Message m, const net::PeerIdentity& from) {
        auto core = weak.lock();
        TRIB_CHECK(core != nullptr, Unavailable, "this group has been closed");
        return core->handle(std::move(m), from, -1);
      },
      [weak](const net::PeerIdentity& peer, std::string_view reason) {
        if (auto core = weak.lock()) core->on_close(peer, reason, -1);
      }});
}

net::Handlers GroupCore::connected_handlers(int peer) {
  std::weak_ptr<GroupCore> weak = weak_from_this();
  return with_request_limit(net::Handlers{
      [weak, peer](net::Message m, const net::PeerIdentity& from) {
        auto core = weak.lock();
        TRIB_CHECK(core != nullptr, Unavailable, "this group has been closed");
        return core->handle(std::move(m), from, peer);
      },
      [weak, peer](const net::PeerIdentity& who, std::string_view reason) {
        if (auto core = weak.lock()) core->on_close(who, reason, peer);
      }});
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

net::Message GroupCore::handle_hello(const Request& hello, const net::PeerIdentity& from) {
  // The listener's connections looked at below, released after mu_ (declared before the
  // lock): one that ended meanwhile may be released here for the last time, and its
  // destructor joins a thread whose close handler waits for mu_.
  std::vector<std::vector<std::shared_ptr<net::Connection>>> listed;
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
    listed.push_back(listener_->connections());
    for (auto& c : listed.back()) {
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

}  // namespace trib::collectives::detail
