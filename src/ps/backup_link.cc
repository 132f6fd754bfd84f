#include "trib/ps/backup_link.h"

#include "ps/replica_wire.h"
#include "trib/core/error.h"

namespace trib::ps {

BackupLink::BackupLink(int shard, Dial dial, std::function<void(const std::string&)> log)
    : shard_(shard), dial_(std::move(dial)), log_(std::move(log)), given_up_(!dial_) {}

void BackupLink::set_claim(Claim claim) {
  std::lock_guard lock(mu_);
  claim_ = std::move(claim);
}

bool BackupLink::has_backup() const {
  std::lock_guard lock(mu_);
  return !given_up_ && !fenced_;
}

bool BackupLink::fenced() const {
  std::lock_guard lock(mu_);
  return fenced_;
}

std::string BackupLink::address() const {
  std::lock_guard lock(mu_);
  return address_;
}

void BackupLink::fence_locked(std::int64_t epoch) {
  fenced_ = true;
  if (connection_) connection_->close();
  connection_.reset();
  if (log_)
    log_(fmt::format("ps {}: its backup at {} holds the shard in epoch {} (it took over while this server was cut "
                     "off): this server was replaced, and acknowledges nothing more",
                     shard_, address_, epoch));
}

bool BackupLink::forward(const net::Message& frame, std::int64_t& epoch) {
  std::lock_guard lock(mu_);
  if (fenced_) return false;
  if (given_up_) return true;
  std::string why;
  try {
    if (!connection_) {
      Dialled d = dial_();
      connection_ = std::move(d.connection);
      address_ = std::move(d.address);
    }
    net::Message ack = connection_->call(frame);
    TRIB_CHECK(ack.method == frame.method, InvalidArgument, "the backup answered with method 0x{:x}", ack.method);
    if (std::optional<std::int64_t> newer = replica::decode_refusal(ack.body)) {
      fence_locked(*newer);
      return false;
    }
    return true;
  } catch (const Error& e) {
    why = e.what();
  }
  if (connection_) connection_->close();
  connection_.reset();
  // The backup may have taken over (this primary cut off from the workers and from it), or
  // be gone: only the claim of the next epoch tells, and only its winner goes on.
  bool won = true;
  try {
    if (claim_) won = claim_(epoch + 1);
  } catch (const Error& e) {
    // No coordinator to claim it from (the job is over and this member closing, or it gave up
    // on the coordinator): whether the backup took over cannot be told, so this primary
    // acknowledges nothing more. Never an exception: the caller may be a connection's close.
    fenced_ = true;
    if (log_)
      log_(fmt::format("ps {}: its backup is lost ({}) and the shard's next epoch cannot be claimed ({}): it "
                       "acknowledges nothing more",
                       shard_, why, e.what()));
    return false;
  }
  if (!won) {
    fence_locked(epoch + 1);
    return false;
  }
  if (claim_) ++epoch;
  given_up_ = true;
  if (log_)
    log_(fmt::format("ps {}: its backup is lost ({}); the shard goes on without one (epoch {}) until a new backup "
                     "joins",
                     shard_, why, epoch));
  return true;
}

bool BackupLink::attach(Dialled d, const net::Message& snapshot) {
  std::lock_guard lock(mu_);
  if (fenced_) return false;
  try {
    net::Message ack = d.connection->call(snapshot);
    TRIB_CHECK(ack.method == snapshot.method, InvalidArgument, "the backup answered with method 0x{:x}", ack.method);
    if (std::optional<std::int64_t> newer = replica::decode_refusal(ack.body)) {
      address_ = d.address;
      fence_locked(*newer);
      return false;
    }
  } catch (const Error& e) {
    d.connection->close();
    if (log_) log_(fmt::format("ps {}: a new backup at {} was not reached ({})", shard_, d.address, e.what()));
    return false;
  }
  if (connection_) connection_->close();
  connection_ = std::move(d.connection);
  address_ = std::move(d.address);
  given_up_ = false;
  if (log_) log_(fmt::format("ps {}: a new backup at {} holds a copy of the shard; changes go to it again", shard_, address_));
  return true;
}

}  // namespace trib::ps
