// Who may ask for predictions. A server bound beyond loopback requires
// "Authorization: Bearer <token>" on every request; the token is a cluster secret
// (net/cluster_secret.h): hex, at least 16 bytes, read from a mode-600 file (--token-file,
// created when missing) or from $TRIB_SERVE_TOKEN, and compared in constant time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trib/net/cluster_secret.h"

namespace trib::serve {

// 127.0.0.0/8, ::1 and "localhost": the addresses only this host can reach.
bool is_loopback(std::string_view host);

class BearerAuth {
 public:
  // nullopt: every request is let through (a loopback server without a token).
  explicit BearerAuth(std::optional<net::ClusterSecret> token) : token_(std::move(token)) {}
  bool required() const { return token_.has_value(); }
  // Why a request with this Authorization header (empty when absent) is refused, or nullopt.
  std::optional<std::string> refusal(std::string_view authorization) const;

 private:
  std::optional<net::ClusterSecret> token_;
};

}  // namespace trib::serve
