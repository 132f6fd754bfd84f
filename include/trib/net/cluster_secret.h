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
  // if it cannot be read, InvalidArgument (naming the file) if it is not hex or too short,
  // and Unauthenticated if anyone but its owner may read it (group or world permission
  // bits) or if it is owned by another user than this process's (root excepted: a mounted
  // Kubernetes secret is root's, and root can read anything anyway).
  static ClusterSecret from_file(const std::filesystem::path& path);
  // The environment variable the caller names holds the hex secret.
  static ClusterSecret from_env(const std::string& variable);
  // Reads the hex secret from an open file descriptor to its end (a pipe, or a file the
  // launcher opened: `trib worker --secret-fd 3 3<secret`); a regular file must pass the
  // same checks as from_file. The descriptor is closed.
  static ClusterSecret from_fd(int fd);
  // Generates a secret and writes it as hex to a new file, created with
  // O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, so that no one else can read it at any moment
  // and no planted file or link is followed. Throws IoError if `path` already exists.
  static ClusterSecret create_file(const std::filesystem::path& path);
  // from_file if `path` exists, else create_file; `created` says which.
  static ClusterSecret load_or_create(const std::filesystem::path& path, bool& created);
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

// Where a process takes its secret from: the first of these that is set.
struct SecretSource {
  int fd = -1;                 // --secret-fd
  std::string file;            // --secret-file
  std::string env_variable;    // e.g. TRIB_CLUSTER_SECRET, set by a launcher or Kubernetes
};
// Throws InvalidArgument naming every option when none is set.
ClusterSecret load_secret(const SecretSource& source);

}  // namespace trib::net
