// The table of requests in flight on one connection, keyed by tag. Each entry holds the
// promise the caller waits on, its deadline and where a reply tensor should land. Every
// entry ends exactly once: replied, failed, expired, or failed with the connection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "trib/net/message.h"

namespace trib::net {

class PendingRequests {
 public:
  using Clock = std::chrono::steady_clock;

  struct Started {
    std::uint64_t tag;
    std::future<Message> reply;
  };
  // Registers a request; throws Unavailable with the close reason once closed.
  Started add(Clock::time_point deadline, Tensor reply_into);

  // Where the reply to `tag` should be received (undefined: allocate). A request whose
  // reply is being written into its caller's tensor no longer expires: its caller must not
  // find the deadline passed and reuse the tensor while bytes still land in it. (The reply
  // then completes, or the connection dies within the peer timeout and fails it.)
  Tensor claim_reply_destination(std::uint64_t tag);

  // False when the tag is unknown: a late reply after its deadline, which is dropped.
  bool complete(std::uint64_t tag, Message reply);
  bool fail(std::uint64_t tag, std::exception_ptr error);

  // Fails every request past its deadline with Timeout naming `peer`, after adding their
  // number to `expired_count` (so a caller woken by the failure sees the count).
  void expire(Clock::time_point now, const std::string& peer,
              std::atomic<std::uint64_t>& expired_count);
  std::optional<Clock::time_point> next_deadline() const;

  // Fails everything with Unavailable(reason) and refuses new requests.
  void close(const std::string& reason);
  std::size_t size() const;

 private:
  struct Entry {
    std::promise<Message> promise;
    Clock::time_point deadline;
    Tensor reply_into;
  };
  // Removes and returns the entry, if present; caller holds mu_.
  std::optional<Entry> take(std::uint64_t tag);

  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::set<std::pair<Clock::time_point, std::uint64_t>> by_deadline_;
  std::uint64_t next_tag_ = 1;
  std::optional<std::string> closed_reason_;
};

}  // namespace trib::net
