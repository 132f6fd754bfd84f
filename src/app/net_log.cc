#include "app/net_log.h"

namespace trib::app {

net::LogSink net_log_sink(const Log& log) {
  // info, not warn: most of what the transport reports (a peer that closed its connection)
  // is the ordinary end of a job; the counters in NetStats say whether anything was refused.
  return [net = log.named("trib.net")](std::string_view line) { net.info("{}", escape_for_log(line)); };
}

}  // namespace trib::app
