#include "trib/net/net_context.h"

#include <fmt/format.h>

#include <cstdio>

#include "net/untrusted_log.h"
#include "trib/core/error.h"

namespace trib::net {

NetStatsSnapshot NetStats::snapshot() const {
  NetStatsSnapshot s;
  s.connections_opened = connections_opened.load();
  s.connections_closed = connections_closed.load();
  s.handshake_failures = handshake_failures.load();
  s.auth_failures = auth_failures.load();
  s.mac_failures = mac_failures.load();
  s.sequence_failures = sequence_failures.load();
  s.malformed_frames = malformed_frames.load();
  s.peer_timeouts = peer_timeouts.load();
  s.requests_timed_out = requests_timed_out.load();
  s.frames_sent = frames_sent.load();
  s.frames_received = frames_received.load();
  s.bytes_sent = bytes_sent.load();
  s.bytes_received = bytes_received.load();
  return s;
}

LogSink stderr_log_sink() {
  return [](std::string_view line) { fmt::print(stderr, "[trib.net] {}\n", line); };
}

NetContext::NetContext(ClusterSecret secret, PeerIdentity self, NetOptions options, LogSink log)
    : secret_(std::move(secret)), self_(std::move(self)), options_(std::move(options)),
      log_(std::move(log)),
      untrusted_log_(std::make_unique<UntrustedLog>(log_, options_.untrusted_log_interval)) {
  validate_role(self_.role);
  TRIB_CHECK(options_.max_frame_bytes > 0, InvalidArgument, "max_frame_bytes must be positive");
  TRIB_CHECK(options_.heartbeat_interval.count() > 0 &&
                 options_.heartbeat_interval < options_.peer_timeout,
             InvalidArgument,
             "heartbeat_interval ({} ms) must be positive and below peer_timeout ({} ms)",
             options_.heartbeat_interval.count(), options_.peer_timeout.count());
  TRIB_CHECK(options_.connect_timeout.count() > 0 && options_.handshake_timeout.count() > 0 &&
                 options_.request_timeout.count() > 0,
             InvalidArgument, "connect, handshake and request timeouts must be positive");
}

std::shared_ptr<NetContext> NetContext::create(ClusterSecret secret, PeerIdentity self,
                                               NetOptions options, LogSink log) {
  return std::make_shared<NetContext>(std::move(secret), std::move(self), std::move(options),
                                      std::move(log));
}

NetContext::~NetContext() = default;

void NetContext::log(std::string_view line) const {
  if (log_) log_(printable(line));
}

void NetContext::log_untrusted(std::string_view kind, std::string_view line) const {
  untrusted_log_->report(kind, line);
}

void NetContext::flush_untrusted_log() const { untrusted_log_->flush(); }

}  // namespace trib::net
