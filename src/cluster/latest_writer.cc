#include "cluster/latest_writer.h"

namespace trib::cluster {

LatestWriter::LatestWriter(std::function<void(const std::string&)> write)
    : write_(std::move(write)), thread_([this] { run(); }) {}

LatestWriter::~LatestWriter() { stop(); }

void LatestWriter::post(std::string value) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(value);
    ++posted_;
  }
  cv_.notify_all();
}

void LatestWriter::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = posted_;
  cv_.wait(lock, [&] { return stop_ || written_ >= target; });
}

void LatestWriter::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LatestWriter::run() {
  for (;;) {
    std::string value;
    std::uint64_t upto = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || pending_.has_value(); });
      if (stop_) return;
      value = std::move(*pending_);
      pending_.reset();
      upto = posted_;
    }
    try {
      write_(value);
    } catch (const std::exception&) {
      // The writer reports its own failures; the next value is tried all the same.
    }
    {
      std::lock_guard lock(mu_);
      written_ = upto;
    }
    cv_.notify_all();
  }
}

}  // namespace trib::cluster
