#include "net/pending_requests.h"

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::net {

PendingRequests::Started PendingRequests::add(Clock::time_point deadline, Tensor reply_into) {
  std::lock_guard lock(mu_);
  TRIB_CHECK(!closed_reason_, Unavailable, "{}", *closed_reason_);
  std::uint64_t tag = next_tag_++;
  Entry& e = entries_[tag];
  e.deadline = deadline;
  e.reply_into = std::move(reply_into);
  by_deadline_.emplace(deadline, tag);
  return {tag, e.promise.get_future()};
}

Tensor PendingRequests::claim_reply_destination(std::uint64_t tag) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(tag);
  if (it == entries_.end() || !it->second.reply_into.defined()) return Tensor();
  by_deadline_.erase({it->second.deadline, tag});
  return it->second.reply_into;
}

std::optional<PendingRequests::Entry> PendingRequests::take(std::uint64_t tag) {
  auto it = entries_.find(tag);
  if (it == entries_.end()) return std::nullopt;
  Entry e = std::move(it->second);
  entries_.erase(it);
  by_deadline_.erase({e.deadline, tag});
  return e;
}

bool PendingRequests::complete(std::uint64_t tag, Message reply) {
  std::optional<Entry> e;
  {
    std::lock_guard lock(mu_);
    e = take(tag);
  }
  if (!e) return false;
  const Tensor& into = e->reply_into;
  if (into.defined() && reply.tensor.defined() && !reply.tensor.shares_storage(into)) {
    e->promise.set_exception(std::make_exception_ptr(InvalidArgument(fmt::format(
        "reply tensor {} does not fit reply_into {}", reply.tensor.spec_string(),
        into.spec_string()))));
    return true;
  }
  e->promise.set_value(std::move(reply));
  return true;
}

bool PendingRequests::fail(std::uint64_t tag, std::exception_ptr error) {
  std::optional<Entry> e;
  {
    std::lock_guard lock(mu_);
    e = take(tag);
  }
  if (!e) return false;
  e->promise.set_exception(error);
  return true;
}

void PendingRequests::expire(Clock::time_point now, const std::string& peer,
                             std::atomic<std::uint64_t>& expired_count) {
  std::vector<std::pair<std::uint64_t, Entry>> expired;
  {
    std::lock_guard lock(mu_);
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      std::uint64_t tag = by_deadline_.begin()->second;
      expired.emplace_back(tag, *take(tag));
    }
  }
  expired_count += expired.size();
  for (auto& [tag, e] : expired) {
    e.promise.set_exception(std::make_exception_ptr(
        Timeout(fmt::format("request (tag {}) to {} got no reply before its deadline", tag, peer))));
  }
}

std::optional<PendingRequests::Clock::time_point> PendingRequests::next_deadline() const {
  std::lock_guard lock(mu_);
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

void PendingRequests::close(const std::string& reason) {
  std::unordered_map<std::uint64_t, Entry> failed;
  {
    std::lock_guard lock(mu_);
    if (!closed_reason_) closed_reason_ = reason;
    failed.swap(entries_);
    by_deadline_.clear();
  }
  for (auto& [tag, e] : failed) {
    e.promise.set_exception(std::make_exception_ptr(Unavailable(reason)));
  }
}

std::size_t PendingRequests::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace trib::net
