#include "cluster/roster_publisher.h"

namespace trib::cluster {

RosterPublisher::RosterPublisher(Connections connections, std::uint32_t method)
    : connections_(std::move(connections)), method_(method), thread_([this] { run(); }) {}

RosterPublisher::~RosterPublisher() { stop(); }

void RosterPublisher::publish(std::string roster) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(roster);
    ++published_;
  }
  cv_.notify_all();
}

void RosterPublisher::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = published_;
  cv_.wait(lock, [&] { return stop_ || pushed_ >= target; });
}

void RosterPublisher::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RosterPublisher::run() {
  for (;;) {
    std::string roster;
    std::uint64_t upto = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || pending_.has_value(); });
      if (stop_) return;
      roster = std::move(*pending_);
      pending_.reset();
      upto = published_;
    }
    {
      // Destroyed at the end of this block, outside every lock: a connection that ended
      // meanwhile may be released here for the last time (its destructor joins its threads).
      std::vector<std::shared_ptr<net::Connection>> open = connections_();
      for (const auto& c : open) {
        try {
          c->notify(net::Message{method_, roster, Tensor()});
        } catch (const std::exception&) {
          // Gone: its own close is a change of its own.
        }
      }
    }
    {
      std::lock_guard lock(mu_);
      pushed_ = upto;
    }
    cv_.notify_all();
  }
}

}  // namespace trib::cluster
