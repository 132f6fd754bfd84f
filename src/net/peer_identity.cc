#include "trib/net/peer_identity.h"

#include <fmt/format.h>

#include "net/untrusted_log.h"
#include "trib/core/error.h"

namespace trib::net {

std::string PeerIdentity::to_string() const {
  if (role.empty()) return fmt::format("peer at {}", address);
  if (index < 0) return fmt::format("{} at {}", role, address);  // joining: no index assigned yet
  return fmt::format("{} {} at {}", role, index, address);
}

void validate_role(const std::string& role) {
  bool ok = !role.empty() && role.size() <= 32;
  for (char c : role) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  }
  TRIB_CHECK(ok, InvalidArgument,
             "role '{}' is not 1 to 32 characters of lower-case letters, digits, '_' or '-'",
             printable(role.substr(0, 64)));  // may come from an unauthenticated hello
}

}  // namespace trib::net
