#include "serve/bearer_auth.h"

#include <arpa/inet.h>

#include "trib/core/error.h"

namespace trib::serve {

bool is_loopback(std::string_view host) {
  const std::string h(host);
  if (h == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::optional<std::string> BearerAuth::refusal(std::string_view authorization) const {
  if (!token_) return std::nullopt;
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.empty()) return "this server needs \"Authorization: Bearer <token>\"";
  if (authorization.substr(0, kScheme.size()) != kScheme)
    return "the Authorization header is not \"Bearer <token>\"";
  try {
    if (net::ClusterSecret::from_hex(authorization.substr(kScheme.size()), "bearer token") == *token_)
      return std::nullopt;
  } catch (const Error&) {
    // Not hex, or too short to be any token: refused like a wrong one.
  }
  return "the bearer token is not this server's";
}

}  // namespace trib::serve
