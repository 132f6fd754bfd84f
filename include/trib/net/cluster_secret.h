// The shared cluster secret from which every connection's authentication and session keys
// are derived. An explicit value, loaded where the caller says, never read from a global.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trib::net {

class ClusterSecret {
 public:
  // Fewer bytes than this would make the HMAC proofs guessable.
  static constexpr std::size_t kMinBytes = 16;
  static constexpr std::size_t kGeneratedBytes = 32;

  // The file holds the secret as hex text (surrounding whitespace ignored). Throws NotFound
  // if it cannot be read, InvalidArgument (naming the file) if it is not hex or too short.
  static ClusterSecret from_file(const std::filesystem::path& path);
  // The environment variable the caller names holds the hex secret.
  static ClusterSecret from_env(const std::string& variable);
  static ClusterSecret from_hex(std::string_view hex, std::string_view source = "hex secret");
  // 32 random bytes from OpenSSL's CSPRNG: for a local cluster whose processes share it
  // through to_hex() (a file or an environment variable the launcher sets).
  static ClusterSecret generate();

  ClusterSecret(const ClusterSecret&) = default;
  ClusterSecret(ClusterSecret&&) = default;
  ClusterSecret& operator=(const ClusterSecret&) = default;
  ClusterSecret& operator=(ClusterSecret&&) = default;
  ~ClusterSecret();  // wipes the bytes

  std::string to_hex() const;
  std::span<const std::byte> bytes() const { return bytes_; }
  // Constant-time comparison.
  bool operator==(const ClusterSecret& other) const;

 private:
  explicit ClusterSecret(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::vector<std::byte> bytes_;
};

}  // namespace trib::net
