// A NetContext's log sink that writes through a trib::Log, under the name "trib.net". What
// the transport reports can carry a peer's words (its role, an error text): escaped here too.
#pragma once

#include "trib/core/log.h"
#include "trib/net/net_context.h"

namespace trib::app {

net::LogSink net_log_sink(const Log& log);

}  // namespace trib::app
