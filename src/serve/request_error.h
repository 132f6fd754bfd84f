// A request the server refuses: an HTTP status (4xx) and one line naming the problem, which
// becomes the response's {"error": ...}. Thrown by the codecs, caught by the handler; the
// server goes on.
#pragma once

#include <stdexcept>
#include <string>

namespace trib::serve {

class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace trib::serve
