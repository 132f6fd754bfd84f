#include "cluster/etcd_lease.h"

#include "cluster/etcd_http.h"
#include "trib/core/error.h"

namespace trib::cluster::etcd {

using Clock = std::chrono::steady_clock;

Lease::Lease(std::shared_ptr<Http> http, std::chrono::milliseconds ttl, std::string what)
    : http_(std::move(http)),
      ttl_(std::max<std::int64_t>(1, (ttl.count() + 999) / 1000)),
      what_(std::move(what)) {
  nlohmann::json r = http_->post("/v3/lease/grant", {{"TTL", std::to_string(ttl_.count())}},
                                 fmt::format("granting a {} s lease for {}", ttl_.count(), what_), http_->deadline());
  id_ = int_field(r, "ID");
  TRIB_CHECK(id_ != 0 && int_field(r, "TTL") > 0, Unavailable, "etcd: granting a lease for {} failed: {}", what_,
             r.dump().substr(0, 200));
}

Lease::~Lease() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  revoke();
}

void Lease::keep_alive() {
  if (!thread_.joinable()) thread_ = std::thread([this] { renew_loop(); });
}

void Lease::revoke() {
  if (!alive_.exchange(false)) return;
  try {
    http_->post("/v3/lease/revoke", {{"ID", std::to_string(id_)}}, fmt::format("revoking the lease of {}", what_),
                Clock::now() + std::min(http_->options().operation_timeout, std::chrono::milliseconds(2000)));
  } catch (const Error&) {
    // Unreachable, or already gone: either way the lease ends by its TTL at the latest.
  }
}

void Lease::renew_loop() {
  auto confirmed = Clock::now();  // etcd's TTL runs from its last renewal
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3;
  // A leader etcd elects extends every lease it takes over by its TTL, so renewals that fail
  // while the members elect one (a lost leader) have not lost the lease: they go on for one
  // more TTL before this member counts itself gone. An answer that the lease is gone ends it
  // at once (a frozen member's first renewal on waking). CI lost a member so once, the
  // election under load outlasting the 2 s TTL (EtcdRegistryTest.LosingTheLeader...).
  const auto silence_limit = 2 * ttl_;
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [&] { return stop_; });
    if (stop_) return;
    lock.unlock();
    auto sent = Clock::now();
    try {
      // All tries together get what is left of the silence limit, and each member a third of
      // the TTL, so that a frozen member cannot use it all up.
      nlohmann::json r = http_->post("/v3/lease/keepalive", {{"ID", std::to_string(id_)}},
                                     fmt::format("keeping the lease of {} alive", what_), confirmed + silence_limit,
                                     std::min(period, http_->options().attempt_timeout));
      // A lease etcd no longer has comes back with no TTL.
      if (int_field(r.value("result", nlohmann::json::object()), "TTL") <= 0) {
        alive_ = false;
        return;
      }
      confirmed = sent;
    } catch (const Error&) {
      if (Clock::now() >= confirmed + silence_limit) {
        alive_ = false;
        return;
      }
    }
    lock.lock();
  }
}

}  // namespace trib::cluster::etcd
