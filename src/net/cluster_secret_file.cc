// The cluster secret's files and descriptors: created private from the first byte, and
// refused when anyone else could have read or planted them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "trib/core/error.h"
#include "trib/net/cluster_secret.h"

namespace trib::net {
namespace {

// Longer than any hex secret anyone writes; bounds what a wrong descriptor makes us read.
constexpr std::size_t kMaxSecretText = 4096;

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void check_private(const struct stat& st, const std::string& what) {
  if (!S_ISREG(st.st_mode)) return;  // pipes and sockets: only their creator holds them
  TRIB_CHECK((st.st_mode & (S_IRWXG | S_IRWXO)) == 0, Unauthenticated,
             "{} has mode {:04o}: others may read it; a cluster secret must be private "
             "(chmod 600)",
             what, st.st_mode & 07777);
  TRIB_CHECK(st.st_uid == ::geteuid() || st.st_uid == 0, Unauthenticated,
             "{} is owned by uid {}, not by this user (uid {}): another user could have "
             "written it",
             what, st.st_uid, ::geteuid());
}

std::string read_all(int fd, const std::string& what) {
  std::string text;
  char buffer[512];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    TRIB_CHECK(n >= 0, IoError, "cannot read {}: {}", what, std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    TRIB_CHECK(text.size() <= kMaxSecretText, InvalidArgument,
               "{} holds more than {} bytes: not a hex cluster secret", what, kMaxSecretText);
  }
  OPENSSL_cleanse(buffer, sizeof buffer);
  return text;
}

ClusterSecret parse_and_wipe(std::string& text, const std::string& what) {
  try {
    ClusterSecret secret = ClusterSecret::from_hex(text, what);
    OPENSSL_cleanse(text.data(), text.size());
    return secret;
  } catch (...) {
    OPENSSL_cleanse(text.data(), text.size());
    throw;
  }
}

}  // namespace

ClusterSecret ClusterSecret::from_file(const std::filesystem::path& path) {
  std::string what = fmt::format("cluster secret file {}", path.string());
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  TRIB_CHECK(f.fd >= 0, NotFound, "cannot read cluster secret file {}: {}", path.string(),
             std::strerror(errno));
  struct stat st {};
  TRIB_CHECK(::fstat(f.fd, &st) == 0, IoError, "cannot stat {}: {}", what, std::strerror(errno));
  TRIB_CHECK(S_ISREG(st.st_mode), InvalidArgument, "{} is not a regular file", what);
  check_private(st, what);
  std::string text = read_all(f.fd, what);
  return parse_and_wipe(text, what);
}

ClusterSecret ClusterSecret::from_fd(int fd) {
  std::string what = fmt::format("cluster secret descriptor {}", fd);
  TRIB_CHECK(fd >= 0, InvalidArgument, "--secret-fd {} is not a file descriptor", fd);
  Fd f{fd};
  struct stat st {};
  TRIB_CHECK(::fstat(fd, &st) == 0, InvalidArgument, "{} is not open: {}", what,
             std::strerror(errno));
  check_private(st, what);
  std::string text = read_all(fd, what);
  return parse_and_wipe(text, what);
}

ClusterSecret ClusterSecret::create_file(const std::filesystem::path& path) {
  // Mode 0600 from the first byte: never a moment in which another user could open it.
  Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  if (f.fd < 0) {
    int error = errno;
    throw IoError(fmt::format("cannot create cluster secret file {}: {}", path.string(),
                              error == EEXIST ? "it already exists" : std::strerror(error)));
  }
  ClusterSecret secret = generate();
  std::string text = secret.to_hex() + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(f.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = errno;
      OPENSSL_cleanse(text.data(), text.size());
      ::unlink(path.c_str());
      throw IoError(fmt::format("cannot write cluster secret file {}: {}", path.string(),
                                std::strerror(error)));
    }
    done += static_cast<std::size_t>(n);
  }
  OPENSSL_cleanse(text.data(), text.size());
  TRIB_CHECK(::fsync(f.fd) == 0, IoError, "cannot sync cluster secret file {}: {}",
             path.string(), std::strerror(errno));
  return secret;
}

ClusterSecret ClusterSecret::load_or_create(const std::filesystem::path& path, bool& created) {
  // The O_EXCL creation is what decides; the look first only spares a misleading error.
  created = false;
  std::error_code ec;
  if (std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::not_found) {
    try {
      ClusterSecret secret = create_file(path);
      created = true;
      return secret;
    } catch (const IoError&) {
      // Created by someone else meanwhile: from_file checks whose it is.
      if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) throw;
    }
  }
  return from_file(path);
}

ClusterSecret load_secret(const SecretSource& source) {
  if (source.fd >= 0) return ClusterSecret::from_fd(source.fd);
  if (!source.file.empty()) return ClusterSecret::from_file(source.file);
  if (!source.env_variable.empty() && std::getenv(source.env_variable.c_str()) != nullptr) {
    return ClusterSecret::from_env(source.env_variable);
  }
  throw InvalidArgument(fmt::format(
      "no cluster secret: pass --secret-file FILE (hex, mode 600), --secret-fd N, or set {}",
      source.env_variable.empty() ? std::string("the secret's environment variable")
                                  : source.env_variable));
}

}  // namespace trib::net
