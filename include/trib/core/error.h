// Error types. Every message names the offending thing (node, key, file, rank) and what was
// expected, in one line, so that a user can act on it without reading the code.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace trib {

// Base of all Tributary errors. The source location is kept for logs and debugging; what()
// stays the user-facing one-line message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message,
                 std::source_location where = std::source_location::current())
      : std::runtime_error(message), where_(where) {}
  const std::source_location& where() const noexcept { return where_; }

 private:
  std::source_location where_;
};

// A caller passed something that does not fit: a bad option, a wrong shape, an unknown key.
class InvalidArgument : public Error {
  using Error::Error;
};
// Shapes or dtypes of connected graph nodes disagree.
class ShapeError : public InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// A file, key or node that was asked for does not exist.
class NotFound : public Error {
  using Error::Error;
};
// Reading or writing a file or socket failed.
class IoError : public Error {
  using Error::Error;
};
// Stored or received bytes fail validation (checksum, magic, bounds).
class Corruption : public Error {
  using Error::Error;
};
// A wait passed its deadline.
class Timeout : public Error {
  using Error::Error;
};
// A peer is unreachable, dead, or refused us.
class Unavailable : public Error {
  using Error::Error;
};
// A peer failed authentication.
class Unauthenticated : public Error {
  using Error::Error;
};

}  // namespace trib

// Throws ExceptionType with a fmt-formatted message when cond is false. The message is only
// formatted on failure, so checks are cheap on hot paths.
#define TRIB_CHECK(cond, ExceptionType, ...)                  \
  do {                                                        \
    if (!(cond)) [[unlikely]] {                               \
      throw ExceptionType(fmt::format(__VA_ARGS__));          \
    }                                                         \
  } while (0)
