// Carries a request handler's exception back to the requester as the same trib error
// class: error_response frames put one of these codes in the header's method field.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace trib::net {

enum class RemoteErrorCode : std::uint32_t {
  error = 0,  // anything not listed below
  invalid_argument = 1,
  shape_error = 2,
  not_found = 3,
  io_error = 4,
  corruption = 5,
  timeout = 6,
  unavailable = 7,
  unauthenticated = 8,
};

// The code for the exception `error` (most derived trib class first).
RemoteErrorCode remote_error_code(std::exception_ptr error);

// An exception of the class `code` names (unknown codes give trib::Error).
std::exception_ptr make_remote_error(std::uint32_t code, const std::string& message);

}  // namespace trib::net
