// The explicit context every transport is built from: who we are, the cluster secret, the
// options and the counters. One per node; several can live in one process (tests run many
// ranks as threads), which is why nothing here is global.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "trib/net/cluster_secret.h"
#include "trib/net/net_options.h"
#include "trib/net/net_stats.h"
#include "trib/net/peer_identity.h"

namespace trib::net {

// Receives one line per notable event (a rejected frame, a lost peer), without a newline.
using LogSink = std::function<void(std::string_view line)>;

// Writes "[trib.net] LINE" to stderr.
LogSink stderr_log_sink();

class UntrustedLog;

class NetContext {
 public:
  // `self` names this node in handshakes (role and index; its address is not used).
  static std::shared_ptr<NetContext> create(ClusterSecret secret, PeerIdentity self,
                                            NetOptions options = {},
                                            LogSink log = stderr_log_sink());

  const ClusterSecret& secret() const { return secret_; }
  const PeerIdentity& self() const { return self_; }
  const NetOptions& options() const { return options_; }
  NetStats& stats() const { return stats_; }
  // Writes one line, with any non-printable byte escaped (\xNN).
  void log(std::string_view line) const;
  // A line caused by an untrusted peer (a refused connection, a failed handshake): escaped,
  // and rate-limited to a few per NetOptions::untrusted_log_interval, after which lines are
  // only counted by `kind` and summed up in one line per interval.
  void log_untrusted(std::string_view kind, std::string_view line) const;
  // Writes the summary of an interval that has ended; listeners call it as they poll.
  void flush_untrusted_log() const;

  NetContext(ClusterSecret secret, PeerIdentity self, NetOptions options, LogSink log);
  ~NetContext();

 private:
  ClusterSecret secret_;
  PeerIdentity self_;
  NetOptions options_;
  mutable NetStats stats_;
  LogSink log_;
  std::unique_ptr<UntrustedLog> untrusted_log_;
};

}  // namespace trib::net
