#include "trib/collectives/group.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <thread>

#include "collectives/group_core.h"

namespace trib::collectives {

using detail::Clock;

Endpoint Endpoint::listen(std::shared_ptr<net::Transport> transport, std::string_view address) {
  TRIB_CHECK(transport != nullptr, InvalidArgument, "Endpoint::listen needs a transport");
  Endpoint e;
  e.transport_ = std::move(transport);
  e.core_ = std::make_shared<detail::GroupCore>();
  e.listener_ = e.transport_->listen(address, e.core_->accepted_handlers());
  e.core_->set_listener(e.listener_.get(), e.transport_->context()->self());
  return e;
}

Endpoint::Endpoint(Endpoint&&) noexcept = default;
Endpoint& Endpoint::operator=(Endpoint&&) noexcept = default;
Endpoint::~Endpoint() = default;

std::string Endpoint::address() const { return listener_ ? listener_->address() : std::string(); }

std::unique_ptr<Group> Group::form(std::shared_ptr<net::Transport> transport, GroupOptions options) {
  TRIB_CHECK(options.rank >= 0 && options.rank < static_cast<int>(options.addresses.size()), InvalidArgument,
             "group rank {} has no address among the {} given", options.rank, options.addresses.size());
  Endpoint e = Endpoint::listen(std::move(transport), options.addresses[static_cast<std::size_t>(options.rank)]);
  return form(std::move(e), std::move(options));
}

std::unique_ptr<Group> Group::form(Endpoint endpoint, GroupOptions options) {
  TRIB_CHECK(endpoint.core_ != nullptr, InvalidArgument, "Group::form needs a listening Endpoint");
  TRIB_CHECK(options.size >= 1, InvalidArgument, "a group needs at least one rank, got size {}", options.size);
  TRIB_CHECK(options.rank >= 0 && options.rank < options.size, InvalidArgument,
             "rank {} is outside a group of {} ranks", options.rank, options.size);
  TRIB_CHECK(static_cast<int>(options.addresses.size()) == options.size, InvalidArgument,
             "a group of {} ranks needs {} addresses, got {}", options.size, options.size,
             options.addresses.size());
  TRIB_CHECK(options.segment_bytes >= 64 && options.pipeline_depth >= 1, InvalidArgument,
             "segment_bytes must be at least 64 and pipeline_depth at least 1 (got {} and {})",
             options.segment_bytes, options.pipeline_depth);
  options.addresses[static_cast<std::size_t>(options.rank)] = endpoint.address();
  return std::unique_ptr<Group>(new Group(std::move(endpoint), std::move(options)));
}

Group::Group(Endpoint endpoint, GroupOptions options)
    : options_(std::move(options)), transport_(std::move(endpoint.transport_)),
      core_(std::move(endpoint.core_)), listener_(std::move(endpoint.listener_)) {
  core_->configure(options_);
  try {
    connect_lower_ranks();
    auto missing = core_->wait_for_higher_ranks(Clock::now() + options_.form_timeout);
    TRIB_CHECK(missing.empty(), Timeout, "forming the group: rank(s) {} did not connect to rank {} within {} ms",
               fmt::join(missing, ", "), options_.rank, options_.form_timeout.count());
  } catch (...) {
    core_->shut_down();
    throw;
  }
}

// Every rank connects to the ranks below it, so each pair shares one connection; a peer
// that is not listening yet is retried until the formation deadline.
void Group::connect_lower_ranks() {
  const auto deadline = Clock::now() + options_.form_timeout;
  for (int peer = 0; peer < options_.rank; ++peer) {
    const std::string& address = options_.addresses[static_cast<std::size_t>(peer)];
    std::shared_ptr<net::Connection> conn;
    for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
      try {
        conn = transport_->connect(address, core_->connected_handlers(peer));
        break;
      } catch (const Unavailable& e) {
        TRIB_CHECK(Clock::now() + pause < deadline, Timeout,
                   "forming the group: rank {} could not reach rank {} at {} within {} ms: {}", options_.rank,
                   peer, address, options_.form_timeout.count(), e.what());
        std::this_thread::sleep_for(pause);
      }
    }
    detail::Request hello;
    hello.family = detail::Family::hello;
    hello.from = options_.rank;
    hello.generation = options_.generation;
    hello.param = static_cast<std::uint32_t>(options_.size);
    net::RequestOptions ro;
    ro.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (ro.timeout.count() <= 0) ro.timeout = std::chrono::milliseconds(1);
    try {
      conn->call(net::Message{detail::kCollectiveMethod, detail::encode(hello), Tensor()}, ro);
    } catch (const Error& e) {
      // The peer's refusal comes back as the same error class, naming the disagreement.
      conn->close();
      detail::throw_failure(detail::Failure{detail::failure_kind_of(e), e.what()}, "forming the group");
    }
    core_->add_peer(peer, std::move(conn));
  }
}

Group::~Group() {
  core_->leave(std::chrono::milliseconds(1000));
  core_->shut_down();
  listener_.reset();  // closes the accepted connections and joins their threads
}

std::string Group::describe(int rank) const { return core_->describe(rank); }

bool Group::failed() const { return core_->failure().has_value(); }

void Group::abort(const std::string& reason) {
  core_->fail({detail::FailureKind::unavailable, fmt::format("rank {} aborted: {}", options_.rank, reason)});
}

}  // namespace trib::collectives
