#include "trib/net/net_options.h"

namespace trib::net {

std::string_view mac_algorithm_name(MacAlgorithm mac) {
  switch (mac) {
    case MacAlgorithm::poly1305: return "poly1305";
    case MacAlgorithm::gmac_aes256: return "gmac-aes256";
    case MacAlgorithm::hmac_sha256: return "hmac-sha256";
  }
  return "unknown";
}

bool is_valid_mac_algorithm(std::uint8_t raw) { return raw >= 1 && raw <= 3; }

}  // namespace trib::net
