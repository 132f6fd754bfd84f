#include "trib/ps/backup_link.h"

#include "trib/core/error.h"

namespace trib::ps {

BackupLink::BackupLink(int shard, Dial dial, std::function<void(const std::string&)> log)
    : shard_(shard), dial_(std::move(dial)), log_(std::move(log)) {}

bool BackupLink::has_backup() const {
  std::lock_guard lock(mu_);
  return !given_up_;
}

void BackupLink::forward(const net::Message& frame) {
  std::lock_guard lock(mu_);
  if (given_up_) return;
  try {
    if (!connection_) connection_ = dial_();
    net::Message ack = connection_->call(frame);
    TRIB_CHECK(ack.method == frame.method, InvalidArgument, "the backup answered with method 0x{:x}", ack.method);
  } catch (const Error& e) {
    given_up_ = true;
    if (connection_) connection_->close();
    connection_.reset();
    if (log_)
      log_(fmt::format("ps {}: its backup is lost ({}); the shard goes on without one", shard_, e.what()));
  }
}

}  // namespace trib::ps
