#include "app/backup_attach.h"

#include "trib/core/error.h"

namespace trib::app {

using namespace std::chrono_literals;

BackupAttach::BackupAttach(cluster::Member& member, std::shared_ptr<net::Transport> transport,
                           std::function<std::string(int shard)> key)
    : member_(&member), transport_(std::move(transport)), key_(std::move(key)) {}

BackupAttach::~BackupAttach() { stop(); }

void BackupAttach::add(Shard shard) { shards_.push_back(std::move(shard)); }

void BackupAttach::start() {
  if (!shards_.empty()) thread_ = std::thread([this] { run(); });
}

void BackupAttach::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackupAttach::run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, 250ms, [&] { return stop_; })) {
    lock.unlock();
    for (const Shard& s : shards_) {
      try {
        look(s);
      } catch (const Error&) {
        // The coordinator away, or the member closing: look again next time.
      }
    }
    lock.lock();
  }
}

void BackupAttach::look(const Shard& s) {
  if (!s.serving() || s.link->has_backup() || s.link->fenced()) return;
  const std::optional<std::string> address = member_->store().try_get(key_(s.shard));
  if (!address || address->empty() || *address == s.own_address || *address == s.link->address()) return;
  std::shared_ptr<net::Connection> c = transport_->connect(*address);
  s.server->send_state([&](const net::Message& snapshot) { return s.link->attach({c, *address}, snapshot); });
}

}  // namespace trib::app
