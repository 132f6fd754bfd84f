#include "trib/core/error.h"
#include "trib/monitor/metrics_server.h"

namespace trib::monitor {

int role_port(int base, const std::string& role, int index, int ps) {
  int port = -1;
  if (role == "coordinator") port = base;
  else if (role == "ps") port = base + 1 + index;
  else if (role == "worker") port = base + 1 + ps + index;
  TRIB_CHECK(port >= 0, InvalidArgument, "no monitoring port for role '{}': expected coordinator, ps or worker", role);
  TRIB_CHECK(port <= 65535, InvalidArgument,
             "monitoring.port {} leaves no port for {} {} ({} is beyond 65535): choose a lower base port", base, role,
             index, port);
  return port;
}

}  // namespace trib::monitor
