#include "trib/data/prefetcher.h"

#include "trib/core/error.h"

namespace trib::data {

Prefetcher::Prefetcher(std::unique_ptr<BatchStream> upstream, int depth)
    : upstream_(std::move(upstream)), depth_(static_cast<std::size_t>(depth)) {
  TRIB_CHECK(upstream_ != nullptr, InvalidArgument, "Prefetcher needs an upstream, got null");
  TRIB_CHECK(depth >= 1, InvalidArgument, "prefetch depth {} < 1", depth);
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mu_);
    interrupted_ = true;
  }
  // The producer may be blocked inside upstream (a stream waiting for data), not only on our
  // queue; interrupting upstream lets it return so that the join below cannot hang.
  if (producer_.joinable()) upstream_->interrupt();
  stop();
}

void Prefetcher::start() {
  delivered_ = upstream_->position();
  producer_ = std::thread([this] { produce(); });
}

void Prefetcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  not_full_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard lock(mu_);
  stopping_ = false;
  queue_.clear();
}

void Prefetcher::produce() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      not_full_.wait(lock, [this] { return stopping_ || interrupted_ || queue_.size() < depth_; });
      if (stopping_ || interrupted_) return;
    }
    Item item;
    try {
      item.batch = upstream_->next();
      item.after = upstream_->position();
    } catch (...) {
      item.error = std::current_exception();
    }
    const bool failed = item.error != nullptr;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(item));
    }
    not_empty_.notify_one();
    if (failed) return;  // a broken stream produces nothing more
  }
}

std::optional<Batch> Prefetcher::next() {
  if (error_) std::rethrow_exception(error_);
  if (!producer_.joinable()) start();
  Item item;
  {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [this] { return !queue_.empty() || interrupted_; });
    if (queue_.empty()) return std::nullopt;  // interrupted
    item = std::move(queue_.front());
    queue_.pop_front();
  }
  not_full_.notify_one();
  if (item.error) {
    error_ = item.error;
    std::rethrow_exception(error_);
  }
  delivered_ = std::move(item.after);
  return std::move(item.batch);
}

DataPosition Prefetcher::position() const {
  return producer_.joinable() ? delivered_ : upstream_->position();
}

void Prefetcher::seek(const DataPosition& position) {
  stop();  // the producer must not touch upstream while it moves
  error_ = nullptr;
  upstream_->seek(position);
}

void Prefetcher::interrupt() {
  {
    std::lock_guard lock(mu_);
    interrupted_ = true;
  }
  not_full_.notify_all();
  not_empty_.notify_all();
  upstream_->interrupt();
}

}  // namespace trib::data
