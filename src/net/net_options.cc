#include "trib/net/net_options.h"

namespace trib::net {

std::string_view mac_algorithm_name(MacAlgorithm mac) {
  switch (mac) {
    case MacAlgorithm::poly1305: return "poly1305";
    case MacAlgorithm::gmac_aes256: return "gmac-aes256";
    case MacAlgorithm::hmac_sha256: return "hmac-sha256";
    case MacAlgorithm::aes256_gcm: return "aes-256-gcm";
  }
  return "unknown";
}

bool is_valid_mac_algorithm(std::uint8_t raw) { return raw >= 1 && raw <= 4; }

bool encrypts(MacAlgorithm mac) { return mac == MacAlgorithm::aes256_gcm; }

MacAlgorithm frame_protection(const NetOptions& options, const ConnectOptions& connect) {
  if (connect.mac) return *connect.mac;
  return options.encryption ? MacAlgorithm::aes256_gcm : options.mac;
}

}  // namespace trib::net
