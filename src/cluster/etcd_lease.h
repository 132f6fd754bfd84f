// One etcd lease, kept alive from a thread until it is destroyed (then revoked, so that the
// keys it holds vanish at once) or until etcd says it has expired.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace trib::cluster::etcd {

class Http;

class Lease {
 public:
  // Grants a lease of `ttl` (rounded up to whole seconds); `what` names it in errors.
  Lease(std::shared_ptr<Http> http, std::chrono::milliseconds ttl, std::string what);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  std::int64_t id() const { return id_; }
  // False once etcd no longer has the lease (expired or revoked by someone else), or once
  // no member has confirmed it for a whole TTL.
  bool alive() const { return alive_; }
  // Starts renewing every third of the TTL.
  void keep_alive();
  // Revokes now (best effort: if etcd cannot be reached, the TTL does it).
  void revoke();

 private:
  void renew_loop();

  std::shared_ptr<Http> http_;
  std::chrono::seconds ttl_;
  std::string what_;
  std::int64_t id_ = 0;
  std::atomic<bool> alive_{true};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trib::cluster::etcd
