#include "trib/net/cluster_secret.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstdlib>

#include "trib/core/error.h"

namespace trib::net {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trim(std::string_view s) {
  const char* space = " \t\r\n";
  auto begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

}  // namespace

ClusterSecret ClusterSecret::from_hex(std::string_view hex, std::string_view source) {
  hex = trim(hex);
  TRIB_CHECK(hex.size() % 2 == 0, InvalidArgument,
             "{} has an odd number of hex digits ({})", source, hex.size());
  std::vector<std::byte> bytes(hex.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    TRIB_CHECK(hi >= 0 && lo >= 0, InvalidArgument,
               "{} is not hex: unexpected character at offset {}", source,
               2 * i + (hi < 0 ? 0 : 1));
    bytes[i] = static_cast<std::byte>(hi * 16 + lo);
  }
  TRIB_CHECK(bytes.size() >= kMinBytes, InvalidArgument,
             "{} holds {} bytes; a cluster secret needs at least {}", source, bytes.size(),
             kMinBytes);
  return ClusterSecret(std::move(bytes));
}

ClusterSecret ClusterSecret::from_env(const std::string& variable) {
  const char* value = std::getenv(variable.c_str());
  TRIB_CHECK(value != nullptr, NotFound, "environment variable {} (cluster secret) is not set",
             variable);
  return from_hex(value, fmt::format("environment variable {}", variable));
}

ClusterSecret ClusterSecret::generate() {
  std::vector<std::byte> bytes(kGeneratedBytes);
  TRIB_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()),
                       static_cast<int>(bytes.size())) == 1,
             Error, "OpenSSL RAND_bytes failed to generate a cluster secret");
  return ClusterSecret(std::move(bytes));
}

ClusterSecret::~ClusterSecret() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

std::string ClusterSecret::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes_.size() * 2);
  for (std::byte b : bytes_) {
    hex.push_back(kDigits[std::to_integer<int>(b) >> 4]);
    hex.push_back(kDigits[std::to_integer<int>(b) & 15]);
  }
  return hex;
}

bool ClusterSecret::operator==(const ClusterSecret& other) const {
  return bytes_.size() == other.bytes_.size() &&
         CRYPTO_memcmp(bytes_.data(), other.bytes_.data(), bytes_.size()) == 0;
}

}  // namespace trib::net
